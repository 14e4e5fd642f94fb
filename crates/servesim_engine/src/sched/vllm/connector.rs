//! KV that comes from elsewhere, and the one admission loop that asks for it.
//!
//! vLLM's scheduler has one waiting loop; disaggregation and offload enter it through its KV
//! connector (`get_num_new_matched_tokens` after the local prefix lookup,
//! `update_state_after_alloc` after the allocation, `WAITING_FOR_REMOTE_KVS` for a request
//! whose KV is on its way). This core does the same: [`VllmCore::admit`] is the only
//! admission loop, and a [`Connector`] answers where vLLM's does:
//!
//! - **none**: every block is computed here.
//! - **hand-off** (disaggregated serving, `handoff.rs`): a prefill worker holds a finished
//!   prompt's blocks until its transfer is done; a decode worker reserves blocks for a prompt
//!   before its KV moves, and the request waits in the queue, passed over, until it lands.
//! - **offload** (native host offload with its disk tier, `offload/` and `onboarding.rs`):
//!   a prompt's blocks found in the host tier are loaded into device blocks first, the
//!   request waiting for the load in the connector's own queue.
//!
//! The reference's ordering rules are the connector's choices, not another loop: which
//! request comes next (the offload connector's deferred queue ahead of the waiting queue),
//! the device headroom a load keeps free, whether admission goes on with an empty token
//! budget, and what a head that cannot be admitted does to the loop.

use super::offload::Offload;
use super::{Capacity, PrefixHit, Scheduled, VllmCore};
use crate::kv::SlotId;
use crate::kv::offload::Key;
use crate::sched::contract::Scheduler;
use crate::sched::output::{Admission, Outcome};
use std::collections::HashMap;

/// Where this rank's KV may come from besides its own computation.
#[derive(Debug)]
pub(super) enum Connector {
    None,
    Handoff(Handoff),
    Offload(Box<Offload>),
}

/// The disaggregation hand-off's state on one rank (vLLM's P/D connectors).
#[derive(Debug, Default)]
pub(super) struct Handoff {
    /// A prefill worker's finished prompts, by request id: their KV stays held (allocated
    /// and cache-visible) until the transfer to the decode side is done and the harness
    /// releases it.
    pub held: HashMap<u64, Vec<SlotId>>,
    /// A decode worker's reservations whose transfers are under way: request id → slot.
    pub reserved: HashMap<u64, u32>,
    /// Requests wait for a reservation here (the harness keeps them): until they have one,
    /// only requests whose KV is already in place may join the batch.
    pub destinations_pending: bool,
    /// How many of `waiting` are reservations whose KV is still on the way.
    pub pending_kv: usize,
    /// Nothing runs and the waiting head needs blocks that held prompts or reservations
    /// occupy: no pass can do anything until a release or an activation.
    pub stalled: bool,
}

impl Handoff {
    /// It holds blocks for the other side (held prompts, reservations).
    pub fn holds(&self) -> bool {
        !(self.held.is_empty() && self.reserved.is_empty())
    }
}

impl Connector {
    pub fn offload(&self) -> Option<&Offload> {
        match self {
            Connector::Offload(o) => Some(o),
            _ => None,
        }
    }

    pub fn offload_mut(&mut self) -> Option<&mut Offload> {
        match self {
            Connector::Offload(o) => Some(o),
            _ => None,
        }
    }

    pub fn handoff(&self) -> Option<&Handoff> {
        match self {
            Connector::Handoff(h) => Some(h),
            _ => None,
        }
    }

    pub fn handoff_mut(&mut self) -> Option<&mut Handoff> {
        match self {
            Connector::Handoff(h) => Some(h),
            _ => None,
        }
    }

    /// Admission goes on once the pass's token budget is spent (rejections, and prompts
    /// whose KV is in place, take none). With offload it stops, as vLLM's loop does.
    fn admits_without_budget(&self) -> bool {
        !matches!(self, Connector::Offload(_))
    }
}

/// The request admission tries next, and the queue it waits in.
#[derive(Clone, Copy)]
struct Candidate {
    slot: u32,
    queue: Queue,
}

