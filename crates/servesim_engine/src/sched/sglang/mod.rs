//! The SGLang-style scheduler: a radix prefix cache with pages of `block_size` tokens,
//! extend ("prefill") passes formed under three budgets, decode passes for everything
//! running, and retraction under decode memory pressure. The rules found against the
//! reference are listed in `docs/fidelity.md`.
//!
//! One pass either extends (prefills) a batch taken from `waiting` — the running requests
//! then wait, only the newly prefilled get their token — or, when no batch forms, decodes
//! every running request. A sampled token takes its KV slot as it is sampled and counts as
//! materialised from then on (`decode.rs`).
//!
//! Beyond the reference: a request that could never finish in the pool is refused on
//! arrival, and the deadlocks on which the reference stops without a result are broken
//! (`decode.rs`), so that every other request completes.

mod decode;
mod handoff;
mod policy;
mod prefill_batch;
mod request;

use crate::args::{ArgsError, EngineArgs, SchedulePolicy, WorkerType};
use crate::kv::{EventSink, KvEvent, ROOT, RadixCache};
use crate::metrics::RankMetrics;
use crate::perf::PassTimer;
use crate::sched::contract::{KvBlocks, RankSetup, Scheduler};
use crate::sched::output::{Finished, Outcome, PassOutput};
use crate::sequence::Request;
use request::SgRequest;
use std::collections::{HashMap, VecDeque};

#[derive(Clone, Debug)]
struct Config {
    page: u32,
    pages: u32,
    max_running: usize,
    prefix_caching: bool,
    policy: SchedulePolicy,
    max_prefill_tokens: u32,
    chunked_prefill_size: u32,
    clip_max_new_tokens: u32,
    worker_type: WorkerType,
}

/// `new_token_ratio`: how much of the running requests' remaining output the prefill budget
/// keeps in reserve. It starts at `0.7 × schedule_conservativeness` and decays linearly, per
/// decode pass, to 14 % of that over 600 passes.
#[derive(Clone, Copy, Debug)]
struct TokenRatio {
    min: f64,
    step: f64,
    current: f64,
}

impl TokenRatio {
    fn new(conservativeness: f64) -> Self {
        let init = 0.7 * conservativeness;
        let min = init * 0.14;
        TokenRatio { min, step: (init - min) / 600.0, current: init }
    }
    fn decay(&mut self) {
        self.current = (self.current - self.step).max(self.min);
    }
}

#[derive(Debug)]
pub struct SglangCore {
    cfg: Config,
    timer: PassTimer,
    cache: RadixCache,
    dp_rank: u32,
    reqs: Vec<Option<SgRequest>>,
    free_slots: Vec<u32>,
    waiting: VecDeque<u32>,
    running: Vec<u32>,
    /// Requests that can never finish in this pool, ended at the next pass.
    refused: Vec<u32>,
    ratio: TokenRatio,
    retractions_total: u64,
    /// A prefill worker's finished prompts whose pages it still holds: id → slot.
    held: HashMap<u64, u32>,
    /// A decode worker's reservations whose KV is on its way: id → slot.
    reserved: HashMap<u64, u32>,
    /// Reservations whose KV arrived, waiting for room in the running batch.
    arrived: VecDeque<u32>,
    /// Nothing runs and the waiting head needs pages that held prompts or reservations
    /// occupy: no pass can do anything until a release or an activation.
    stalled: bool,
    /// Requests wait for a reservation here (the harness keeps them).
    destinations_pending: bool,
    /// Fill each pass's forward-pass metrics (a planner reads them).
    fpm: bool,
    scratch: (Vec<u32>, Vec<u8>),
    /// Boxed: it changes hands with the harness every pass (`step_into`) as a pointer.
    out: Box<PassOutput>,
}

impl SglangCore {
    /// The pass timer (its power evidence, for the report).
    pub(crate) fn timer(&self) -> &PassTimer {
        &self.timer
    }

