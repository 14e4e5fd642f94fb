//! The vLLM-style scheduler: `waiting` + `running`, one token budget per pass, running
//! requests first, FIFO admission gated on the whole sequence's blocks, inline preemption
//! with recompute. The rules found against the reference are listed in `docs/fidelity.md`.
//! KV that comes from elsewhere (the disaggregation hand-off, native KV offload) enters the
//! one admission loop through a connector, as in vLLM (`connector.rs`); without offload none
//! of `offload/`'s and `onboarding.rs`'s code runs.
//!
//! TRT-LLM runs the same core under another capacity policy ([`Capacity::NoEvict`], its
//! `guaranteed_no_evict`): outputs are clamped to what the pool can hold when a request
//! arrives, a request is admitted only when the pool can take it to completion besides what
//! the running requests may still take, no prefix hit is given back for recomputation, and
//! nothing is ever preempted.

mod connector;
mod encoder;
mod handoff;
mod offload;
mod onboarding;

use crate::args::{ArgsError, Backend, EngineArgs, G2Scope, KvManager, PreemptionMode, WorkerType};
use crate::kv::kvbm::pool::KvbmPool;
use crate::kv::{BlockPool, EventSink, KvEvent, Pool, SlotId};
use crate::metrics::RankMetrics;
use crate::perf::PassTimer;
use crate::sched::contract::{KvBlocks, RankSetup, Scheduler, TransferClock};
use crate::sched::output::{Admission, Finished, ForwardPassMetrics, Outcome, PassOutput};
use crate::sequence::{Request, Sequence};
use connector::{Connector, Handoff};
use std::collections::VecDeque;

#[derive(Clone, Debug)]
struct Config {
    block_size: u32,
    /// log2 of the block size, when it is a power of two.
    block_shift: Option<u32>,
    num_blocks: u32,
    max_num_seqs: usize,
    /// Per-pass token budget (u64::MAX when unbounded).
    budget: u64,
    chunked_prefill: bool,
    prefix_caching: bool,
    preemption: PreemptionMode,
    max_model_len: Option<u32>,
    worker_type: WorkerType,
    capacity: Capacity,
}

/// How admission weighs the pool (the reference's scheduling policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capacity {
    /// vLLM: a request needs room for its sequence as it stands; running requests that run
    /// out of room preempt others.
    Optimistic,
    /// TRT-LLM's `guaranteed_no_evict`: a request needs room for its prompt and its whole
    /// output, besides every running request's remaining blocks to completion; no prefix hit
    /// is given back for recomputation, and no request is ever preempted.
    NoEvict,
}

/// Prefix-cache lookup for a request about to be (re)admitted.
#[derive(Clone, Debug, Default)]
struct PrefixHit {
    /// Reusable tokens, after the recompute-last-block cap.
    cached_tokens: u32,
    /// Hit blocks currently held by other requests (only these discount admission).
    active_blocks: u32,
    slots: Vec<SlotId>,
}

/// Work scheduled for one request in the current pass.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    seq: u32,
    tokens: u32,
    /// The sequence's length when it was scheduled (prompt and tokens generated so far).
    seq_len: u32,
    /// Prompt tokens present after the chunk, and before it (cached or computed earlier).
    prompt_after: u32,
    prompt_before: u32,
}

impl Chunk {
    fn has_prompt(&self) -> bool {
        self.prompt_after > self.prompt_before
    }
}

enum Scheduled {
    Yes,
    Blocked,
    /// The request asking for blocks was itself preempted.
    SelfPreempted,
    /// Its next tokens are an image whose encoder output can be neither found nor computed in
    /// this pass (budget or encoder cache spent): skipped, as vLLM skips it.
    EncoderWait,
}

#[derive(Debug)]
pub struct VllmCore {
    cfg: Config,
    timer: PassTimer,
    pool: Pool,
    dp_rank: u32,
    /// Sequences by slot; queues hold slot indices.
    seqs: Vec<Option<Sequence>>,
    free_seq_slots: Vec<u32>,
    waiting: VecDeque<u32>,
    running: Vec<u32>,
    preemptions_total: u64,
    chunks: Vec<Chunk>,
    scratch: (Vec<u32>, Vec<u8>),
    run_scratch: Vec<(SlotId, u64, u64)>,
    spare_slots: Vec<SlotId>,
    /// Count steady tokens instead of listing them (see `PassOutput::steady_tokens`).
    steady_tokens: bool,
    /// Fill each pass's forward-pass metrics (a planner reads them).
    fpm: bool,
    /// Positions in `running` of requests that finished this pass, ascending.
    done: Vec<u32>,
    /// Requests admitted this pass with nothing to compute (their whole sequence was
    /// cached, which only TRT-LLM allows): their first token takes a decode step.
    whole_hits: Vec<u32>,
    /// Requests submitted or reserved so far: the next one's `Sequence::order`.
    queued_total: u64,
    /// Boxed: it changes hands with the harness every pass (`step_into`) as a pointer.
    out: Box<PassOutput>,
    /// Where KV comes from besides this rank's computation: nowhere, the other side of a
    /// disaggregated hand-off, or the offload tiers (see `connector.rs`).
    connector: Connector,
    /// Per sequence slot, for a pass (which requests were scheduled).
    scratch_flags: Vec<bool>,
    /// Multimodal requests: the encoder budget and cache, from the first request with images.
    encoder: Option<Box<encoder::EncoderState>>,
    /// (encoder budget, encoder cache tokens) from the arguments.
    encoder_args: (u32, u32),
}

