//! The engine-core interface the harness drives: `submit`, then `step` once per forward pass.
//! The core has no clock: `step` computes a pass and says how long it takes; the harness owns
//! time and stamps the pass's effects at its end.

use crate::args::{ArgsError, Backend, EngineArgs};
use crate::kv::KvEvent;
use crate::metrics::RankMetrics;
use crate::sched::sglang::SglangCore;
use crate::sched::vllm::VllmCore;
use crate::sequence::Request;
use std::time::Duration;

/// How a request left the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Generated all its tokens (or reached `max_model_len`).
    Completed,
    /// Refused at admission: larger than the pool, or its prompt reaches `max_model_len`.
    Rejected(String),
    /// Can never be scheduled (the reference aborts the whole replay here); the reason says why.
    Unschedulable(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finished {
    pub id: u64,
    pub outcome: Outcome,
    /// Steady tokens of its current streak not yet reported in `PassOutput::streak_ends`
    /// (the last of them emitted at this pass's end).
    pub steady_tokens: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    pub id: u64,
    /// Prompt (and, on readmission, generated) tokens reused from the prefix cache.
    pub reused_tokens: u32,
    pub readmission: bool,
}

/// Everything one pass did, in the order the harness applies it at the pass end.
#[derive(Debug, Default)]
pub struct PassOutput {
    pub duration: Duration,
    pub admissions: Vec<Admission>,
    /// Requests that emitted one token at the pass end, in running order (with steady
    /// tokens on, only those whose token is not steady).
    pub tokens: Vec<u64>,
    /// Tokens emitted at the pass end by requests that also emitted at this rank's previous
    /// pass end and had two or more tokens already: their gap is the time between the two
    /// pass ends, and none is a first or second token. Counted, not listed (only when the
    /// harness turns steady tokens on): most of a replay's tokens are these.
    pub steady_tokens: u64,
    /// (request, steady tokens) for each streak that ended at this pass without a token (a
    /// request that skipped the pass or was preempted): its last token came at the previous
    /// pass end.
    pub streak_ends: Vec<(u64, u32)>,
    pub finished: Vec<Finished>,
    pub preempted: Vec<u64>,
    pub kv_events: Vec<KvEvent>,
    pub metrics: RankMetrics,
    /// Tokens of scheduled chunks that hold prompt tokens (the report's committed prefill).
    pub committed_prefill_tokens: u64,
    /// Tokens computed by the pass.
    pub scheduled_tokens: u64,
}

impl Clone for PassOutput {
    fn clone(&self) -> Self {
        let mut out = PassOutput::default();
        out.clone_from(self);
        out
    }

    /// Field by field, so a harness copying every pass's output reuses its vectors' buffers
    /// (the derived version allocates them all afresh: one malloc and free per vector per pass).
    fn clone_from(&mut self, src: &Self) {
        // Destructured, so a new field cannot be forgotten here.
        let PassOutput { duration, admissions, tokens, steady_tokens, streak_ends, finished, preempted, kv_events, metrics, committed_prefill_tokens, scheduled_tokens } = src;
        self.duration = *duration;
        self.admissions.clone_from(admissions);
        self.tokens.clone_from(tokens);
        self.steady_tokens = *steady_tokens;
        self.streak_ends.clone_from(streak_ends);
        self.finished.clone_from(finished);
        self.preempted.clone_from(preempted);
        self.kv_events.clone_from(kv_events);
        self.metrics = *metrics;
        self.committed_prefill_tokens = *committed_prefill_tokens;
        self.scheduled_tokens = *scheduled_tokens;
    }
}

impl PassOutput {
    pub fn clear(&mut self) {
        self.duration = Duration::ZERO;
        self.admissions.clear();
        self.tokens.clear();
        self.steady_tokens = 0;
        self.streak_ends.clear();
        self.finished.clear();
        self.preempted.clear();
        self.kv_events.clear();
        self.committed_prefill_tokens = 0;
        self.scheduled_tokens = 0;
    }

}

/// What a decode destination did with a reservation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reservation {
    /// Blocks allocated, sharing this many resident prefix blocks.
    Reserved { resident_blocks: u32 },
    /// Not enough free blocks now; nothing done.
    NoRoom,
    /// The prompt is larger than the pool.
    NeverFits,
}

/// One engine core (one data-parallel rank).
#[derive(Debug)]
pub enum Engine {
    Vllm(VllmCore),
    Sglang(SglangCore),
}

impl Engine {
    /// Builds a rank's core; `emit_events` turns on KV events (only worth it when a router
    /// consumes them).
    pub fn new(args: &EngineArgs, dp_rank: u32, emit_events: bool) -> Result<Self, ArgsError> {
        Self::rank_of(args, dp_rank, 1, emit_events)
    }

    /// Builds rank `dp_rank` of a worker with `dp_size` data-parallel ranks. With more than
    /// one rank SGLang runs DP attention, which splits the chunked-prefill size between the
    /// ranks and scales `schedule_conservativeness` by 0.3 (both measured on the reference);
    /// the vLLM core is the same on every rank.
    pub fn rank_of(args: &EngineArgs, dp_rank: u32, dp_size: u32, emit_events: bool) -> Result<Self, ArgsError> {
        args.validate()?;
        match args.backend {
            Backend::Vllm => Ok(Engine::Vllm(VllmCore::new(args, dp_rank, emit_events)?)),
            Backend::Sglang => Ok(Engine::Sglang(SglangCore::new(args, dp_rank, dp_size, emit_events)?)),
            Backend::Trtllm => Err(ArgsError("engine.backend \"trtllm\" is not supported by servesim".into())),
        }
    }