    pub fn new(args: &EngineArgs, setup: &RankSetup) -> Result<Self, ArgsError> {
        let (dp_rank, dp_size) = (setup.dp_rank, setup.dp_size);
        let sg = args.sglang();
        let cfg = Config {
            page: args.block_size(),
            pages: args.num_gpu_blocks(),
            max_running: args.max_num_seqs.map_or(usize::MAX, |n| n as usize),
            prefix_caching: args.enable_prefix_caching,
            policy: sg.schedule_policy,
            max_prefill_tokens: sg.max_prefill_tokens,
            chunked_prefill_size: sg.chunked_prefill_size / dp_size,
            clip_max_new_tokens: sg.clip_max_new_tokens,
            worker_type: args.worker_type,
        };
        let events = setup.emit_events && cfg.prefix_caching && cfg.worker_type != WorkerType::Decode;
        Ok(SglangCore {
            cache: RadixCache::new(cfg.pages, EventSink::new(events, dp_rank)),
            timer: PassTimer::from_args_with(args, setup.profile.as_ref(), setup.kernels.as_ref())?,
            ratio: TokenRatio::new(if dp_size > 1 { sg.schedule_conservativeness * 0.3 } else { sg.schedule_conservativeness }),

            cfg,
            dp_rank,
            reqs: Vec::new(),
            free_slots: Vec::new(),
            waiting: VecDeque::new(),
            running: Vec::new(),
            refused: Vec::new(),
            retractions_total: 0,
            held: HashMap::new(),
            reserved: HashMap::new(),
            arrived: VecDeque::new(),
            stalled: false,
            destinations_pending: false,
            fpm: false,
            scratch: (Vec::new(), Vec::new()),
            out: Box::default(),
        })
    }

    fn slot_for(&mut self, r: SgRequest) -> u32 {
        match self.free_slots.pop() {
            Some(s) => {
                self.reqs[s as usize] = Some(r);
                s
            }
            None => {
                self.reqs.push(Some(r));
                (self.reqs.len() - 1) as u32
            }
        }
    }

    /// Who waits after the pass was formed: never-started requests by their prompt; retracted
    /// ones, and transferred ones waiting for a running slot, by their sequence; reservations
    /// whose KV is on its way by their prompt.
    fn queued_fpm(&mut self) {
        let mut m = self.out.fpm;
        for &s in &self.waiting {
            let seq = &self.req(s).seq;
            if seq.generated > 0 { m.queued_decode(seq.len()) } else { m.queued_prefill(seq.prompt_len()) }
        }
        for &s in &self.arrived {
            m.queued_decode(self.req(s).seq.len());
        }
        for &s in self.reserved.values() {
            m.queued_decode(self.req(s).seq.prompt_len());
        }
        self.out.fpm = m;
    }

    /// Why request `s` can never finish in this pool, if it cannot: its prompt and output
    /// need more pages than there are (a first token that is also the last takes no slot).
    /// The reference admits such a request if its first chunk passes the budget, then
    /// aborts the replay or never returns once it is alone and cannot grow; servesim refuses
    /// it on arrival instead.
    fn never_fits(&self, s: u32) -> Option<String> {
        let r = self.req(s);
        if !r.seq.images().is_empty() {
            // Not modelled: SGLang's multimodal path (its own encoder scheduling and mm cache)
            // is a different design from vLLM's; refusing is better than timing images as text.
            return Some("has images: the sglang backend does not model multimodal requests (use backend \"vllm\")".into());
        }
        let (len, mut out) = (r.seq.len(), r.remaining_output());
        if self.cfg.worker_type == WorkerType::Prefill {
            // A prefill worker produces one token and hands the request off.
            out = out.min(1);
        }
        let finish = if out >= 2 { len + out } else { len };
        let pool = self.pool_tokens();
        if self.ceil_page(finish) as u64 <= pool {
            return None;
        }
        let reserve = out.min(self.cfg.clip_max_new_tokens);
        Some(if self.ceil_page(len) as u64 + reserve as u64 >= pool {
            format!("needs {} tokens of KV plus {reserve} reserved for output; the pool has {pool}", self.ceil_page(len))
        } else {
            format!("needs {} tokens of KV to finish ({len} prompt and {out} output tokens); the pool has {pool}", self.ceil_page(finish))
        })
    }