impl VllmCore {
    /// The pass timer (its power evidence, for the report).
    pub(crate) fn timer(&self) -> &PassTimer {
        &self.timer
    }

    pub fn new(args: &EngineArgs, setup: &RankSetup) -> Result<Self, ArgsError> {
        let cfg = Config {
            block_size: args.block_size(),
            block_shift: args.block_size().is_power_of_two().then(|| args.block_size().trailing_zeros()),
            num_blocks: args.num_gpu_blocks(),
            max_num_seqs: args.max_num_seqs.map_or(usize::MAX, |n| n as usize),
            budget: args.max_num_batched_tokens.map_or(u64::MAX, u64::from),
            chunked_prefill: args.enable_chunked_prefill,
            prefix_caching: args.enable_prefix_caching,
            preemption: args.preemption_mode,
            max_model_len: args.max_model_len,
            worker_type: args.worker_type,
            capacity: if args.backend == Backend::Trtllm { Capacity::NoEvict } else { Capacity::Optimistic },
        };
        // No events without prefix caching, nor from decode workers (Dynamo publishes none).
        let events = setup.emit_events && cfg.prefix_caching && cfg.worker_type != WorkerType::Decode;
        let sink = EventSink::new(events, setup.dp_rank);
        let mut pool = match args.kv_manager {
            KvManager::Native => Pool::Native(BlockPool::new(cfg.num_blocks, sink)),
            KvManager::Kvbm => Pool::Kvbm(KvbmPool::new(cfg.num_blocks, args.eviction_backend, sink)),
        };
        let connector = match offload::Offload::new(args, &setup.tiers, setup.worker, events) {
            _ if cfg.worker_type != WorkerType::Aggregated => Connector::Handoff(Handoff::default()),
            Some(o) => Connector::Offload(Box::new(o)),
            None => Connector::None,
        };
        if let Some(host) = &args.native_host_offload {
            // A shared pool's stores keep their device sources referenced until they land.
            pool.native_mut().track_store_readers(host.scope == G2Scope::ClusterShared);
        }
        Ok(VllmCore {
            pool,
            timer: PassTimer::from_args_with(args, setup.profile.as_ref(), setup.kernels.as_ref())?,
            cfg,
            dp_rank: setup.dp_rank,
            seqs: Vec::new(),
            free_seq_slots: Vec::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            preemptions_total: 0,
            chunks: Vec::new(),
            scratch: (Vec::new(), Vec::new()),
            run_scratch: Vec::new(),
            spare_slots: Vec::new(),
            steady_tokens: false,
            fpm: false,
            done: Vec::new(),
            whole_hits: Vec::new(),
            queued_total: 0,
            out: Box::default(),
            connector,
            scratch_flags: Vec::new(),
            encoder: None,
            encoder_args: (args.encoder_budget(), args.encoder_cache_tokens()),
        })
    }

    fn next_order(&mut self) -> u64 {
        self.queued_total += 1;
        self.queued_total
    }

    fn new_slot(&mut self, seq: Sequence) -> u32 {
        match self.free_seq_slots.pop() {
            Some(s) => {
                self.seqs[s as usize] = Some(seq);
                s
            }
            None => {
                self.seqs.push(Some(seq));
                (self.seqs.len() - 1) as u32
            }
        }
    }

    /// The first queued request transferred here whose KV is in place.
    fn first_in_place(&self) -> Option<usize> {
        self.waiting.iter().position(|&s| self.seq(s).kv_in_place())
    }

    fn seq(&self, s: u32) -> &Sequence {
        self.seqs[s as usize].as_ref().expect("live sequence")
    }

    fn seq_mut(&mut self, s: u32) -> &mut Sequence {
        self.seqs[s as usize].as_mut().expect("live sequence")
    }

    /// Blocks holding `tokens` tokens. Block sizes are nearly always powers of two: a shift
    /// keeps an integer division out of the per-token path.
    fn blocks_for(&self, tokens: u32) -> u32 {
        match self.cfg.block_shift {
            Some(k) => (tokens + self.cfg.block_size - 1) >> k,
            None => tokens.div_ceil(self.cfg.block_size),
        }
    }

