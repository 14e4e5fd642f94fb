//! Equal-share transfer service: how a shared pool (cluster-shared G2, G3) moves bytes.
//!
//! - Each job belongs to a client (a rank or a worker) and goes one way (read or write).
//! - A job moves nothing before its first byte is due (`ready`); from then on its rate is
//!   `min(client rate / the client's moving jobs that way, shared rate / all moving jobs that
//!   way)`. Shares that a capped job leaves unused are not handed to others.
//! - Every job start, first byte and completion changes the shares, so the service advances
//!   from one such event to the next; jobs finishing at one instant are reported in the order
//!   they were submitted.
//!
//! Times are the harness's milliseconds, handed in; the service has no clock of its own.

use rustc_hash::FxHashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Way {
    /// Into the faster tier (host to device, G3 to host).
    Read,
    /// Out of it.
    Write,
}

#[derive(Clone, Debug)]
pub struct Job {
    pub id: u64,
    pub client: u64,
    pub way: Way,
    /// When its first byte is due.
    pub ready: f64,
    /// Bytes still to move.
    pub bytes: f64,
    /// Bytes per ms (infinite: unlimited).
    pub client_rate: f64,
    pub shared_rate: f64,
}

#[derive(Debug, Default)]
pub struct FairShare {
    now: f64,
    /// In submission order.
    jobs: Vec<Job>,
}

/// Moving jobs at one instant, per way: in all, and per client.
struct Moving {
    all: [u32; 2],
    by_client: FxHashMap<u64, [u32; 2]>,
}

fn slot(way: Way) -> usize {
    match way {
        Way::Read => 0,
        Way::Write => 1,
    }
}

impl Moving {
    fn at(jobs: &[Job], now: f64) -> Self {
        let mut m = Moving { all: [0; 2], by_client: FxHashMap::default() };
        for j in jobs.iter().filter(|j| j.ready <= now) {
            m.all[slot(j.way)] += 1;
            m.by_client.entry(j.client).or_default()[slot(j.way)] += 1;
        }
        m
    }

    fn rate(&self, j: &Job) -> f64 {
        let mine = self.by_client.get(&j.client).map_or(0, |c| c[slot(j.way)]).max(1) as f64;
        let all = self.all[slot(j.way)].max(1) as f64;
        (j.client_rate / mine).min(j.shared_rate / all)
    }
}

impl FairShare {
    pub fn now(&self) -> f64 {
        self.now
    }

    pub fn has_client_jobs(&self, client: u64) -> bool {
        self.jobs.iter().any(|j| j.client == client)
    }

    /// Adds a job (the caller has advanced the service to its submission time).
    pub fn submit(&mut self, job: Job) {
        self.jobs.push(job);
    }

    /// Withdraws a job; false if it is not here (it finished or never was).
    pub fn cancel(&mut self, id: u64) -> bool {
        let n = self.jobs.len();
        self.jobs.retain(|j| j.id != id);
        self.jobs.len() != n
    }

    fn event_of(&self, j: &Job, moving: &Moving) -> f64 {
        if j.ready > self.now { j.ready } else { self.now + j.bytes / moving.rate(j) }
    }

    /// The next first byte or completion under the present shares.
    pub fn next_event(&self) -> Option<f64> {
        let moving = Moving::at(&self.jobs, self.now);
        self.jobs.iter().map(|j| self.event_of(j, &moving)).min_by(f64::total_cmp)
    }

    /// Serves bytes up to `target`; returns (job, completion time) of the jobs that finished,
    /// by time, then submission order.
    pub fn advance(&mut self, target: f64) -> Vec<(u64, f64)> {
        let target = target.max(self.now);
        let mut done = Vec::new();
        loop {
            let moving = Moving::at(&self.jobs, self.now);
            let next_event = self.jobs.iter().map(|j| self.event_of(j, &moving)).min_by(f64::total_cmp);
            let step_to = next_event.unwrap_or(target).min(target);
            let elapsed = step_to - self.now;
            // Decide who finishes at this step by its event time, not by subtracting bytes: a
            // residue below one clock step at a large time would never drain.
            let plan: Vec<(f64, bool)> = self
                .jobs
                .iter()
                .map(|j| if j.ready <= self.now { (moving.rate(j), self.event_of(j, &moving) <= step_to) } else { (0.0, false) })
                .collect();
            for (j, (rate, finishes)) in self.jobs.iter_mut().zip(plan) {
                j.bytes = if finishes { 0.0 } else { (j.bytes - elapsed * rate).max(0.0) };
            }
            self.now = step_to;
            let before = done.len();
            let now = self.now;
            self.jobs.retain(|j| {
                let finished = j.ready <= now && j.bytes == 0.0;
                if finished {
                    done.push((j.id, now));
                }
                !finished
            });
            if next_event.is_none_or(|e| e > target) {
                break;
            }
            if self.now == target && done.len() == before {
                // At the target a waiting job may just have become ready: stop only once no
                // event is left at or before it.
                let moving = Moving::at(&self.jobs, self.now);
                if self.jobs.iter().all(|j| self.event_of(j, &moving) > target) {
                    break;
                }
            }
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u64, client: u64, ready: f64, client_rate: f64, shared_rate: f64) -> Job {
        Job { id, client, way: Way::Write, ready, bytes: 1e6, client_rate, shared_rate }
    }

    #[test]
    fn jobs_share_the_client_and_pool_rates_equally() {
        // Two jobs of one client at 1e6 B/ms: each moves at half rate and both end at 2 ms.
        let mut s = FairShare::default();
        s.submit(job(1, 0, 0.0, 1e6, f64::INFINITY));
        s.submit(job(2, 0, 0.0, 1e6, f64::INFINITY));
        assert_eq!(s.advance(10.0), vec![(1, 2.0), (2, 2.0)]);
        // Two clients under a shared cap of 1e6 B/ms: the same.
        let mut s = FairShare::default();
        s.submit(job(1, 0, 0.0, 1e6, 1e6));
        s.submit(job(2, 1, 0.0, 1e6, 1e6));
        assert_eq!(s.advance(10.0), vec![(1, 2.0), (2, 2.0)]);
    }

    #[test]
    fn a_waiting_job_takes_no_share_until_its_first_byte() {
        let mut s = FairShare::default();
        s.submit(job(1, 0, 0.0, 1e6, f64::INFINITY));
        s.submit(job(2, 0, 0.5, 1e6, f64::INFINITY));
        // Job 1 alone for 0.5 ms (half done), then both at half rate: job 1 ends at 1.5 ms,
        // job 2 has then 0.5 MB left at full rate: 2.0 ms.
        assert_eq!(s.next_event(), Some(0.5));
        assert_eq!(s.advance(10.0), vec![(1, 1.5), (2, 2.0)]);
        assert!(s.next_event().is_none());
    }

    #[test]
    fn cancelling_reflows_the_rest() {
        let mut s = FairShare::default();
        s.submit(job(1, 0, 0.0, 1e6, f64::INFINITY));
        s.submit(job(2, 0, 0.0, 1e6, f64::INFINITY));
        assert!(s.advance(1.0).is_empty());
        assert!(s.cancel(1) && !s.cancel(1));
        assert_eq!(s.advance(10.0), vec![(2, 1.5)]);
    }
}
