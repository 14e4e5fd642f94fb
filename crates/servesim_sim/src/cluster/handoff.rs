//! Disaggregated serving, harness side: the hand-off of a prompt from the prefill pool to the
//! decode pool, as the reference runs it.
//!
//! vLLM hands off prefill-first: the prompt is computed, then a decode rank is chosen and
//! reserves room, then the KV moves. SGLang hands off destination-first: the decode rank is
//! reserved on arrival, the prefill starts only then, and the KV moves as soon as it ends.
//! Either way a reservation is a scheduler command: a busy decode rank takes one per wake
//! (its pass boundary, each activation, each idle pass), in order; the transfer's activation
//! waits for the decode rank's pass boundary; the prefill rank frees the prompt's KV at its
//! own next boundary.
//!
//! [`Handoff`] keeps this protocol's state; every call that may decide something pushes what
//! the simulation must do as [`Decision`]s (route a prompt, schedule a transfer's end, fail a
//! request) into the caller's list, in order, so it never calls back into the event loop and
//! no decision can be left behind.

use super::fleet::Fleet;
use super::router::RouteQuery;
use crate::workload::Workload;
use servesim_engine::args::KvTransferTimingMode;
use servesim_engine::perf::duration_ms;
use servesim_engine::{EngineArgs, HandOff, Request, Reservation, Scheduler};
use std::time::Duration;

/// How a prompt's KV moves from prefill to decode (the prefill pool's Dynamo arguments).
#[derive(Clone, Debug)]
pub struct TransferArgs {
    /// GB/s (1e9 bytes); absent or 0 means no delay.
    pub bandwidth_gbps: Option<f64>,
    pub bytes_per_token: Option<u64>,
    pub timing_mode: KvTransferTimingMode,
}

impl TransferArgs {
    /// Read from the `kv_transfer_*` and `kv_bytes_per_token` engine arguments, where Dynamo's
    /// JSON puts them (the engine crate parses and range-checks them; only the harness uses
    /// them).
    pub fn of(args: &EngineArgs) -> Self {
        TransferArgs {
            bandwidth_gbps: args.kv_transfer_bandwidth,
            bytes_per_token: args.kv_bytes_per_token,
            timing_mode: args.kv_transfer_timing_mode,
        }
    }

    /// How long a prompt of `prompt_len` tokens takes to move to a rank that holds `resident`
    /// of its blocks already.
    pub fn delay_ms(&self, prompt_len: u32, resident: u32, block_size: u32) -> f64 {
        match (self.bandwidth_gbps, self.bytes_per_token) {
            (Some(gbps), Some(bytes)) if gbps > 0.0 => {
                let tokens = match self.timing_mode {
                    KvTransferTimingMode::FullPrompt => prompt_len as u64,
                    KvTransferTimingMode::DestinationMissing => {
                        prompt_len.div_ceil(block_size).saturating_sub(resident) as u64 * block_size as u64
                    }
                };
                duration_ms(Duration::from_secs_f64(tokens as f64 * bytes as f64 / (gbps * 1e9)))
            }
            _ => 0.0,
        }
    }
}

/// What the simulation must do for the hand-off, in order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Decision {
    /// Route the request to the prefill pool (SGLang: its destination is reserved).
    Prefill(u32),
    /// The request's KV reaches decode rank `rank` at `at_ms`.
    Transfer { request: u32, rank: usize, at_ms: f64 },
    /// The request's KV is in place on decode rank `rank`: it decodes there.
    Activated { request: u32, rank: usize },
    /// The hand-off failed: the request ends, rejected, for `reason`.
    Fail { request: u32, reason: String },
}

/// One rank's hand-off state.
#[derive(Clone, Debug, Default)]
struct RankState {
    /// Decode destinations asked for mid-pass, oldest first: a reservation is a scheduler
    /// command, applied at a pass boundary, and the KV transfer starts only then.
    reservations: Vec<u32>,
    /// Counts the times the rank gave capacity back (a pass in which a request finished or
    /// was preempted, an activation that freed copies of cached pages): a head reservation
    /// that found no room is tried again only after the next one (the reference's
    /// "capacity generation").
    capacity_generation: u64,
    /// The generation at which the head of `reservations` last found no room.
    head_refused_at: Option<u64>,
    /// Transfers that finished mid-pass: the request is activated at the next boundary.
    arrived: Vec<u32>,
    /// A prefill rank's held prompts whose transfer is done, freed at its next boundary.
    releases: Vec<u32>,
}