    /// Full blocks within `tokens` tokens.
    fn full_blocks(&self, tokens: u32) -> u32 {
        match self.cfg.block_shift {
            Some(k) => tokens >> k,
            None => tokens / self.cfg.block_size,
        }
    }

    fn join(&mut self, s: u32) {
        self.running.push(s);
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        seq.admissions = 1;
        self.out.admissions.push(Admission { id: seq.id, reused_tokens: 0, readmission: false, host_reused_tokens: None });
    }

    /// Why a request is refused outright for its prompt, if it is (checked before the
    /// connector is asked).
    fn prompt_rejection(&self, s: u32) -> Option<String> {
        let seq = self.seq(s);
        if let Some(limit) = self.cfg.max_model_len
            && seq.prompt_len() >= limit
        {
            return Some(format!("prompt of {} tokens reaches max_model_len {limit}", seq.prompt_len()));
        }
        // A prompt transferred from a prefill worker needs no encoder here.
        if seq.admissions == 0 && !seq.images().is_empty() && !seq.prefilled {
            return self.image_rejection(seq);
        }
        None
    }

    /// Why a fresh request is refused outright for the pool, if it is (checked once the
    /// connector has answered: with offload, after its host lookup).
    fn capacity_rejection(&self, s: u32) -> Option<String> {
        let seq = self.seq(s);
        if seq.admissions > 0 {
            return None;
        }
        match self.cfg.capacity {
            Capacity::Optimistic => {
                let blocks = self.blocks_for(seq.len());
                (blocks > self.cfg.num_blocks).then(|| format!("needs {blocks} KV blocks; the pool has {}", self.cfg.num_blocks))
            }
            Capacity::NoEvict => {
                // Only a prompt that fills the pool by itself gets here (outputs are clamped
                // on arrival).
                let blocks = self.to_completion_blocks(s);
                (blocks > self.cfg.num_blocks as u64)
                    .then(|| format!("needs {blocks} KV blocks to completion; the pool has {}", self.cfg.num_blocks))
            }
        }
    }

    /// Blocks `s` holds once it has its prompt and its whole output (TRT-LLM's reservation).
    fn to_completion_blocks(&self, s: u32) -> u64 {
        let seq = self.seq(s);
        (seq.prompt_len() as u64 + seq.max_output as u64).div_ceil(self.cfg.block_size as u64)
    }

    /// Free blocks (cached ones count as free) left once every running request has the
    /// blocks it may still take to completion: what a waiting request may claim under
    /// TRT-LLM's guaranteed-no-evict (negative as 0).
    fn no_evict_headroom(&self) -> u64 {
        self.no_evict_balance().max(0) as u64
    }

    fn no_evict_balance(&self) -> i64 {
        let free = (self.cfg.num_blocks - self.pool.active()) as i64;
        let promised: u64 =
            self.running.iter().map(|&r| self.to_completion_blocks(r).saturating_sub(self.seq(r).blocks.len() as u64)).sum();
        free - promised as i64
    }

    /// TRT-LLM's enqueue rule: the output is cut to what the pool can hold after the prompt
    /// (and to `max_model_len`); a prompt that fills the pool by itself is left as it is, to
    /// be rejected at admission.
    fn clamp_output(&self, seq: &mut Sequence) {
        let prompt = seq.prompt_len() as u64;
        let mut out = seq.max_output as u64;
        if let Some(limit) = self.cfg.max_model_len {
            out = out.min((limit as u64).saturating_sub(prompt));
        }
        let capacity = self.cfg.num_blocks as u64 * self.cfg.block_size as u64;
        if prompt < capacity {
            out = out.min(capacity - prompt);
        }
        seq.max_output = out as u32;
    }

    fn unschedulable_reason(&self, s: u32) -> String {
        let seq = self.seq(s);
        let blocks = self.blocks_for(seq.len());
        if blocks > self.cfg.num_blocks {
            format!("grew to {} tokens ({blocks} KV blocks) and no longer fits the pool of {} blocks", seq.len(), self.cfg.num_blocks)
        } else {
            format!("prompt of {} tokens exceeds max_num_batched_tokens {} with chunked prefill off", seq.prompt_len(), self.cfg.budget)
        }
    }

