//! The engine contract, written once: [`Scheduler`] is what the harness calls on every core;
//! [`HandOff`] is the part only disaggregated serving uses; [`RankSetup`] says where a core
//! runs. The data a pass hands back is in `output.rs`.

use crate::kv::KvEvent;
use crate::kv::offload::Tiers;
use crate::metrics::RankMetrics;
use crate::perf::interpolated::Profile;
use crate::sched::output::{Finished, PassOutput, Reservation};
use crate::sequence::Request;
use std::sync::Arc;

/// One engine core (a data-parallel rank): a deterministic scheduler over its KV pool.
pub trait Scheduler: HandOff + std::fmt::Debug {
    /// Queues a request.
    fn submit(&mut self, req: Request);

    /// Computes one forward pass: what it schedules, emits and frees, and how long it takes.
    fn step(&mut self) -> &PassOutput;

    /// `step`, its output handed over in `out` (whose previous contents are dropped): a core
    /// that owns a boxed output swaps the two boxes instead of copying every vector.
    fn step_into(&mut self, out: &mut Box<PassOutput>) {
        (**out).clone_from(self.step());
    }

    /// Whether a pass now would do anything (a prefill rank waiting for held KV to be
    /// released has requests in flight but no work).
    fn has_work(&self) -> bool;

    /// Requests held (waiting or running).
    fn in_flight(&self) -> usize;

    /// Whether the core has requests but waits for a release or an activation before it can
    /// do anything with them.
    fn stalled(&self) -> bool {
        !self.has_work() && self.in_flight() > 0
    }

    /// Blocks (pages) a new allocation could take now, evicting cached ones if need be.
    fn available_blocks(&self) -> u32;

    /// Ends every request still held, as unschedulable for `reason` (the harness's guard
    /// against a rank that stopped making progress).
    fn abandon(&mut self, reason: &str) -> Vec<Finished>;

    fn metrics(&self) -> RankMetrics;

    /// KV events raised between passes (an SGLang prefill worker caching a prompt it was told
    /// to release), moved into `into`: the reference publishes a scheduler command's events
    /// at once, not with the next pass.
    fn take_idle_kv_events(&mut self, into: &mut Vec<KvEvent>);

    /// Checks internal invariants (blocks balance); for tests and debug builds.
    fn check(&self) -> Result<(), String>;

    /// Every cache-visible block hash, sorted: what a router's indexer fed by this rank's KV
    /// events should hold (for tests). None where the core cannot list them.
    fn cached_hashes(&self) -> Option<Vec<u64>> {
        None
    }

    /// The KV pool's blocks (pages) by use, now.
    fn kv_blocks(&self) -> KvBlocks;

    /// The blocks each request holds now, in sequence order, requests in ascending id order
    /// (running, waiting, and a prefill worker's prompts held for transfer): for the event
    /// stream's `blocks` lines (the page's inspector). `None` where the core keeps no
    /// per-block table (SGLang's radix pages, the kvbm manager). Read-only.
    fn held_blocks(&self) -> Option<Vec<(u64, Vec<u32>)>> {
        None
    }

    /// Physical block `block` now: its hash if cache-visible, and how many requests hold it
    /// (for cores whose `held_blocks` is `Some`). Read-only.
    fn block_view(&self, _block: u32) -> (Option<u64>, u32) {
        (None, 0)
    }

    /// Publishes KV events in `PassOutput::kv_events` (where the backend has them: with prefix
    /// caching, not on a decode worker) even if no router consumes them (a recorder does).
    fn set_kv_events(&mut self, on: bool);

    /// Fills `PassOutput::fpm` in every pass (off by default: it walks the waiting queue).
    fn set_forward_pass_metrics(&mut self, on: bool);

    /// Reports steady tokens as a count (`PassOutput::steady_tokens`) instead of listing
    /// them; cores that have no such shortcut list every token.
    fn set_steady_tokens(&mut self, _on: bool) {}

    /// (request, steady tokens) of every streak still open, closing them: at the end of a
    /// run cut short, the harness settles what it was not told (their last token came at
    /// this rank's last pass end).
    fn take_open_streaks(&mut self) -> Vec<(u64, u32)> {
        Vec::new()
    }

    /// The transfers this core's connector runs beside its passes (native KV offload's host
    /// and disk tiers), if it has any: the harness then tells it the time of each pass and
    /// comes back at their deadlines.
    fn transfers(&self) -> Option<&dyn TransferClock> {
        None
    }

    /// The same, to drive them.
    fn transfers_mut(&mut self) -> Option<&mut dyn TransferClock> {
        None
    }
}