    fn req(&self, s: u32) -> &SgRequest {
        self.reqs[s as usize].as_ref().expect("live request")
    }

    fn req_mut(&mut self, s: u32) -> &mut SgRequest {
        self.reqs[s as usize].as_mut().expect("live request")
    }

    fn pool_tokens(&self) -> u64 {
        self.cfg.pages as u64 * self.cfg.page as u64
    }

    fn ceil_page(&self, tokens: u32) -> u32 {
        tokens.div_ceil(self.cfg.page) * self.cfg.page
    }

    /// Page keys ((local, sequence) hashes) of request `s`'s full pages `from..to`.
    fn page_hashes(&mut self, s: u32, from: u32, to: u32) -> Vec<(u64, u64)> {
        let page = self.cfg.page;
        let mut scratch = std::mem::take(&mut self.scratch);
        let r = self.reqs[s as usize].as_mut().expect("live request");
        let v = (from..to)
            .map(|i| {
                let (seq, local) = r.seq.block_hashes(i, page, &mut scratch);
                (local, seq)
            })
            .collect();
        self.scratch = scratch;
        v
    }

    /// Moves `s`'s materialised full pages that are still private into the radix tree and
    /// moves its lock to the new end of its cached prefix.
    fn cache_materialized(&mut self, s: u32) {
        let page = self.cfg.page;
        let r = self.req(s);
        let full = r.seq.num_computed / page;
        if full <= r.tree_pages {
            return;
        }
        if !self.cfg.prefix_caching {
            return;
        }
        let from = r.tree_pages;
        let old = r.node;
        let pages = self.page_hashes(s, from, full);
        let node = self.cache.insert(old, &pages);
        self.cache.move_lock(old, node);
        let r = self.req_mut(s);
        r.node = node;
        r.private_pages -= full - from;
        r.tree_pages = full;
    }

    /// Lets go of everything `s` holds: its cached prefix stays in the tree, unlocked; its
    /// private pages return to the pool.
    fn release(&mut self, s: u32) {
        let r = self.req_mut(s);
        let (node, private) = (r.node, r.private_pages);
        r.node = ROOT;
        r.tree_pages = 0;
        r.private_pages = 0;
        self.cache.unlock(node);
        self.cache.release_private(private);
    }

    /// A request that got its last token: cache its full pages, release the rest.
    fn complete(&mut self, s: u32) {
        if self.cfg.worker_type == WorkerType::Prefill {
            // Its pages stay held for the transfer to the decode side.
            self.hold(s);
            return;
        }
        self.cache_materialized(s);
        self.finish(s, Outcome::Completed);
    }

    fn finish(&mut self, s: u32, outcome: Outcome) {
        self.release(s);
        let r = self.reqs[s as usize].take().expect("live request");
        self.free_slots.push(s);
        self.out.finished.push(Finished { id: r.seq.id, outcome, steady_tokens: 0 });
    }
}

impl Scheduler for SglangCore {
    fn submit(&mut self, req: Request) {
        let slot = self.slot_for(SgRequest::new(req));
        if self.never_fits(slot).is_some() {
            self.refused.push(slot);
        } else {
            self.waiting.push_back(slot);
            // New input ends a stall: under LPM the newcomer may sort ahead of a head that
            // cannot fit, and fit itself (found on a prefill worker whose held prompts fill
            // its pool).
            self.stalled = false;
        }
    }