    /// Longest run of cache-visible full blocks from the start, capped (vLLM) so that at least
    /// the last block is recomputed when the request still needs logits.
    fn prefix_hit(&mut self, s: u32) -> PrefixHit {
        if !self.cfg.prefix_caching {
            return PrefixHit::default();
        }
        let bs = self.cfg.block_size;
        let mut scratch = std::mem::take(&mut self.scratch);
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        let len = seq.len();
        let mut max_blocks = len / bs;
        if self.cfg.capacity == Capacity::Optimistic && !(seq.generation_done() || seq.prefilled && seq.admissions == 0) {
            max_blocks = max_blocks.min(len.saturating_sub(1) / bs);
        }
        // The slot list's buffer is reused from one admission to the next.
        let mut slots = std::mem::take(&mut self.spare_slots);
        slots.clear();
        let mut hit = PrefixHit { slots, ..PrefixHit::default() };
        // Every full prompt block: those that miss are registered once computed.
        seq.hash_blocks(max_blocks.max(seq.prompt_len() / bs), bs, &mut scratch);
        for &(hash, _) in &seq.hashes()[..max_blocks as usize] {
            match self.pool.lookup(hash) {
                Some(slot) => {
                    hit.active_blocks += self.pool.is_held(slot) as u32;
                    hit.slots.push(slot);
                }
                None => break,
            }
        }
        self.scratch = scratch;
        hit.cached_tokens = (hit.slots.len() as u32 * bs).min(len);
        hit
    }

    /// The running walk's common case, in short: a decoding request whose next token needs
    /// no new block and completes none. Does exactly what `schedule` would; returns false
    /// (having done nothing) for any other request.
    fn schedule_decode(&mut self, s: u32, budget: &mut u64) -> bool {
        let (blocks_for_len, full) = {
            let seq = self.seq(s);
            (self.blocks_for(seq.len()), self.full_blocks(seq.len()))
        };
        let caching = self.cfg.prefix_caching;
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        let prompt_len = seq.prompt_len();
        let decoding = seq.num_computed >= prompt_len && seq.num_computed + 1 == seq.len();
        if !decoding || (seq.blocks.len() as u32) < blocks_for_len || (caching && full > seq.visible) {
            return false;
        }
        seq.num_computed += 1;
        let seq_len = seq.len();
        self.chunks.push(Chunk { seq: s, tokens: 1, seq_len, prompt_after: prompt_len, prompt_before: prompt_len });
        self.out.scheduled_tokens += 1;
        *budget -= 1;
        true
    }

    /// Schedules the next chunk of `s`: allocates its blocks (preempting running requests if
    /// it is running itself), marks completed blocks cache-visible, and spends budget.
    fn schedule(&mut self, s: u32, hit: Option<&PrefixHit>, budget: &mut u64, preempted: &mut bool) -> Scheduled {
        let from_waiting = hit.is_some();
        let seq = self.seq(s);
        let cached = match hit {
            Some(h) if seq.num_computed == 0 => h.cached_tokens,
            _ => 0,
        };
        let before = seq.num_computed + cached;
        let prompt_len = seq.prompt_len();
        let prompt_before = before.min(prompt_len);
        let remaining = seq.len() - before;
        if !self.cfg.chunked_prefill && (prompt_len - prompt_before) as u64 > *budget {
            return Scheduled::Blocked;
        }
        let mut desired = (remaining as u64).min(*budget) as u32;
        if desired == 0 && remaining > 0 {
            return Scheduled::Blocked;
        }
        // Text-only runs never look at a prompt's images (no encoder state without them).
        let has_images = self.encoder.is_some() && prompt_before < prompt_len && !seq.images().is_empty();
        if has_images {
            let allowed = self.plan_encoder(s, before, desired);
            if allowed < desired {
                if allowed == 0 || !self.cfg.chunked_prefill {
                    return Scheduled::EncoderWait;
                }
                desired = allowed;
            }
        }
        let target_blocks = self.blocks_for(before + desired);

        // Most decode steps need no new block.
        let covered = !from_waiting && self.seq(s).blocks.len() as u32 >= target_blocks;
        if !covered {
            loop {
                let seq = self.seqs[s as usize].as_mut().expect("live sequence");
                let held = seq.blocks.len() as u32;
                if held == 0 {
                    // Room for every block the request will need, once.
                    let final_len = seq.prompt_len() + seq.max_output;
                    seq.blocks.reserve_exact(final_len.div_ceil(self.cfg.block_size).min(self.cfg.num_blocks) as usize);
                }
                let (hits, fresh): (&[SlotId], u32) = if held == 0 {
                    let hits: &[SlotId] = if cached > 0 { &hit.expect("hit").slots } else { &[] };
                    (hits, target_blocks - hits.len() as u32)
                } else {
                    (&[], target_blocks.saturating_sub(held))
                };
                let free = self.pool.free();
                if self.pool.reserve(hits, fresh, &mut seq.blocks) {
                    if fresh > 0 && self.connector.offload().is_some() {
                        self.fence_fresh(s, fresh, free);
                    }
                    break;
                }
                if from_waiting || self.cfg.capacity == Capacity::NoEvict {
                    // No preemption under TRT-LLM (its admission makes this unreachable).
                    return Scheduled::Blocked;
                }
                let victim = match self.cfg.preemption {
                    PreemptionMode::Lifo => *self.running.last().expect("running request"),
                    PreemptionMode::Fifo => self.running[0],
                };
                self.preempt(victim, budget);
                *preempted = true;
                if victim == s {
                    return Scheduled::SelfPreempted;
                }
            }
        }

        let full = self.full_blocks(before + desired);
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        if let Some(h) = hit {
            seq.visible = h.slots.len() as u32;
        }
        seq.num_computed = before + desired;
        if has_images {
            self.commit_encoder(s, before + desired);
        }
        self.make_visible(s, full);
        let seq_len = self.seq(s).len();
        let chunk = Chunk { seq: s, tokens: desired, seq_len, prompt_after: (before + desired).min(prompt_len), prompt_before };
        if chunk.has_prompt() {
            self.out.committed_prefill_tokens += desired as u64;
        }
        self.chunks.push(chunk);
        self.out.scheduled_tokens += desired as u64;
        *budget -= desired as u64;
        Scheduled::Yes
    }