pub(crate) struct Handoff {
    transfer: TransferArgs,
    /// SGLang's order: the decode destination is reserved on arrival, before the prefill.
    destination_first: bool,
    prefill_pool: usize,
    decode_pool: usize,
    /// The prefill rank holding each request's prompt KV.
    source_rank: Vec<u32>,
    /// Destination-first: each request's decode rank and the prefix blocks it had resident.
    destination: Vec<(u32, u32)>,
    ranks: Vec<RankState>,
    scratch: Vec<u8>,
}

impl Handoff {
    pub fn new(fleet: &Fleet, prefill_pool: usize, decode_pool: usize, requests: usize, destination_first: bool) -> Self {
        Handoff {
            transfer: TransferArgs::of(fleet.pools[prefill_pool].args()),
            destination_first,
            prefill_pool,
            decode_pool,
            source_rank: vec![u32::MAX; requests],
            destination: if destination_first { vec![(u32::MAX, 0); requests] } else { Vec::new() },
            ranks: vec![RankState::default(); fleet.ranks.len()],
            scratch: Vec::new(),
        }
    }

    pub fn prefill_pool(&self) -> usize {
        self.prefill_pool
    }

    /// SGLang's order: each request is routed to the decode pool before the prefill pool.
    pub fn destination_first(&self) -> bool {
        self.destination_first
    }

    /// An arrival: SGLang reserves its destination before anything else.
    pub fn on_arrival(&mut self, i: u32, t: f64, fleet: &mut Fleet, workload: &Workload, out: &mut Vec<Decision>) -> bool {
        if !self.destination_first {
            return false;
        }
        self.request_destination(i, t, fleet, workload, out);
        true
    }

    /// The cluster grew to `n` ranks (a worker was added).
    pub fn add_ranks(&mut self, n: usize) {
        self.ranks.resize_with(n, RankState::default);
    }

    /// The requests waiting for a reservation on rank `r`.
    pub fn waiting_reservations(&self, r: usize) -> Vec<u32> {
        self.ranks.get(r).map_or(Vec::new(), |s| s.reservations.clone())
    }

    /// Request `i`'s prompt goes to prefill rank `rank`, which will hold its KV.
    pub fn prefill_routed(&mut self, i: u32, rank: usize) {
        self.source_rank[i as usize] = rank as u32;
    }

    /// Rank `r`'s pass gave capacity back (a request finished or was preempted).
    pub fn capacity_returned(&mut self, r: usize) {
        self.ranks[r].capacity_generation += 1;
    }

    /// Releases sent to prefill rank `r` during its pass are commands queued before anything
    /// the pass's end causes, so their blocks join the LRU first (older, evicted sooner). Their
    /// KV events reach the router after the pass's own (the caller publishes them then).
    pub fn release_sources(&mut self, r: usize, fleet: &mut Fleet) {
        for i in std::mem::take(&mut self.ranks[r].releases) {
            fleet.ranks[r].engine.release_source(i as u64);
        }
    }

    /// Prefill finished: SGLang's KV starts moving to the destination reserved before; vLLM
    /// picks the decode rank now, which reserves room (at once if idle, else at its next
    /// pass boundary) before the transfer starts.
    pub fn on_prefill_done(&mut self, i: u32, t: f64, fleet: &mut Fleet, workload: &Workload, out: &mut Vec<Decision>) {
        if self.destination_first {
            let (rank, resident) = self.destination[i as usize];
            let prompt_len = workload.input_length(i as usize);
            out.push(self.transfer(i, rank as usize, t, prompt_len, resident, fleet));
        } else {
            self.request_destination(i, t, fleet, workload, out);
        }
    }