    /// One forward pass.
    fn step(&mut self) -> &PassOutput {
        self.out.clear();
        for s in std::mem::take(&mut self.refused) {
            let reason = self.never_fits(s).expect("refused for a reason");
            self.finish(s, Outcome::Unschedulable(reason));
        }
        self.join_arrived();
        policy::reorder_waiting(self);
        // No new prefill while transferred requests wait for a running slot or reservations
        // wait for room: either would lose the pages to requests that still need a prefill.
        let gated = !self.arrived.is_empty() || self.destinations_pending;
        let batch = if gated { Vec::new() } else { prefill_batch::form(self) };
        if batch.is_empty() {
            if !self.running.is_empty() {
                decode::decode_pass(self);
            } else if gated || !(self.held.is_empty() && self.reserved.is_empty()) {
                // Held prompts and reservations free or fill their pages later.
                self.stalled = true;
            } else if let Some(s) = self.waiting.pop_front() {
                // Nothing runs and the head of the queue cannot start: the pool is as empty
                // as it will ever be, so it never will (the reference aborts the replay).
                let reason = prefill_batch::unschedulable_reason(self, s);
                self.finish(s, Outcome::Unschedulable(reason));
            }
        } else {
            prefill_batch::run(self, batch);
        }
        if self.fpm {
            self.queued_fpm();
        }
        let (hit, query) = (self.out.metrics.cache_hit_tokens, self.out.metrics.cache_query_tokens);
        self.out.metrics = RankMetrics { cache_hit_tokens: hit, cache_query_tokens: query, ..self.metrics() };
        self.cache.events.drain_into(&mut self.out.kv_events);
        &self.out
    }

    /// The pass's buffers change hands: the core keeps `out`'s (cleared when it next steps).
    fn step_into(&mut self, out: &mut Box<PassOutput>) {
        self.step();
        std::mem::swap(&mut self.out, out);
    }

    /// Whether a pass now would do anything (nothing can start while the pool's room is
    /// held by finished prompts or reservations awaiting their KV, or while destinations
    /// wait for room: no prefill batch forms then).
    fn has_work(&self) -> bool {
        !self.running.is_empty()
            || !self.refused.is_empty()
            || !self.arrived.is_empty()
            || !self.waiting.is_empty() && !self.stalled && !self.destinations_pending
    }

    fn in_flight(&self) -> usize {
        self.waiting.len() + self.running.len() + self.refused.len() + self.arrived.len()
    }

    /// Pages a new allocation could take: free, or cached and evictable.
    fn available_blocks(&self) -> u32 {
        self.cache.free_pages() + self.cache.evictable_pages()
    }

    fn abandon(&mut self, reason: &str) -> Vec<Finished> {
        let mut all: Vec<u32> = self.running.drain(..).collect();
        all.extend(self.waiting.drain(..));
        all.append(&mut self.refused);
        all.extend(self.reserved.drain().map(|(_, s)| s));
        all.extend(self.arrived.drain(..));
        let mark = self.out.finished.len();
        for s in all {
            self.finish(s, Outcome::Unschedulable(reason.to_string()));
        }
        self.out.finished.split_off(mark)
    }

    fn metrics(&self) -> RankMetrics {
        RankMetrics::snapshot(
            self.dp_rank,
            self.cache.used_pages() as u64,
            self.cfg.pages as u64,
            self.running.len(),
            self.waiting.len(),
            self.retractions_total,
        )
    }

    fn kv_blocks(&self) -> KvBlocks {
        let c = &self.cache;
        KvBlocks { in_use: c.used_pages(), idle: c.evictable_pages(), free: c.free_pages(), cached: c.tree_pages() }
    }

    fn set_kv_events(&mut self, on: bool) {
        self.cache.events.enabled = on && self.cfg.prefix_caching && self.cfg.worker_type != WorkerType::Decode;
    }

    fn set_forward_pass_metrics(&mut self, on: bool) {
        self.fpm = on;
    }

    fn take_idle_kv_events(&mut self, into: &mut Vec<KvEvent>) {
        self.cache.events.drain_into(into);
    }

    fn check(&self) -> Result<(), String> {
        self.cache.check()?;
        let private: u32 = self.reqs.iter().flatten().map(|r| r.private_pages).sum();
        if private != self.cache.used_pages() - self.cache.protected_pages() {
            return Err(format!("requests hold {private} private pages, the pool says otherwise"));
        }
        for r in self.reqs.iter().flatten() {
            if self.cache.depth(r.node) != r.tree_pages {
                return Err(format!("request {} locks {} pages, says {}", r.seq.id, self.cache.depth(r.node), r.tree_pages));
            }
        }
        Ok(())
    }
}