    /// Native offload: `s` just took its last `fresh` blocks (`free` slots were free before);
    /// the pass computes after any store still reading them.
    fn fence_fresh(&mut self, s: u32, fresh: u32, free: u32) {
        let seq = self.seqs[s as usize].as_ref().expect("live sequence");
        let new = &seq.blocks[seq.blocks.len() - fresh as usize..];
        let readers = self.pool.native_mut().claim_fresh(new, free.min(fresh) as usize);
        if !readers.is_empty() {
            self.connector.offload_mut().expect("an offload rank").fence(&readers);
        }
    }

    /// Registers `s`'s computed full blocks up to `full` in the prefix cache.
    fn make_visible(&mut self, s: u32, full: u32) {
        let bs = self.cfg.block_size;
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        if !self.cfg.prefix_caching || full <= seq.visible {
            return;
        }
        let run = &mut self.run_scratch;
        run.clear();
        seq.hash_blocks(full, bs, &mut self.scratch);
        let (v, f) = (seq.visible as usize, full as usize);
        run.extend(seq.blocks[v..f].iter().zip(&seq.hashes()[v..f]).map(|(&slot, &(hash, local))| (slot, hash, local)));
        self.pool.register_run(seq.parent_of(seq.visible), seq.visible, run);
        // The kvbm manager merges a block computed twice into the first copy.
        for (b, &(slot, _, _)) in (seq.visible..full).zip(run.iter()) {
            seq.blocks[b as usize] = slot;
        }
        seq.visible = full;
    }

    /// Recompute-style preemption: the victim drops all its blocks (leaf first, so they stay
    /// cached and its tail goes first) and waits at the head of the queue.
    fn preempt(&mut self, victim: u32, budget: &mut u64) {
        if let Some(o) = self.connector.offload_mut() {
            o.preempted(victim);
        }
        let pos = self.running.iter().position(|&r| r == victim).expect("victim is running");
        self.running.remove(pos);
        if let Some(k) = self.chunks.iter().position(|c| c.seq == victim) {
            let chunk = self.chunks.remove(k);
            *budget += chunk.tokens as u64;
            self.out.scheduled_tokens -= chunk.tokens as u64;
            if chunk.has_prompt() {
                self.out.committed_prefill_tokens -= chunk.tokens as u64;
            }
        }
        self.release_blocks(victim);
        if self.encoder.is_some() {
            self.forget_images(victim);
        }
        let seq = self.seqs[victim as usize].as_mut().expect("live sequence");
        seq.num_computed = 0;
        seq.visible = 0;
        let id = seq.id;
        // Its next token (after readmission) has its own gap.
        seq.emitted_last_pass = false;
        if seq.streak > 0 {
            self.out.streak_ends.push((id, std::mem::take(&mut seq.streak)));
        }
        self.preemptions_total += 1;
        self.out.preempted.push(id);
        self.waiting.push_front(victim);
    }

    fn release_blocks(&mut self, s: u32) {
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        for &b in seq.blocks.iter().rev() {
            self.pool.release(b);
        }
        seq.blocks.clear();
    }

    /// Native offload, after the pass is timed: when its compute starts, and with G3 whether it
    /// is to be stepped again at once (it took no time and changed the tiers' state).
    fn end_offload_pass(&mut self) {
        let Some(o) = self.connector.offload_mut() else { return };
        let start = o.compute_start(o.now);
        self.out.compute_start_ms = Some(start);
        let progress =
            !self.chunks.is_empty() || !self.out.tokens.is_empty() || self.out.steady_tokens > 0 || !self.out.finished.is_empty();
        if let Some(g3) = &mut o.g3
            && progress
        {
            g3.note_rank_progress();
        }
        let instant = start == o.now && self.out.duration.is_zero();
        o.retry_at_once =
            instant && o.g3_epoch_before.is_some() && (o.g3_epoch() != o.g3_epoch_before || o.next_deadline().is_some_and(|d| d <= o.now));
    }

