//! The engine contract's data: what one pass did ([`PassOutput`]), how requests leave
//! ([`Finished`], [`Outcome`]), who was admitted ([`Admission`]) and what a decode
//! destination did with a reservation ([`Reservation`]). The schedulers produce these; the
//! harness applies them at the pass end.

use crate::kv::KvEvent;
use crate::metrics::RankMetrics;
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
    /// With native offload, on a request's first admission: the part of `reused_tokens` that
    /// came from the host tier (G1 tokens count first). None otherwise.
    pub host_reused_tokens: Option<u32>,
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
    /// The prefill part of `duration`.
    pub prefill_duration: Duration,
    /// With native offload: when the pass's compute may start (after stores still reading
    /// blocks it writes); its admissions still count from the pass start.
    pub compute_start_ms: Option<f64>,
    /// The pass's forward-pass metrics, when the harness asked for them
    /// (`Scheduler::set_forward_pass_metrics`).
    pub fpm: ForwardPassMetrics,
    /// The vision-encoder part of `duration` (multimodal requests).
    pub encoder_duration: Duration,
    /// Requests whose images the encoder ran in this pass (its time is on their path).
    pub encoded: Vec<u64>,
    /// Images first needed by a request in this pass, and those of them found in the encoder
    /// cache.
    pub encoder_lookups: u32,
    pub encoder_hits: u32,
}

/// What a pass scheduled and what waited, as the pass started (Dynamo's forward-pass metrics,
/// which a planner reads): sums of tokens over the requests of each kind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForwardPassMetrics {
    /// Requests computing prompt tokens, the tokens they compute, and the prompt tokens they
    /// had before (cached or computed earlier).
    pub num_prefill_requests: u64,
    pub sum_prefill_tokens: u64,
    pub sum_prefill_kv_tokens: u64,
    /// Requests decoding, and their sequence lengths (prompt and tokens generated so far).
    pub num_decode_requests: u64,
    pub sum_decode_kv_tokens: u64,
    /// Waiting requests never admitted, and their prompt lengths.
    pub num_queued_prefill: u64,
    pub sum_queued_prefill_tokens: u64,
    /// Waiting requests with KV to hold again (preempted: their sequence; transferred to a
    /// decode worker: their prompt).
    pub num_queued_decode: u64,
    pub sum_queued_decode_kv_tokens: u64,
}

impl ForwardPassMetrics {
    pub fn prefill(&mut self, computed: u32, before: u32) {
        self.num_prefill_requests += 1;
        self.sum_prefill_tokens += computed as u64;
        self.sum_prefill_kv_tokens += before as u64;
    }

    pub fn decode(&mut self, len: u32) {
        self.num_decode_requests += 1;
        self.sum_decode_kv_tokens += len as u64;
    }

    pub fn queued_prefill(&mut self, prompt: u32) {
        self.num_queued_prefill += 1;
        self.sum_queued_prefill_tokens += prompt as u64;
    }

    pub fn queued_decode(&mut self, kv: u32) {
        self.num_queued_decode += 1;
        self.sum_queued_decode_kv_tokens += kv as u64;
    }
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
        let PassOutput {
            duration,
            admissions,
            tokens,
            steady_tokens,
            streak_ends,
            finished,
            preempted,
            kv_events,
            metrics,
            committed_prefill_tokens,
            scheduled_tokens,
            prefill_duration,
            compute_start_ms,
            fpm,
            encoder_duration,
            encoded,
            encoder_lookups,
            encoder_hits,
        } = src;
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
        self.prefill_duration = *prefill_duration;
        self.compute_start_ms = *compute_start_ms;
        self.fpm = *fpm;
        self.encoder_duration = *encoder_duration;
        self.encoded.clone_from(encoded);
        self.encoder_lookups = *encoder_lookups;
        self.encoder_hits = *encoder_hits;
    }
}

impl PassOutput {
    pub fn clear(&mut self) {
        self.duration = Duration::ZERO;
        // The prefix-cache counters are this pass's (the gauges are set again at its end).
        self.metrics.cache_hit_tokens = 0;
        self.metrics.cache_query_tokens = 0;
        self.admissions.clear();
        self.tokens.clear();
        self.steady_tokens = 0;
        self.streak_ends.clear();
        self.finished.clear();
        self.preempted.clear();
        self.kv_events.clear();
        self.committed_prefill_tokens = 0;
        self.scheduled_tokens = 0;
        self.prefill_duration = Duration::ZERO;
        self.compute_start_ms = None;
        self.fpm = ForwardPassMetrics::default();
        self.encoder_duration = Duration::ZERO;
        self.encoded.clear();
        self.encoder_lookups = 0;
        self.encoder_hits = 0;
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
