//! Disaggregated serving on the SGLang core. A prefill worker holds a finished prompt's pages
//! (locked in the radix tree) until the harness releases them; a decode worker reserves pages
//! for a prompt before its KV arrives (sharing the prefix it has cached) and decodes it from
//! the pass after its activation.

use super::SglangCore;
use super::request::SgRequest;
use crate::sched::contract::{HandOff, Scheduler};
use crate::sched::output::{Admission, Finished, Outcome, Reservation};
use crate::sequence::Request;

impl SglangCore {
    /// Completes a prefill worker's request but keeps it and its pages (uncached: the prompt
    /// enters the radix tree only on `release_source`). Its full pages are announced to the
    /// router now all the same, as the reference's KV events follow allocated pages, not the
    /// tree: a router sees a held prompt's prefix on this worker, though no request here can
    /// reuse it before the release (measured: a same-prefix request routed while the prompt
    /// was held went to its worker, reporting the overlap, and reused nothing).
    pub(super) fn hold(&mut self, s: u32) {
        if self.cfg.prefix_caching {
            let r = self.req(s);
            let (from, full, node) = (r.tree_pages, r.seq.num_computed / self.cfg.page, r.node);
            let pages = self.page_hashes(s, from, full);
            self.cache.announce_private(node, &pages);
        }
        let id = self.req(s).seq.id;
        self.held.insert(id, s);
        self.out.finished.push(Finished { id, outcome: Outcome::Completed, steady_tokens: 0 });
    }

    /// Activated requests join the running batch, in order, while it has room. Joining is
    /// an admission (with no reuse): a request retracted later is re-admitted.
    pub(super) fn join_arrived(&mut self) {
        while self.running.len() < self.cfg.max_running {
            let Some(s) = self.arrived.pop_front() else { break };
            self.running.push(s);
            let r = self.req_mut(s);
            r.seq.admissions += 1;
            let admission = Admission { id: r.seq.id, reused_tokens: 0, readmission: false, host_reused_tokens: None };
            self.out.admissions.push(admission);
        }
    }
}

impl HandOff for SglangCore {
    fn holds_for_handoff(&self) -> bool {
        !(self.held.is_empty() && self.reserved.is_empty())
    }

    /// Frees the pages a prefill worker held for request `id`: its full pages enter the
    /// radix tree only now (unlocked), the rest return to the pool.
    fn release_source(&mut self, id: u64) {
        if let Some(s) = self.held.remove(&id) {
            self.cache_materialized(s);
            self.release(s);
            self.reqs[s as usize] = None;
            self.free_slots.push(s);
            self.stalled = false;
        }
    }

    /// Takes pages for a prompt about to be transferred: its cached prefix is locked, the
    /// rest taken from the pool (evicting if needed). It runs from its activation on.
    fn reserve_destination(&mut self, req: Request) -> Reservation {
        if self.ceil_page(req.prompt.len()) as u64 > self.pool_tokens() {
            return Reservation::NeverFits;
        }
        // A full running batch does not hold the reservation back (unlike vLLM's): the
        // transferred request waits in `arrived` for a slot. Measured on the reference.
        let id = req.id;
        let s = self.slot_for(SgRequest::new(req));
        let page = self.cfg.page;
        let len = self.req(s).seq.len();
        let pages = if self.cfg.prefix_caching { len / page } else { 0 };
        let keys = self.page_hashes(s, 0, pages);
        let (node, matched) = self.cache.match_and_touch(keys.iter().map(|k| k.0));
        let fresh = len.div_ceil(page) - matched;
        // The matched prefix is locked first, so eviction cannot take it.
        self.cache.lock(node);
        if self.available_blocks() < fresh {
            self.cache.unlock(node);
            self.reqs[s as usize] = None;
            self.free_slots.push(s);
            return Reservation::NoRoom;
        }
        let free = self.cache.free_pages();
        if free < fresh {
            self.cache.evict(fresh - free);
        }
        let ok = self.cache.take_private(fresh);
        debug_assert!(ok, "room was checked");
        let r = self.req_mut(s);
        r.node = node;
        r.tree_pages = matched;
        r.private_pages = fresh;
        r.seq.num_computed = len;
        self.reserved.insert(id, s);
        Reservation::Reserved { resident_blocks: matched }
    }

    /// The KV of reservation `id` arrived: its full pages enter the cache and it queues to
    /// join the running batch. False if nothing was reserved for it.
    fn activate(&mut self, id: u64) -> bool {
        let Some(s) = self.reserved.remove(&id) else { return false };
        self.cache_materialized(s);
        self.arrived.push_back(s);
        self.stalled = false;
        true
    }

    /// Reservations wait for room on this rank (or none do).
    fn set_destinations_pending(&mut self, pending: bool) {
        if self.destinations_pending && !pending {
            // Prefill batches may form again.
            self.stalled = false;
        }
        self.destinations_pending = pending;
    }

    /// Pages in no request's hands and in no cache.
    fn reservation_capacity(&self) -> u32 {
        self.cache.free_pages()
    }

    fn idle_with_queue(&self) -> bool {
        self.running.is_empty() && self.arrived.is_empty() && !self.waiting.is_empty()
    }

    /// A pass with nothing to run and nothing to admit. It still decays `new_token_ratio`,
    /// and the reference repeats a pass that changed nothing else at the same instant until
    /// the ratio stops changing: the ratio ends at its floor. (Found on tiny decode pools:
    /// requests retracted there were readmitted, after such a pass, as the floor allows.)
    fn idle_pass(&mut self) {
        self.ratio.current = self.ratio.min;
    }
}