    /// The pass as scheduled: its prefill chunks and decodes, and who waits (never admitted:
    /// their prompt; preempted: their sequence; transferred here: their prompt).
    fn forward_pass_metrics(&self) -> ForwardPassMetrics {
        let mut m = ForwardPassMetrics::default();
        for c in &self.chunks {
            if c.has_prompt() {
                m.prefill(c.tokens, c.prompt_before);
            } else {
                m.decode(c.seq_len);
            }
        }
        for &s in &self.waiting {
            let seq = self.seq(s);
            if seq.prefilled {
                m.queued_decode(seq.prompt_len());
            } else if seq.admissions > 0 {
                m.queued_decode(seq.len());
            } else {
                m.queued_prefill(seq.prompt_len());
            }
        }
        m
    }

    /// Times the pass (its tokens are emitted by then, `batch` requests with `context` tokens
    /// decoding) and retires the finished requests.
    fn finish_pass(&mut self, batch: u64, context: u64) {
        let (mut n, mut isl, mut pre) = (0u64, 0u64, 0u64);
        for c in self.chunks.iter().filter(|c| c.has_prompt()) {
            n += 1;
            isl += c.prompt_after as u64;
            pre += c.prompt_before as u64;
        }
        let prefill =
            if n == 0 || self.cfg.worker_type == WorkerType::Decode { Default::default() } else { self.timer.prefill(n, isl / n, pre / n) };
        // Retire the finished, keeping the rest in order.
        if !self.done.is_empty() {
            let done = std::mem::take(&mut self.done);
            let mut d = done.iter().peekable();
            let mut kept = 0;
            for k in 0..self.running.len() {
                let s = self.running[k];
                if d.next_if(|&&p| p as usize == k).is_some() {
                    self.finish(s, Outcome::Completed);
                } else {
                    self.running[kept] = s;
                    kept += 1;
                }
            }
            self.running.truncate(kept);
            self.done = done;
        }
        let decode = if self.cfg.worker_type == WorkerType::Prefill {
            Default::default()
        } else {
            let total = self.cfg.num_blocks as u64 * self.cfg.block_size as u64;
            self.timer.decode(batch, context, total)
        };
        // The vision encoder runs first in the pass (zero without images).
        let encoder = self.end_encoder_pass();
        self.out.duration = encoder + prefill + decode;
        self.out.encoder_duration = encoder;
        self.out.prefill_duration = prefill;
        self.out.metrics = RankMetrics {
            cache_hit_tokens: self.out.metrics.cache_hit_tokens,
            cache_query_tokens: self.out.metrics.cache_query_tokens,
            ..self.metrics()
        };
        self.pool.events().drain_into(&mut self.out.kv_events);
    }

    /// Walks `running[from..]`: emits a token to each fully computed request, notes the
    /// finished ones, and returns the decode batch among them (as it stood before this
    /// pass's tokens): (requests, their context tokens).
    fn emit_tokens(&mut self, from: usize) -> (u64, u64) {
        let max_len = self.cfg.max_model_len;
        let (mut batch, mut context) = (0, 0);
        for k in from..self.running.len() {
            let s = self.running[k];
            let seq = self.seqs[s as usize].as_mut().expect("live sequence");
            let mut emitted = false;
            if seq.fully_computed() {
                // A request decodes once it has a token, or at once if its prompt was transferred
                // or wholly cached.
                if (seq.generated > 0 || seq.prefilled || !self.whole_hits.is_empty() && self.whole_hits.contains(&s))
                    && !seq.generation_done()
                {
                    batch += 1;
                    context += seq.len() as u64;
                }
                if !seq.generation_done() {
                    if self.steady_tokens && seq.emitted_last_pass && seq.generated >= 2 {
                        seq.streak += 1;
                        self.out.steady_tokens += 1;
                    } else {
                        self.out.tokens.push(seq.id);
                    }
                    seq.generated += 1;
                    emitted = true;
                }
                if seq.generation_done() || max_len.is_some_and(|m| seq.len() >= m) {
                    self.done.push(k as u32);
                }
            }
            if !emitted && seq.streak > 0 {
                self.out.streak_ends.push((seq.id, std::mem::take(&mut seq.streak)));
            }
            seq.emitted_last_pass = emitted;
        }
        (batch, context)
    }

    /// Retires a request that has left `running`/`waiting`, releasing its blocks (a prefill
    /// worker holds a completed prompt's blocks for its transfer instead).
    fn finish(&mut self, s: u32, outcome: Outcome) {
        if outcome == Outcome::Completed && self.cfg.worker_type == WorkerType::Prefill {
            let seq = self.seqs[s as usize].as_mut().expect("live sequence");
            let blocks = std::mem::take(&mut seq.blocks);
            let h = self.connector.handoff_mut().expect("a prefill worker hands off");
            h.held.insert(seq.id, blocks);
        } else {
            self.release_blocks(s);
        }
        if let Some(o) = self.connector.offload_mut() {
            o.forget(s);
        }
        if self.encoder.is_some() {
            self.forget_images(s);
        }
        let seq = self.seqs[s as usize].take().expect("live sequence");
        self.free_seq_slots.push(s);
        self.out.finished.push(Finished { id: seq.id, outcome, steady_tokens: seq.streak });
    }
}