#[derive(Clone, Copy)]
enum Queue {
    /// `waiting[k]`.
    Waiting(usize),
    /// The offload connector's queue of deferred requests.
    Deferred,
}

/// What the connector says of a candidate after the local prefix lookup.
pub(super) enum Matched {
    /// Its KV is in place already (a transferred prompt): it joins with nothing to compute.
    InPlace,
    /// Its KV is on its way, or can only come once a transfer ends: it waits (vLLM's
    /// `WAITING_FOR_REMOTE_KVS`) and admission goes on with the next request.
    Defer,
    /// Admit it on `hit`.
    Admit(Match),
}

pub(super) struct Match {
    /// The prefix it is admitted with; `active_blocks` is what its footprint is discounted
    /// by in the capacity check.
    pub hit: PrefixHit,
    /// Device blocks the capacity check keeps free besides (loads in flight).
    pub headroom: u32,
    /// Host blocks that extend its prefix: once the capacity check passes, they are loaded
    /// into its device blocks instead, and it waits for them.
    pub load: Option<(Vec<Key>, Vec<SlotId>)>,
}

impl VllmCore {
    /// FIFO admission, asking the connector where vLLM asks its own.
    pub(super) fn admit(&mut self, budget: &mut u64) {
        let mut unused = false;
        while self.running.len() < self.cfg.max_num_seqs && (*budget > 0 || self.connector.admits_without_budget()) {
            let Some(c) = self.next_candidate() else { break };
            let s = c.slot;
            if let Some(reason) = self.prompt_rejection(s) {
                self.dequeue(c);
                self.finish(s, Outcome::Rejected(reason));
                continue;
            }
            let m = match self.matched(c) {
                Matched::InPlace => {
                    // Its blocks are reserved and hold its prompt: no admission check, no tokens.
                    self.dequeue(c);
                    self.join(s);
                    if *budget == 0 {
                        break;
                    }
                    continue;
                }
                Matched::Defer => {
                    self.defer(c);
                    continue;
                }
                Matched::Admit(m) => m,
            };
            if let Some(reason) = self.capacity_rejection(s) {
                self.spare_slots = m.hit.slots;
                self.dequeue(c);
                self.finish(s, Outcome::Rejected(reason));
                continue;
            }
            let Match { hit, headroom, load } = m;
            let fits = self.fits(s, &hit, headroom);
            if fits && let Some((keys, g1)) = load {
                self.spare_slots = hit.slots;
                match self.start_load(s, keys, &g1) {
                    super::onboarding::StartLoad::Queued | super::onboarding::StartLoad::Deferred => {
                        self.defer(c);
                        continue;
                    }
                    super::onboarding::StartLoad::Retry => {
                        self.defer(c);
                        self.connector.offload_mut().expect("an offload rank").retry.push(s);
                        continue;
                    }
                    super::onboarding::StartLoad::CapacityBlocked => break,
                }
            }
            let len = self.seq(s).len();
            let budget_before = *budget;
            let admitted = fits && matches!(self.schedule(s, Some(&hit), budget, &mut unused), Scheduled::Yes);
            let reused = hit.cached_tokens;
            self.spare_slots = hit.slots;
            if !admitted {
                if self.encoder.is_some() {
                    self.forget_images(s);
                }
                if self.blocked(c) {
                    break;
                }
                continue;
            }
            self.dequeue(c);
            self.running.push(s);
            let host_reused = if self.connector.offload().is_some() { self.attribute(s, reused) } else { None };
            let seq = self.seq_mut(s);
            seq.admissions += 1;
            let admission =
                Admission { id: seq.id, reused_tokens: reused, readmission: seq.admissions > 1, host_reused_tokens: host_reused };
            self.out.metrics.cache_hit_tokens += reused as u64;
            self.out.metrics.cache_query_tokens += len as u64;
            self.out.admissions.push(admission);
            if *budget == budget_before {
                // Nothing to compute: its whole sequence was cached (TRT-LLM gives no hit
                // back for recomputation). With the budget spent, admission stops here.
                self.whole_hits.push(s);
                if *budget == 0 {
                    break;
                }
            }
        }
        if let Some(o) = self.connector.offload_mut() {
            for s in std::mem::take(&mut o.retry) {
                if let Some(r) = o.requests.get_mut(s as usize).and_then(Option::as_mut) {
                    r.asleep = false;
                }
            }
        }
    }