    /// At decode rank `r`'s pass boundary: each scheduler command it takes — the boundary
    /// itself and every activation of a request whose KV arrived mid-pass — lets one pending
    /// reservation through (the reference's one-command-per-wake engine loop, observed as
    /// reservation times). The boundary's attempt comes before the activations, so it does
    /// not see their blocks as resident (which `destination_missing` would not charge).
    /// Reservations wait in order: one that finds no room holds back those behind it.
    pub fn at_boundary(&mut self, r: usize, t: f64, fleet: &mut Fleet, workload: &Workload, out: &mut Vec<Decision>) {
        self.take_reservation(r, t, fleet, workload, out);
        for i in std::mem::take(&mut self.ranks[r].arrived) {
            self.activate(i, r, t, fleet, out);
            self.take_reservation(r, t, fleet, workload, out);
        }
    }

    /// Nothing runs on decode rank `r` but requests wait: the reference starts another pass
    /// at once, which begins with a reservation attempt; while such passes can do nothing
    /// else they repeat at the same instant, one attempt each (measured: two or three
    /// reservations at one boundary). They come in the worker's turn among the workers
    /// starting passes at that instant, so a prefill worker earlier in the order has
    /// already formed its batch (SGLang reserves destinations before the prefill).
    pub fn idle_pass_reservations(&mut self, r: usize, t: f64, fleet: &mut Fleet, workload: &Workload, out: &mut Vec<Decision>) {
        while self.take_reservation(r, t, fleet, workload, out) && !fleet.ranks[r].engine.has_work() {}
    }

    /// A prompt's KV reached decode rank `rank`; a busy rank takes it at its next boundary.
    pub fn transfer_done(&mut self, i: u32, rank: usize, t: f64, fleet: &mut Fleet, workload: &Workload, out: &mut Vec<Decision>) {
        if fleet.busy(rank) {
            self.ranks[rank].arrived.push(i);
        } else {
            // The activation wakes an idle rank, which takes one pending reservation.
            self.activate(i, rank, t, fleet, out);
            self.take_reservation(rank, t, fleet, workload, out);
        }
    }

    /// Nothing is left to happen: the requests still waiting for a reservation on rank `r`.
    pub fn take_stuck(&mut self, r: usize) -> Vec<u32> {
        std::mem::take(&mut self.ranks[r].reservations)
    }

    /// Picks request `i`'s decode rank, which takes its reservation in order, one per wake:
    /// a busy rank at its pass boundary; an idle one, woken by this request, at once (the
    /// oldest waiting one).
    fn request_destination(&mut self, i: u32, t: f64, fleet: &mut Fleet, workload: &Workload, out: &mut Vec<Decision>) {
        let req = workload.request(i as usize, i as u64);
        let p = &mut fleet.pools[self.decode_pool];
        let hashes = prompt_hashes(&req, p.block_size, &mut self.scratch);
        let placement = p.router.route(&RouteQuery { id: i as u64, now_ms: t, prompt_tokens: req.prompt.len(), block_hashes: &hashes });
        // A prompt no decode pool holds fails only once routed (a round-robin turn is spent).
        if req.prompt.len().div_ceil(p.block_size) > p.args().num_gpu_blocks() {
            p.router.free(i as u64, t);
            self.fail(i, t, fleet, workload, out);
            return;
        }
        let rank = p.rank_of(placement.target);
        self.ranks[rank].reservations.push(i);
        self.sync_destinations(rank, fleet);
        if !fleet.busy(rank) {
            self.take_reservation(rank, t, fleet, workload, out);
        }
    }

    /// No decode worker's pool can ever hold request `i`'s prompt: the hand-off fails at
    /// once (and the prefill rank, if it holds the prompt, lets it go).
    fn fail(&mut self, i: u32, t: f64, fleet: &mut Fleet, workload: &Workload, out: &mut Vec<Decision>) {
        let p = &fleet.pools[self.decode_pool];
        let blocks = workload.input_length(i as usize).div_ceil(p.block_size);
        let reason = format!("its prompt needs {blocks} KV blocks; a decode worker's pool has {}", p.args().num_gpu_blocks());
        out.push(Decision::Fail { request: i, reason });
        if let Some(&source) = self.source_rank.get(i as usize).filter(|&&r| r != u32::MAX) {
            fleet.release_source(source as usize, i as u64, t);
        }
    }