impl Scheduler for VllmCore {
    fn submit(&mut self, req: Request) {
        let mut seq = Sequence::new(req);
        if self.cfg.capacity == Capacity::NoEvict {
            self.clamp_output(&mut seq);
        }
        seq.order = self.next_order();
        if !seq.images().is_empty() {
            self.encoder_mut();
        }
        let slot = self.new_slot(seq);
        self.waiting.push_back(slot);
    }

    /// One forward pass.
    fn step(&mut self) -> &PassOutput {
        self.out.clear();
        self.chunks.clear();
        if let Some(o) = self.connector.offload_mut() {
            o.g3_epoch_before = o.g3_epoch();
        }
        self.whole_hits.clear();
        if self.encoder.is_some() {
            self.begin_encoder_pass();
        }
        let mut budget = self.cfg.budget;
        let mut preempted = false;

        // Running requests spend the budget first. The walk is by index: after a success it
        // moves on by one even if a victim before it was removed (so the request after it
        // sits this pass out, as in the reference); after self-preemption it stays put.
        let mut i = 0;
        while i < self.running.len() && budget > 0 {
            let s = self.running[i];
            if self.schedule_decode(s, &mut budget) {
                i += 1;
                continue;
            }
            match self.schedule(s, None, &mut budget, &mut preempted) {
                Scheduled::Yes => i += 1,
                Scheduled::Blocked => break,
                Scheduled::SelfPreempted => {}
                // vLLM moves on to the next running request.
                Scheduled::EncoderWait => i += 1,
            }
        }

        // Tokens of the requests already running are emitted now, while their sequences are
        // still in cache (an admission's block lookups would evict them), but they retire
        // only at the pass end: admission must not see the blocks they will free.
        self.done.clear();
        let (batch, context) = self.emit_tokens(0);
        let admitted_from = self.running.len();

        // Admission, in FIFO order, only in a pass that preempted nobody.
        if !preempted {
            self.admit(&mut budget);
        }
        if self.connector.offload().is_some() {
            self.offer_stores();
        }
        if self.fpm {
            self.out.fpm = self.forward_pass_metrics();
        }

        let (admitted_batch, admitted_context) = self.emit_tokens(admitted_from);
        self.finish_pass(batch + admitted_batch, context + admitted_context);
        self.end_offload_pass();
        &self.out
    }

    /// The pass's buffers change hands: the core keeps `out`'s (cleared when it next steps).
    fn step_into(&mut self, out: &mut Box<PassOutput>) {
        self.step();
        std::mem::swap(&mut self.out, out);
    }

    /// Whether a pass now would do anything.
    fn has_work(&self) -> bool {
        match &self.connector {
            // The reference steps such a rank even when its pass will do nothing (it has no
            // stall shortcut): such passes touch the host LRU and probe G3.
            Connector::Offload(_) => !self.running.is_empty() || !self.waiting.is_empty() || self.connector_ready(),
            Connector::Handoff(h) => {
                !self.running.is_empty()
                    || !h.stalled
                        && if h.destinations_pending { self.first_in_place().is_some() } else { self.waiting.len() > h.pending_kv }
            }
            Connector::None => !self.running.is_empty() || !self.waiting.is_empty(),
        }
    }

    fn in_flight(&self) -> usize {
        self.waiting.len() + self.running.len() + self.connector.offload().map_or(0, |o| o.connector.len())
    }

    /// Blocks a new allocation could take: free, or cached and unreferenced.
    fn available_blocks(&self) -> u32 {
        self.cfg.num_blocks - self.pool.active()
    }

    fn abandon(&mut self, reason: &str) -> Vec<Finished> {
        let mut all: Vec<u32> = self.running.drain(..).collect();
        all.extend(self.waiting.drain(..));
        match &mut self.connector {
            Connector::Offload(o) => {
                all.extend(o.connector.drain(..));
                for r in o.requests.iter_mut().flatten() {
                    r.in_connector = false;
                }
            }
            Connector::Handoff(h) => {
                h.reserved.clear();
                h.pending_kv = 0;
            }
            Connector::None => {}
        }
        let mark = self.out.finished.len();
        for s in all {
            self.finish(s, Outcome::Unschedulable(reason.to_string()));
        }
        self.out.finished.split_off(mark)
    }

    fn metrics(&self) -> RankMetrics {
        RankMetrics::snapshot(
            self.dp_rank,
            self.pool.active() as u64,
            self.cfg.num_blocks as u64,
            self.running.len(),
            self.waiting.len(),
            self.preemptions_total,
        )
    }

