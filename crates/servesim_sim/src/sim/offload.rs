//! The harness's side of native KV offload: the clock the engines' transfer tiers need.
//!
//! The engines compute transfer deadlines from the times handed to them; each idle rank's
//! next deadline is an event in the one event queue (`TransferDeadline`, refreshed after
//! every instant and whenever tiers settle). At each timestamp the loop (`mod.rs`,
//! `instant`) goes in the reference's order, in rounds repeated until nothing changes:
//!
//! 1. idle workers whose transfers are due settle them (a busy worker's transfers land only
//!    at its pass end: the framework sees them with the pass's output; its deadline events
//!    are dropped and pushed again once it is idle);
//! 2. pass ends, in worker order: every rank of the worker settles its transfers and submits
//!    the pass's stores, then the passes' effects apply; then idle workers settle again;
//! 3. arrivals are routed;
//! 4. idle workers with work start passes, lowest worker first. A pass may start computing
//!    later than it starts (a fence on a store still reading its blocks); one that takes no
//!    time ends at once, and if it changed nothing visible the worker is not stepped again
//!    until the next round (with G3, a pass that changed the tiers is stepped again at once).
//!    Every round restarts from the lowest worker, so a worker whose pass did nothing is
//!    stepped again after another worker's pass starts — such passes still touch the host
//!    LRU and probe G3, as the reference's do.
//!
//! The run ends when no transfer is left either; worker-seconds run to that last deadline.

use super::Simulation;
use crate::queue::EventKind;
use servesim_engine::Scheduler;
use servesim_engine::kv::offload::{G2Domain, G3Stats, Tiers};
use servesim_engine::perf::duration_ms;

/// What starting a pass of a worker did, at an instant.
enum Started {
    /// It ends later: its end is scheduled.
    Later,
    /// It took no time and had visible effects.
    Effects,
    /// It took no time and changed nothing visible; `retry`: step it again at once.
    Nothing { retry: bool },
}

impl Simulation {
    /// The pools' shared tiers, for the report (`g3_offload`, `g2_domains`).
    pub(super) fn offload_report(tiers: &[Tiers]) -> (Option<G3Stats>, Vec<G2Domain>) {
        let g3 = tiers.iter().find_map(Tiers::g3_stats);
        let g2 = tiers.iter().filter_map(Tiers::g2_domain).collect();
        (g3, g2)
    }

    pub(super) fn transfers_pending(&self) -> bool {
        self.fleet.ranks.iter().any(|r| r.engine.transfers().is_some_and(|x| x.pending()))
    }

    /// Ends every request still held (the harness's last resort).
    pub(super) fn give_up(&mut self, why: &str) {
        for r in 0..self.fleet.ranks.len() {
            for f in self.fleet.ranks[r].engine.abandon(why) {
                self.finish_request(f.id as u32, crate::report::Status::Unschedulable, Some(why.to_string()));
            }
        }
    }

    /// Queues each idle rank's next transfer deadline (at once if already due) where it is
    /// not queued yet; a busy worker's wait for its pass end.
    pub(super) fn refresh_deadlines(&mut self) {
        if self.offload.is_none() {
            return;
        }
        self.deadlines.resize(self.fleet.ranks.len(), None);
        for (r, rank) in self.fleet.ranks.iter().enumerate() {
            if self.fleet.workers[rank.group].busy {
                continue;
            }
            let at = rank.engine.transfers().and_then(|x| x.next_deadline()).map(|d| d.max(self.now_ms));
            if let Some(d) = at
                && at != self.deadlines[r]
            {
                self.events.push(d, EventKind::TransferDeadline { rank: r as u32 });
            }
            self.deadlines[r] = at;
        }
    }

    /// A queued deadline that moved, or whose worker is busy, is no time to stop the clock.
    pub(super) fn drop_stale_deadlines(&mut self) {
        while let Some(e) = self.events.peek() {
            let EventKind::TransferDeadline { rank } = e.kind else { return };
            let r = rank as usize;
            let busy = self.fleet.workers[self.fleet.ranks[r].group].busy;
            if !busy && self.deadlines[r] == Some(e.at_ms) {
                return;
            }
            if busy && self.deadlines[r] == Some(e.at_ms) {
                self.deadlines[r] = None;
            }
            self.events.pop();
        }
    }

    /// Rank `r`'s deadline queued for `at` is popped at `t`: an idle rank settles what is due
    /// (true if it did).
    pub(super) fn transfer_deadline(&mut self, r: usize, at: f64, t: f64) -> bool {
        if self.deadlines[r] == Some(at) {
            self.deadlines[r] = None;
        }
        if self.fleet.workers[self.fleet.ranks[r].group].busy {
            return false;
        }
        let Some(x) = self.fleet.ranks[r].engine.transfers_mut() else { return false };
        if !x.next_deadline().is_some_and(|d| d <= t) {
            return false;
        }
        let mut events = Vec::new();
        x.settle(t, &mut events);
        self.apply_tier_events(r, &events, t);
        true
    }