    /// One reservation attempt on rank `r` (a scheduler command takes one): its oldest
    /// pending reservation, if it finds room. Returns whether one was taken.
    fn take_reservation(&mut self, r: usize, t: f64, fleet: &mut Fleet, workload: &Workload, out: &mut Vec<Decision>) -> bool {
        let state = &self.ranks[r];
        let Some(&first) = state.reservations.first() else { return false };
        if state.head_refused_at == Some(state.capacity_generation) {
            // Nothing was given back since it found no room: the reference does not try it
            // again (a prefix that became resident meanwhile does not count).
            return false;
        }
        if !self.reserve(first, r, t, fleet, workload, out) {
            self.ranks[r].head_refused_at = Some(self.ranks[r].capacity_generation);
            return false;
        }
        self.ranks[r].reservations.remove(0);
        self.ranks[r].head_refused_at = None;
        self.sync_destinations(r, fleet);
        true
    }

    /// Tells rank `r`'s scheduler whether requests wait for a reservation on it (see
    /// `HandOff::set_destinations_pending`); called wherever its list changes.
    fn sync_destinations(&mut self, r: usize, fleet: &mut Fleet) {
        fleet.ranks[r].engine.set_destinations_pending(!self.ranks[r].reservations.is_empty());
    }

    /// The decode rank takes room for request `i` — its blocks, sharing any resident
    /// prefix — and the prompt KV starts moving (SGLang: the prefill starts). False, with
    /// nothing done, if it has no room yet.
    fn reserve(&mut self, i: u32, rank: usize, t: f64, fleet: &mut Fleet, workload: &Workload, out: &mut Vec<Decision>) -> bool {
        let req = workload.request(i as usize, i as u64);
        let prompt_len = req.prompt.len();
        let resident = match fleet.ranks[rank].engine.reserve_destination(req) {
            Reservation::Reserved { resident_blocks } => resident_blocks,
            Reservation::NoRoom => return false,
            Reservation::NeverFits => {
                self.fail(i, t, fleet, workload, out);
                return true;
            }
        };
        if self.destination_first {
            self.destination[i as usize] = (rank as u32, resident);
            out.push(Decision::Prefill(i));
        } else {
            out.push(self.transfer(i, rank, t, prompt_len, resident, fleet));
        }
        true
    }

    /// The prompt KV of request `i` starts moving to `rank`, which holds `resident` of its
    /// blocks already.
    fn transfer(&self, i: u32, rank: usize, t: f64, prompt_len: u32, resident: u32, fleet: &Fleet) -> Decision {
        let block_size = fleet.pools[fleet.ranks[rank].pool].block_size;
        let at_ms = t + self.transfer.delay_ms(prompt_len, resident, block_size);
        Decision::Transfer { request: i, rank, at_ms }
    }

    /// The decode rank takes the request; the prefill rank that held its KV lets it go (a
    /// scheduler command, so a busy prefill rank frees it at its next boundary).
    fn activate(&mut self, i: u32, rank: usize, t: f64, fleet: &mut Fleet, out: &mut Vec<Decision>) {
        out.push(Decision::Activated { request: i, rank });
        let engine = &mut fleet.ranks[rank].engine;
        let before = engine.reservation_capacity();
        let reserved = engine.activate(i as u64);
        debug_assert!(reserved, "a transfer goes only to a reservation");
        if engine.reservation_capacity() > before {
            // Caching its prompt gave pages back (copies of pages cached meanwhile).
            self.ranks[rank].capacity_generation += 1;
        }
        let source = self.source_rank[i as usize] as usize;
        if fleet.busy(source) {
            self.ranks[source].releases.push(i);
        } else {
            fleet.release_source(source, i as u64, t);
        }
    }
}

/// Sequence hashes of a prompt's full blocks: all the router tracks of it. A partial tail
/// block has no identity a cache could share, and the reference's router neither matches nor
/// counts it (its tracked sequence is the prompt's complete blocks).
pub(crate) fn prompt_hashes(req: &Request, bs: u32, bytes: &mut Vec<u8>) -> Vec<u64> {
    use servesim_engine::hash::{block_hash, sequence_hash};
    let tokens = req.prompt.to_vec();
    let mut out = Vec::with_capacity(tokens.len() / bs as usize);
    let mut parent = None;
    for b in tokens.chunks_exact(bs as usize) {
        let h = sequence_hash(parent, block_hash(b, bytes));
        out.push(h);
        parent = Some(h);
    }
    out
}