    /// Every cache-visible block hash, sorted (for tests comparing with a router's indexer).
    fn cached_hashes(&self) -> Option<Vec<u64>> {
        Some(self.pool.cached_hashes())
    }

    fn take_idle_kv_events(&mut self, into: &mut Vec<KvEvent>) {
        self.pool.events().drain_into(into);
    }

    fn check(&self) -> Result<(), String> {
        self.pool.check()?;
        if let Some(e) = &self.encoder {
            e.cache.check()?;
        }
        let waiting_held: usize = self.waiting.iter().map(|&s| self.seq(s).blocks.len()).sum();
        // With offload, requests the connector deferred hold their load destinations, and a
        // shared pool's stores hold their sources.
        let onboarding_held: usize = self
            .connector
            .offload()
            .map_or(0, |o| o.connector.iter().map(|&s| self.seq(s).blocks.len()).sum::<usize>() + self.pool.native().held_by_stores());
        let held: usize = self.running.iter().map(|&s| self.seq(s).blocks.len()).sum::<usize>()
            + self.connector.handoff().map_or(0, |h| h.held.values().map(Vec::len).sum::<usize>())
            + waiting_held
            + onboarding_held;
        if self.waiting.iter().any(|&s| !self.seq(s).blocks.is_empty() && self.seq(s).admissions > 0) {
            return Err("a preempted request waits holding blocks".into());
        }
        if held < self.pool.active() as usize {
            return Err(format!("requests hold {held} blocks but {} are active", self.pool.active()));
        }
        if self.cfg.capacity == Capacity::NoEvict {
            if self.preemptions_total > 0 {
                return Err("a request was preempted under guaranteed_no_evict".into());
            }
            let balance = self.no_evict_balance();
            if balance < 0 {
                return Err(format!("running requests may need {} blocks more than the pool has free", -balance));
            }
        }
        Ok(())
    }

    fn kv_blocks(&self) -> KvBlocks {
        KvBlocks { in_use: self.pool.active(), idle: self.pool.idle(), free: self.pool.free(), cached: self.pool.cached_count() }
    }

    fn held_blocks(&self) -> Option<Vec<(u64, Vec<u32>)>> {
        let Pool::Native(_) = &self.pool else { return None };
        let mut held: Vec<(u64, Vec<u32>)> =
            self.seqs.iter().flatten().filter(|q| !q.blocks.is_empty()).map(|q| (q.id, q.blocks.clone())).collect();
        if let Some(h) = self.connector.handoff() {
            held.extend(h.held.iter().map(|(&id, slots)| (id, slots.clone())));
        }
        held.sort_unstable_by_key(|&(id, _)| id);
        Some(held)
    }

    fn block_view(&self, block: u32) -> (Option<u64>, u32) {
        match &self.pool {
            Pool::Native(pool) if block < pool.capacity() => pool.slot_view(block),
            _ => (None, 0),
        }
    }

    fn set_kv_events(&mut self, on: bool) {
        let events = self.pool.events();
        events.enabled = on && self.cfg.prefix_caching && self.cfg.worker_type != WorkerType::Decode;
    }

    fn set_forward_pass_metrics(&mut self, on: bool) {
        self.fpm = on;
    }

    fn set_steady_tokens(&mut self, on: bool) {
        self.steady_tokens = on;
    }

    fn transfers(&self) -> Option<&dyn TransferClock> {
        self.connector.offload().is_some().then_some(self as &dyn TransferClock)
    }

    fn transfers_mut(&mut self) -> Option<&mut dyn TransferClock> {
        if self.connector.offload().is_some() { Some(self) } else { None }
    }

    fn take_open_streaks(&mut self) -> Vec<(u64, u32)> {
        let mut open = Vec::new();
        for seq in self.seqs.iter_mut().flatten() {
            if seq.streak > 0 {
                open.push((seq.id, std::mem::take(&mut seq.streak)));
            }
        }
        open
    }
}

/// The offload connector's transfers (only reached through `transfers`, so an offload rank).
impl TransferClock for VllmCore {
    fn set_pass_time(&mut self, now_ms: f64) {
        if let Some(o) = self.connector.offload_mut() {
            o.now = now_ms;
        }
    }

    fn pass_boundary(&mut self, end_ms: f64, events: &mut Vec<KvEvent>) {
        self.offload_boundary(end_ms, events);
    }

    fn settle(&mut self, now_ms: f64, events: &mut Vec<KvEvent>) {
        self.offload_settle(now_ms, events);
    }

    fn next_deadline(&self) -> Option<f64> {
        self.connector.offload().and_then(|o| o.next_deadline())
    }

    fn pending(&self) -> bool {
        self.connector.offload().is_some_and(|o| o.has_work())
    }

    fn retry_at_once(&self) -> bool {
        self.connector.offload().is_some_and(|o| o.retry_at_once)
    }
}