    /// Reports steady tokens as a count (`PassOutput::steady_tokens`) instead of listing
    /// them. Only the vLLM core has them; the SGLang core lists every token.
    pub fn set_steady_tokens(&mut self, on: bool) {
        if let Engine::Vllm(c) = self {
            c.set_steady_tokens(on);
        }
    }

    /// (request, steady tokens) of every streak still open, closing them: at the end of a
    /// run cut short, the harness settles what it was not told (their last token came at
    /// this rank's last pass end).
    pub fn take_open_streaks(&mut self) -> Vec<(u64, u32)> {
        match self {
            Engine::Vllm(c) => c.take_open_streaks(),
            Engine::Sglang(_) => Vec::new(),
        }
    }

    pub fn submit(&mut self, req: Request) {
        match self {
            Engine::Vllm(c) => c.submit(req),
            Engine::Sglang(c) => c.submit(req),
        }
    }

    /// A prefill worker's transfer of request `id` is done: the KV it held is freed.
    pub fn release_source(&mut self, id: u64) {
        match self {
            Engine::Vllm(c) => {
                c.release_source(id);
            }
            Engine::Sglang(c) => c.release_source(id),
        }
    }

    /// A decode rank takes room for a prompt about to be transferred (see [`Reservation`]).
    pub fn reserve_destination(&mut self, req: Request) -> Reservation {
        match self {
            Engine::Vllm(c) => c.reserve_destination(req),
            Engine::Sglang(c) => c.reserve_destination(req),
        }
    }

    /// The transfer to a reservation is done: the request decodes from the next pass.
    pub fn activate(&mut self, id: u64) -> bool {
        match self {
            Engine::Vllm(c) => c.activate(id),
            Engine::Sglang(c) => c.activate(id),
        }
    }

    /// Whether requests wait for a reservation on this rank. While they do, only requests
    /// whose KV is already in place join the batch (both schedulers).
    pub fn set_destinations_pending(&mut self, pending: bool) {
        match self {
            Engine::Vllm(c) => c.set_destinations_pending(pending),
            Engine::Sglang(c) => c.set_destinations_pending(pending),
        }
    }

    /// Blocks (pages) nobody holds, cached or not, as the reference's capacity check after an
    /// activation counts them: an SGLang radix cache's free pages only (an activation that
    /// takes a cached copy instead of its own page frees one and locks the other), the vLLM
    /// pool's free and unreferenced cached blocks alike.
    pub fn free_blocks(&self) -> u32 {
        match self {
            Engine::Vllm(c) => c.available_blocks(),
            Engine::Sglang(c) => c.free_pages(),
        }
    }

    /// Blocks (pages) a new allocation could take now, evicting cached ones if need be.
    pub fn available_blocks(&self) -> u32 {
        match self {
            Engine::Vllm(c) => c.available_blocks(),
            Engine::Sglang(c) => c.available_blocks(),
        }
    }

    /// Nothing runs, yet requests wait (none of them a transferred request free to join):
    /// the reference's engine loop then starts another pass, which begins with one more
    /// destination reservation attempt.
    pub fn idle_with_queue(&self) -> bool {
        match self {
            Engine::Vllm(c) => c.idle_with_queue(),
            Engine::Sglang(c) => c.idle_with_queue(),
        }
    }

    /// The rank ran a pass that could do nothing (see `idle_with_queue`): an SGLang
    /// scheduler's `new_token_ratio` falls to its floor; vLLM keeps no such state.
    pub fn idle_pass(&mut self) {
        if let Engine::Sglang(c) = self {
            c.idle_pass();
        }
    }

    /// Requests held (waiting or running).
    pub fn in_flight(&self) -> usize {
        match self {
            Engine::Vllm(c) => c.in_flight(),
            Engine::Sglang(c) => c.in_flight(),
        }
    }

    /// Whether a pass now would do anything (a prefill rank waiting for held KV to be
    /// released has requests in flight but no work).
    pub fn has_work(&self) -> bool {
        match self {
            Engine::Vllm(c) => c.has_work(),
            Engine::Sglang(c) => c.has_work(),
        }
    }

    /// Whether the core has requests but waits for a release or an activation before it can
    /// do anything with them.
    pub fn stalled(&self) -> bool {
        !self.has_work() && self.in_flight() > 0
    }

    /// Computes one forward pass starting at `now_ms`.
    pub fn step(&mut self, now_ms: f64) -> &PassOutput {
        match self {
            Engine::Vllm(c) => c.step(now_ms),
            Engine::Sglang(c) => c.step(now_ms),
        }
    }

    /// Ends every request still held, as unschedulable for `reason` (the harness's guard
    /// against a rank that stopped making progress).
    pub fn abandon(&mut self, reason: &str) -> Vec<Finished> {
        match self {
            Engine::Vllm(c) => c.abandon(reason),
            Engine::Sglang(c) => c.abandon(reason),
        }
    }

    pub fn metrics(&self) -> RankMetrics {
        match self {
            Engine::Vllm(c) => c.metrics(),
            Engine::Sglang(c) => c.metrics(),
        }
    }

    /// Every cache-visible block hash of a vLLM core, sorted: what a router's indexer fed by
    /// this rank's KV events should hold (for tests). None for other backends.
    pub fn cached_hashes(&self) -> Option<Vec<u64>> {
        match self {
            Engine::Vllm(c) => Some(c.cached_hashes()),
            Engine::Sglang(_) => None,
        }
    }

    /// Checks internal invariants (blocks balance); for tests and debug builds.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Engine::Vllm(c) => c.check(),
            Engine::Sglang(c) => c.check(),
        }
    }
}
