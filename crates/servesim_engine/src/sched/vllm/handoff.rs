//! The vLLM core's side of disaggregated serving, its hand-off connector (state in
//! `connector.rs`): a prefill worker holds a finished prompt's blocks until its transfer is
//! done; a decode worker reserves blocks for a prompt before its KV moves, queues it, and
//! admits it once the KV is in place.

use super::VllmCore;
use crate::sched::contract::{HandOff, Scheduler};
use crate::sched::output::Reservation;
use crate::sequence::{Request, Sequence};

impl HandOff for VllmCore {
    fn holds_for_handoff(&self) -> bool {
        self.connector.handoff().is_some_and(|h| h.holds())
    }

    /// Frees the KV a prefill worker held for request `id` (leaf first, as a completion
    /// would have), if it holds any.
    fn release_source(&mut self, id: u64) {
        let Some(h) = self.connector.handoff_mut() else { return };
        let Some(blocks) = h.held.remove(&id) else { return };
        h.stalled = false;
        for &b in blocks.iter().rev() {
            self.pool.release(b);
        }
    }

    /// A decode destination takes room for a prompt about to be transferred: its blocks are
    /// allocated now (resident prefix blocks shared) and it joins the queue, passed over
    /// until it is activated.
    fn reserve_destination(&mut self, req: Request) -> Reservation {
        if self.blocks_for(req.prompt.len()) > self.cfg.num_blocks {
            return Reservation::NeverFits;
        }
        // No reservation while `max_num_seqs` requests run (other reservations and activated
        // requests waiting for admission do not count: measured on the reference).
        if self.running.len() >= self.cfg.max_num_seqs {
            return Reservation::NoRoom;
        }
        let mut seq = Sequence::new(req);
        seq.prefilled = true;
        seq.order = self.next_order();
        let id = seq.id;
        let s = self.new_slot(seq);
        let hit = self.prefix_hit(s);
        let len = self.seq(s).len();
        let needed = self.blocks_for(len) - hit.active_blocks;
        let available = self.available_blocks();
        let resident = hit.slots.len() as u32;
        let fresh = self.blocks_for(len) - resident;
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        let room = needed <= available && self.pool.reserve(&hit.slots, fresh, &mut seq.blocks);
        self.spare_slots = hit.slots;
        if !room {
            self.seqs[s as usize] = None;
            self.free_seq_slots.push(s);
            return Reservation::NoRoom;
        }
        // Its own blocks become cache-visible when its KV arrives (`activate`).
        seq.visible = resident;
        seq.num_computed = len;
        // It queues now, passed over until its KV arrives (then it takes its place again,
        // see `activate`): requests are admitted in the order of their reservations.
        let h = self.connector.handoff_mut().expect("a decode worker takes reservations");
        h.reserved.insert(id, s);
        h.pending_kv += 1;
        self.seq_mut(s).kv_pending = true;
        self.waiting.push_back(s);
        Reservation::Reserved { resident_blocks: resident }
    }

    /// The transfer of reserved request `id` is done: it can be admitted (its blocks are in
    /// place). False if nothing was reserved for it.
    fn activate(&mut self, id: u64) -> bool {
        let Some(h) = self.connector.handoff_mut() else { return false };
        let Some(s) = h.reserved.remove(&id) else { return false };
        h.pending_kv -= 1;
        h.stalled = false;
        let full = self.full_blocks(self.seq(s).prompt_len());
        self.make_visible(s, full);
        self.seq_mut(s).kv_pending = false;
        // It takes its place by reservation order again: ahead of a preempted request
        // reserved after it, which went to the front when preempted (measured on the
        // reference: such a request joins past a preempted head that cannot fit; one
        // reserved later does not).
        let order = self.seq(s).order;
        let k = self.waiting.iter().position(|&w| w == s).expect("a reservation is queued");
        self.waiting.remove(k);
        let k = self.waiting.iter().position(|&w| self.seq(w).order > order).unwrap_or(self.waiting.len());
        self.waiting.insert(k, s);
        true
    }

    /// Reservations wait for room on this rank (or none do).
    fn set_destinations_pending(&mut self, pending: bool) {
        let Some(h) = self.connector.handoff_mut() else { return };
        if pending != h.destinations_pending {
            // Who may join changes: a stalled queue may move again.
            h.stalled = false;
        }
        h.destinations_pending = pending;
    }

    fn idle_with_queue(&self) -> bool {
        let pending_kv = self.connector.handoff().map_or(0, |h| h.pending_kv);
        self.running.is_empty() && self.waiting.len() > pending_kv && self.first_in_place().is_none()
    }

    fn reservation_capacity(&self) -> u32 {
        self.available_blocks()
    }
}