    /// Idle workers settle their due transfers, in the queue's order, until none is due
    /// (settling may bring another rank's deadline forward); true if any did.
    pub(super) fn settle_due_transfers(&mut self, t: f64) -> bool {
        if self.offload.is_none() {
            return false;
        }
        let mut any = false;
        for _ in 0..super::MAX_ROUNDS {
            self.refresh_deadlines();
            let due = self.events.peek().is_some_and(|e| e.at_ms <= t && matches!(e.kind, EventKind::TransferDeadline { .. }));
            if !due {
                return any;
            }
            let e = self.events.pop().expect("peeked");
            let EventKind::TransferDeadline { rank } = e.kind else { unreachable!("peeked a deadline") };
            any |= self.transfer_deadline(rank as usize, e.at_ms, t);
        }
        any
    }

    /// KV events the tiers caused outside a pass reach the router.
    pub(super) fn apply_tier_events(&mut self, r: usize, events: &[servesim_engine::kv::KvEvent], t: f64) {
        if events.is_empty() {
            return;
        }
        let (pool, target) = (self.fleet.ranks[r].pool, self.fleet.ranks[r].target);
        self.fleet.pools[pool].router.apply_events(target, events, t);
        // The event stream carries them like any other KV event.
        if let Some(log) = &mut self.fleet.idle_events {
            log.extend(events.iter().map(|e| (r, e.clone())));
        }
    }

    /// Starts passes on idle workers with work (see the module's order); true if any started.
    pub(super) fn drive(&mut self, t: f64) -> bool {
        let mut changed = false;
        let mut rounds = 0;
        'round: loop {
            for w in 0..self.fleet.workers.len() {
                let mut retries = 0;
                while !self.fleet.workers[w].busy && self.fleet.workers[w].ranks.clone().any(|r| self.fleet.ranks[r].engine.has_work()) {
                    rounds += 1;
                    if rounds > super::MAX_ROUNDS {
                        self.give_up("passes at one instant do not converge");
                        return true;
                    }
                    match self.start_offload_pass(w, t) {
                        Started::Later | Started::Effects => {
                            changed = true;
                            continue 'round;
                        }
                        Started::Nothing { retry: true } if retries < 64 => retries += 1,
                        Started::Nothing { .. } => break,
                    }
                }
            }
            return changed;
        }
    }

    /// Steps every rank of worker `w` with work at `t`. A rank's compute may start later than
    /// `t` (a fence); the worker's pass ends with its slowest rank.
    fn start_offload_pass(&mut self, w: usize, t: f64) -> Started {
        let mut end = t;
        let mut retry = false;
        for r in self.fleet.workers[w].ranks.clone() {
            let rank = &mut self.fleet.ranks[r];
            if !rank.engine.has_work() {
                continue;
            }
            if let Some(x) = rank.engine.transfers_mut() {
                x.set_pass_time(t);
            }
            rank.engine.step_into(&mut rank.pending);
            let out = &rank.pending;
            let start = out.compute_start_ms.unwrap_or(t);
            // As the reference adds them: prefill, then decode, to the compute start.
            end = end.max(start + duration_ms(out.prefill_duration) + duration_ms(out.duration - out.prefill_duration));
            retry |= rank.engine.transfers().is_some_and(|x| x.retry_at_once());
            rank.stepped = true;
            self.passes += 1;
            if self.checks
                && let Err(e) = rank.engine.check()
            {
                panic!("worker {w}, rank {r}: {e} after the pass at {t} ms");
            }
        }
        self.fleet.workers[w].busy = true;
        if end > t {
            self.events.push(end, EventKind::PassEnd { worker: w as u32 });
            return Started::Later;
        }
        // It ends now: its boundary, then whether anything of it is visible (an admission, a
        // preemption, work scheduled, an output, a KV event), then its effects.
        let idle_events = self.offload_boundary(w, t);
        let visible = idle_events
            || self.fleet.workers[w].ranks.clone().any(|r| {
                let p = &self.fleet.ranks[r].pending;
                self.fleet.ranks[r].stepped
                    && !(p.admissions.is_empty()
                        && p.preempted.is_empty()
                        && p.scheduled_tokens == 0
                        && p.tokens.is_empty()
                        && p.steady_tokens == 0
                        && p.finished.is_empty()
                        && p.kv_events.is_empty())
            });
        self.apply_worker_pass(w, t);
        if visible { Started::Effects } else { Started::Nothing { retry } }
    }

    /// At a pass end of worker `w`: every rank settles its transfers and submits the pass's
    /// stores; a rank that sat the pass out sends the events this causes to the router itself
    /// (true if there were any).
    pub(super) fn offload_boundary(&mut self, w: usize, t: f64) -> bool {
        let mut idle_events = false;
        for r in self.fleet.workers[w].ranks.clone() {
            let rank = &mut self.fleet.ranks[r];
            let Some(x) = rank.engine.transfers_mut() else { continue };
            if rank.stepped {
                x.pass_boundary(t, &mut rank.pending.kv_events);
            } else {
                let mut events = Vec::new();
                x.pass_boundary(t, &mut events);
                idle_events |= !events.is_empty();
                self.apply_tier_events(r, &events, t);
            }
        }
        idle_events
    }
}