/// KV transfers that run beside a core's passes (its connector's: native offload). A core
/// has no clock: the harness tells it the time of each pass, of each pass end, and of each
/// deadline it asked to be woken at; the transfers' effects are computed from those times.
pub trait TransferClock {
    /// The harness's time for the pass about to be stepped (loads queue from it, stores and
    /// fences are measured against it).
    fn set_pass_time(&mut self, now_ms: f64);

    /// The pass of this rank's worker ended at `end_ms` (this rank's or, with DP ranks, a
    /// sibling's): transfers due by then land, the pass's stores start. KV events this causes
    /// are appended to `events`.
    fn pass_boundary(&mut self, end_ms: f64, events: &mut Vec<KvEvent>);

    /// The worker is idle and a deadline of this rank's has come: the transfers due by
    /// `now_ms` land. KV events this causes are appended to `events`.
    fn settle(&mut self, now_ms: f64, events: &mut Vec<KvEvent>);

    /// When the transfers next need the harness (while the worker is idle).
    fn next_deadline(&self) -> Option<f64>;

    /// Transfers are still in flight (the run is not over).
    fn pending(&self) -> bool;

    /// The last pass took no time and changed the disk tier's state: the reference steps the
    /// rank again at once.
    fn retry_at_once(&self) -> bool;
}

/// Disaggregated serving: a prefill core holds a finished prompt's KV until the decode side
/// has it; a decode core reserves room for a prompt before its KV moves, then activates it.
pub trait HandOff {
    /// A prefill worker's transfer of request `id` is done: the KV it held is freed.
    fn release_source(&mut self, id: u64);

    /// A decode rank takes room for a prompt about to be transferred (see [`Reservation`]).
    fn reserve_destination(&mut self, req: Request) -> Reservation;

    /// The transfer to a reservation is done: the request decodes from the next pass. False
    /// if nothing was reserved for it.
    fn activate(&mut self, id: u64) -> bool;

    /// Whether requests wait for a reservation on this rank. While they do, only requests
    /// whose KV is already in place join the batch.
    fn set_destinations_pending(&mut self, pending: bool);

    /// Blocks (pages) nobody holds, as the reference's capacity check after an activation
    /// counts them: an SGLang radix cache's free pages only (an activation that takes a
    /// cached copy instead of its own page frees one and locks the other), the vLLM pool's
    /// free and unreferenced cached blocks alike.
    fn reservation_capacity(&self) -> u32;

    /// Nothing runs, yet requests wait (none of them a transferred request free to join):
    /// the reference's engine loop then starts another pass, which begins with one more
    /// destination reservation attempt.
    fn idle_with_queue(&self) -> bool;

    /// It still holds KV for the other side: a prefill worker's finished prompts whose
    /// transfer is not done, a decode worker's reservations whose KV is on its way. A
    /// draining worker goes only once this is false (and nothing else is in flight).
    fn holds_for_handoff(&self) -> bool;

    /// The rank ran a pass that could do nothing (see `idle_with_queue`): an SGLang
    /// scheduler's `new_token_ratio` falls to its floor; vLLM keeps no such state.
    fn idle_pass(&mut self) {}
}

/// A KV pool's blocks (SGLang: pages) by use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct KvBlocks {
    /// Held by requests.
    pub in_use: u32,
    /// Cached and held by nobody (evictable).
    pub idle: u32,
    pub free: u32,
    /// Cache-visible (the distinct blocks KV events announced and did not remove).
    pub cached: u32,
}

/// Where a core runs and what it is given besides its arguments.
#[derive(Clone, Debug)]
pub struct RankSetup {
    pub dp_rank: u32,
    pub dp_size: u32,
    /// Publish KV events (only worth it when a router consumes them).
    pub emit_events: bool,
    /// The NPZ profile the arguments name, loaded by the caller (the engine reads no files).
    pub profile: Option<Arc<Profile>>,
    /// The measured-kernel model the arguments name, built by the caller from its data file.
    pub kernels: Option<Arc<crate::perf::ais::AisModel>>,
    /// The worker this rank belongs to, in its pool (a worker-local G3 pool is per worker).
    pub worker: u32,
    /// Offload tiers shared across the pool's ranks (see [`Tiers`]).
    pub tiers: Tiers,
}

impl RankSetup {
    /// A single-rank worker.
    pub fn single(emit_events: bool) -> Self {
        RankSetup { dp_rank: 0, dp_size: 1, emit_events, profile: None, kernels: None, worker: 0, tiers: Tiers::default() }
    }
}
