//! Extend-batch formation (SGLang's `get_new_batch_prefill`) and the extend pass.
//!
//! Candidates are taken from the front of `waiting` until one fails; nobody behind a failed
//! candidate is tried. Three budgets bound the batch:
//! - `rem_total`: free plus evictable pool tokens, less what the running requests need for
//!   their next token and a `new_token_ratio` share of their remaining output;
//! - `rem_input` (`max_prefill_tokens`): never truncates, a chunk above it waits;
//! - `rem_chunk` (`chunked_prefill_size`): truncates the chunk to whole pages.

use super::SglangCore;
use crate::sched::contract::Scheduler;
use crate::sched::output::Admission;

/// One request's share of an extend pass.
#[derive(Clone, Copy, Debug)]
pub(super) struct ExtendChunk {
    slot: u32,
    /// Tokens present before the chunk (matched from the cache or computed earlier).
    prefix: u32,
    tokens: u32,
    /// Whether the chunk completes the request's extend.
    last: bool,
}

/// Pages of the cached prefix a request would reuse: whole pages, and never its last token
/// (which must be recomputed to produce logits). Read-only, for the budget check.
fn cached_prefix_pages(core: &mut SglangCore, s: u32) -> u32 {
    if !core.cfg.prefix_caching {
        return 0;
    }
    let len = core.req(s).seq.len();
    let pages = len.saturating_sub(1) / core.cfg.page;
    let keys = core.page_hashes(s, 0, pages);
    core.cache.peek(keys.iter().map(|k| k.0)).1
}

/// Forms this pass's extend batch, allocating its pages; admitted requests leave `waiting`.
pub(super) fn form(core: &mut SglangCore) -> Vec<ExtendChunk> {
    let mut batch = Vec::new();
    if core.cfg.max_running <= core.running.len() || core.waiting.is_empty() {
        return batch;
    }
    let page = core.cfg.page;
    let clip = core.cfg.clip_max_new_tokens;
    let ratio = core.ratio.current;

    // `rem_total` is a snapshot of the free and evictable pages at the start of the pass,
    // less a `new_token_ratio` share of the running requests' remaining output (their
    // sampled tokens already hold their slots). Each admitted chunk then takes its pages and
    // its full output reserve from it.
    let reserved: f64 = core.running.iter().map(|&s| core.req(s).remaining_output().min(clip) as f64 * ratio).sum();
    let mut rem_total = core.available_blocks() as f64 * page as f64 - reserved;
    let mut rem_input = core.cfg.max_prefill_tokens;
    let mut rem_chunk = core.cfg.chunked_prefill_size;
    let room = core.cfg.max_running - core.running.len();

    while batch.len() < room {
        let Some(&s) = core.waiting.front() else { break };
        let continuing = core.req(s).seq.num_computed > 0;
        let prefix = if continuing { core.req(s).seq.num_computed } else { cached_prefix_pages(core, s) * page };
        let r = core.req(s);
        let extend = r.seq.len() - prefix;
        let chunk = extend.min(rem_chunk / page * page);
        if chunk == 0 {
            break;
        }
        let charged = core.ceil_page(chunk);
        let last = chunk == extend;
        let reserve = if last { r.remaining_output().min(clip) } else { 0 };
        let need = (charged + reserve) as f64;
        if need >= rem_total || charged > rem_input {
            break;
        }
        // Allocate: lock the matched prefix so eviction spares it, then take fresh pages.
        let fresh = charged / page;
        let node = if continuing {
            core.req(s).node
        } else {
            let keys = core.page_hashes(s, 0, prefix / page);
            let (node, matched) = core.cache.match_and_touch(keys.iter().map(|k| k.0));
            debug_assert_eq!(matched * page, prefix);
            core.cache.lock(node);
            node
        };
        let free = core.cache.free_pages();
        if free < fresh {
            core.cache.evict(fresh - free);
        }
        if !core.cache.take_private(fresh) {
            if !continuing {
                core.cache.unlock(node);
            }
            // Out of memory (typically a readmitted request whose own cached prefix, once
            // locked, was all there was to evict). Unlike SGLang, the reference leaves
            // `new_token_ratio` alone here: resetting it delays later admissions that the
            // reference makes (differential fuzzing, e.g. a retracted request at the head of an
            // LPM queue).
            break;
        }
        core.waiting.pop_front();
        let r = core.req_mut(s);
        r.private_pages += fresh;
        if !continuing {
            r.node = node;
            r.tree_pages = prefix / page;
            r.seq.admissions += 1;
            let admission = Admission { id: r.seq.id, reused_tokens: prefix, readmission: r.seq.admissions > 1, host_reused_tokens: None };
            let len = r.seq.len() as u64;
            core.out.admissions.push(admission);
            core.out.metrics.cache_hit_tokens += prefix as u64;
            core.out.metrics.cache_query_tokens += len;
        }
        batch.push(ExtendChunk { slot: s, prefix, tokens: chunk, last });
        rem_total -= need;
        rem_input -= charged;
        rem_chunk -= charged;
        if rem_chunk == 0 {
            break;
        }
    }
    batch
}

/// Runs an extend pass: times the batch's prefill, caches what it computed, and gives the
/// requests whose extend completed their token. Running requests sit this pass out.
pub(super) fn run(core: &mut SglangCore, batch: Vec<ExtendChunk>) {
    let n = batch.len() as u64;
    let isl: u64 = batch.iter().map(|c| (c.prefix + c.tokens) as u64).sum();
    let pre: u64 = batch.iter().map(|c| c.prefix as u64).sum();
    core.out.duration =
        if core.cfg.worker_type == crate::args::WorkerType::Decode { Default::default() } else { core.timer.prefill(n, isl / n, pre / n) };
    let tokens: u64 = batch.iter().map(|c| c.tokens as u64).sum();
    if core.fpm {
        for c in &batch {
            core.out.fpm.prefill(c.tokens, c.prefix);
        }
    }
    core.out.scheduled_tokens += tokens;
    core.out.committed_prefill_tokens += tokens;

    let mut unfinished = Vec::new();
    let mut prefilled = Vec::new();
    for c in batch {
        core.req_mut(c.slot).seq.num_computed = c.prefix + c.tokens;
        if c.last {
            prefilled.push(c.slot);
        } else {
            // The chunk's whole pages enter the cache now, still locked by the request.
            core.cache_materialized(c.slot);
            unfinished.push(c.slot);
        }
    }
    // A chunked request continues first in the next pass.
    for &s in unfinished.iter().rev() {
        core.waiting.push_front(s);
    }

    // The newly prefilled take their first token, then join the running batch.
    let joined = super::decode::first_tokens(core, prefilled);
    core.running.extend_from_slice(&joined);
}

/// Why the head of the queue can never start, with nothing running.
pub(super) fn unschedulable_reason(core: &SglangCore, s: u32) -> String {
    let r = core.req(s);
    let len = r.seq.len();
    let chunk = len.min(core.cfg.chunked_prefill_size);
    if core.ceil_page(chunk) > core.cfg.max_prefill_tokens {
        format!("a prefill chunk of {} tokens exceeds max_prefill_tokens {}", core.ceil_page(chunk), core.cfg.max_prefill_tokens)
    } else {
        format!(
            "needs {} tokens of KV plus {} reserved for output; the pool has {}",
            core.ceil_page(chunk),
            r.remaining_output().min(core.cfg.clip_max_new_tokens),
            core.pool_tokens()
        )
    }
}