    /// The next request to try. While reservations wait for room, only requests whose KV is
    /// in place may join, from anywhere in the queue (the others would take the room the
    /// reservations wait for). With offload, the first awake deferred request (with G3, one
    /// holding device blocks first). Otherwise the FIFO head, passing over reservations whose
    /// KV has not arrived.
    fn next_candidate(&self) -> Option<Candidate> {
        let waiting = |k: usize| Candidate { slot: self.waiting[k], queue: Queue::Waiting(k) };
        match &self.connector {
            Connector::Handoff(h) if h.destinations_pending => self.first_in_place().map(waiting),
            Connector::Offload(_) => match self.deferred_candidate() {
                Some(slot) => Some(Candidate { slot, queue: Queue::Deferred }),
                None => (!self.waiting.is_empty()).then(|| waiting(0)),
            },
            _ => self.waiting.iter().position(|&s| !self.seq(s).kv_pending).map(waiting),
        }
    }

    /// Where `c`'s KV comes from (see [`Matched`]).
    fn matched(&mut self, c: Candidate) -> Matched {
        if self.connector.offload().is_some() {
            return self.offload_match(c.slot);
        }
        if self.seq(c.slot).kv_in_place() {
            return Matched::InPlace;
        }
        Matched::Admit(Match { hit: self.prefix_hit(c.slot), headroom: 0, load: None })
    }

    /// Whether `s` fits on `hit` with `headroom` blocks kept free. Blocks held by running
    /// requests are not needed again (hits on blocks merely cached are: they will be taken
    /// from the free pool).
    fn fits(&self, s: u32, hit: &PrefixHit, headroom: u32) -> bool {
        match self.cfg.capacity {
            Capacity::Optimistic => {
                let needed = self.blocks_for(self.seq(s).len()).saturating_sub(hit.active_blocks);
                needed <= self.available_blocks().saturating_sub(headroom)
            }
            Capacity::NoEvict => self.to_completion_blocks(s).saturating_sub(hit.active_blocks as u64) <= self.no_evict_headroom(),
        }
    }

    /// The candidate `c` cannot be admitted now: whether admission stops (else it goes on with
    /// the next request, `c` having been ended).
    fn blocked(&mut self, c: Candidate) -> bool {
        // The head blocks everyone behind it while anything runs; with offload, always (the
        // harness ends a rank that can never move).
        if !self.running.is_empty() || self.connector.offload().is_some() {
            return true;
        }
        // Nothing runs. Held prompts free their blocks when their transfers are done, and
        // reservations turn into running requests when theirs are. Transferred requests
        // queued behind the head hold blocks too: the reference keeps them waiting, until
        // a prompt waiting for a reservation lets them join (see `destinations_pending`).
        let in_place = self.first_in_place().is_some();
        if let Some(h) = self.connector.handoff_mut()
            && (h.holds() || in_place)
        {
            h.stalled = true;
            return true;
        }
        // Nothing runs or holds blocks: the pool is empty and the budget whole, so nothing
        // will ever change and the head can never run.
        let reason = self.unschedulable_reason(c.slot);
        self.dequeue(c);
        self.finish(c.slot, Outcome::Unschedulable(reason));
        false
    }

    /// `c` leaves its queue (admitted or ended).
    fn dequeue(&mut self, c: Candidate) {
        match c.queue {
            Queue::Waiting(k) => {
                self.waiting.remove(k);
            }
            Queue::Deferred => self.leave_deferred(c.slot),
        }
    }

    /// `c` waits for a transfer: it moves to the offload connector's queue (keeping its place
    /// there if it is in it already) and sleeps.
    fn defer(&mut self, c: Candidate) {
        self.sleep(c.slot, matches!(c.queue, Queue::Deferred));
    }
}
