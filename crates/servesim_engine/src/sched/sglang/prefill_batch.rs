//! Extend-batch formation (SGLang's `get_new_batch_prefill`) and the extend pass.
//!
//! Candidates are taken from the front of `waiting` until one fails; nobody behind a failed
//! candidate is tried. Three budgets bound the batch:
//! - `rem_total`: free plus evictable pool tokens, less what the running requests need for
//!   their next token and a `new_token_ratio` share of their remaining output;
//! - `rem_input` (`max_prefill_tokens`): never truncates, a chunk above it waits;
//! - `rem_chunk` (`chunked_prefill_size`): truncates the chunk to whole pages.

use super::SglangCore;
use crate::engine::Admission;
use crate::kv::ROOT;

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

/// The cached prefix a request would reuse: whole pages, and never its last token (which
/// must be recomputed to produce logits).
fn cached_prefix(core: &mut SglangCore, s: u32) -> (crate::kv::NodeId, u32) {
    if !core.cfg.prefix_caching {
        return (ROOT, 0);
    }
    let len = core.req(s).seq.len();
    let pages = len.saturating_sub(1) / core.cfg.page;
    let keys = core.page_hashes(s, 0, pages);
    core.cache.peek(keys.iter().map(|k| k.0))
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

    // What running requests still need: the page for their pending token, and a share of
    // the rest of their output. The budget is live: pages allocated or locked by admitted
    // requests leave `free + evictable` as they are taken, so only their output reserve is
    // added to the offset.
    let mut offset = 0.0;
    for &s in &core.running {
        let r = core.req(s);
        let growth = core.ceil_page(r.seq.len()).saturating_sub(r.allocated_pages() * page);
        offset += growth as f64;
        offset += r.remaining_output().min(clip) as f64 * ratio;
    }
    let avail0 = (core.cache.free_pages() as f64 + core.cache.evictable_pages() as f64) * page as f64;
    let rem_total = |_core: &SglangCore, offset: f64| avail0 - offset;
    let mut rem_input = core.cfg.max_prefill_tokens;
    let mut rem_chunk = core.cfg.chunked_prefill_size;
    let room = core.cfg.max_running - core.running.len();

    while batch.len() < room {
        let Some(&s) = core.waiting.front() else { break };
        let continuing = core.req(s).seq.num_computed > 0;
        let (node, prefix) = if continuing {
            let r = core.req(s);
            (r.node, r.seq.num_computed)
        } else {
            let (node, pages) = cached_prefix(core, s);
            (node, pages * page)
        };
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
        if need >= rem_total(core, offset) || charged > rem_input {
            break;
        }
        // Allocate: lock the matched prefix so eviction spares it, then take fresh pages.
        let fresh = charged / page;
        if !continuing {
            if prefix > 0 {
                let keys = core.page_hashes(s, 0, prefix / page);
                core.cache.match_and_touch(keys.iter().map(|k| k.0));
            }
            core.cache.lock(node);
            // Locking the prefix takes it out of the evictable pool: check again.
            if need >= rem_total(core, offset) {
                core.cache.unlock(node);
                break;
            }
        }
        let free = core.cache.free_pages();
        if free < fresh {
            core.cache.evict(fresh - free);
        }
        if !core.cache.take_private(fresh) {
            if !continuing {
                core.cache.unlock(node);
            }
            // Out of memory: SGLang resets its decode reservation estimate.
            core.ratio.reset();
            break;
        }
        core.waiting.pop_front();
        let held = std::mem::replace(&mut core.req_mut(s).held_lock, ROOT);
        core.cache.unlock(held);
        let r = core.req_mut(s);
        r.private_pages += fresh;
        if !continuing {
            r.node = node;
            r.tree_pages = prefix / page;
            r.seq.admissions += 1;
            let admission = Admission { id: r.seq.id, reused_tokens: prefix, readmission: r.seq.admissions > 1 };
            let len = r.seq.len() as u64;
            core.out.admissions.push(admission);
            core.out.metrics.cache_hit_tokens += prefix as u64;
            core.out.metrics.cache_query_tokens += len;
        }
        batch.push(ExtendChunk { slot: s, prefix, tokens: chunk, last });
        offset += (charged + reserve) as f64;
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
    core.out.duration = if core.cfg.worker_type == crate::args::WorkerType::Decode {
        Default::default()
    } else {
        core.timer.prefill(n, isl / n, pre / n)
    };
    let tokens: u64 = batch.iter().map(|c| c.tokens as u64).sum();
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

    // The newly prefilled join the running batch and take their decode step (their first
    // token comes from the extend forward). The step's memory is checked over everything
    // running, so a request may be retracted right after its prefill; only then is the
    // step timed, as a decode of the newly prefilled that remain. Their prompt pages enter
    // the cache only after the step: a request retracted here keeps just the prefix it had
    // matched.
    core.running.extend_from_slice(&prefilled);
    let victims = super::decode::retract_until_fits(core);
    let retracted = !victims.is_empty();
    let survivors: Vec<u32> = prefilled.iter().copied().filter(|s| core.running.contains(s)).collect();
    if retracted && survivors.is_empty() {
        // When no newly prefilled request survives the step, the reference leaves each
        // victim's matched prefix locked while it waits; the lock goes at its readmission.
        for &(s, node) in &victims {
            core.cache.lock(node);
            core.req_mut(s).held_lock = node;
        }
    }
    if retracted && !survivors.is_empty() && core.cfg.worker_type != crate::args::WorkerType::Prefill {
        let context: u64 = survivors.iter().map(|&s| core.req(s).seq.len() as u64).sum();
        let total = core.pool_tokens();
        core.out.duration += core.timer.decode(survivors.len() as u64, context.min(total), total);
    }
    for &(s, _) in &victims {
        if !prefilled.contains(&s) {
            continue;
        }
        let r = core.req_mut(s);
        r.fruitless_prefills += 1;
        if r.fruitless_prefills >= MAX_FRUITLESS_PREFILLS {
            let pos = core.waiting.iter().position(|&w| w == s).expect("a retracted request waits");
            core.waiting.remove(pos);
            let reason = format!(
                "retracted right after its prefill {MAX_FRUITLESS_PREFILLS} times in a row: the KV pool cannot hold it beside the running requests"
            );
            core.finish(s, crate::engine::Outcome::Unschedulable(reason));
        }
    }
    for s in survivors {
        core.cache_materialized(s);
        let r = core.req_mut(s);
        r.fruitless_prefills = 0;
        r.seq.generated += 1;
        let id = r.seq.id;
        core.out.tokens.push(id);
        if core.req(s).seq.generation_done() {
            let pos = core.running.iter().position(|&x| x == s).expect("running");
            core.running.remove(pos);
            core.complete(s);
        }
    }
}

/// Retract-after-prefill cycles tolerated for one request before it is given up.
const MAX_FRUITLESS_PREFILLS: u32 = 10_000;

/// Why the head of the queue can never start, with nothing running.
pub(super) fn unschedulable_reason(core: &SglangCore, s: u32) -> String {
    let r = core.req(s);
    let len = r.seq.len();
    let chunk = len.min(core.cfg.chunked_prefill_size);
    if core.ceil_page(chunk) > core.cfg.max_prefill_tokens {
        format!(
            "a prefill chunk of {} tokens exceeds max_prefill_tokens {}",
            core.ceil_page(chunk),
            core.cfg.max_prefill_tokens
        )
    } else {
        format!(
            "needs {} tokens of KV plus {} reserved for output; the pool has {}",
            core.ceil_page(chunk),
            r.remaining_output().min(core.cfg.clip_max_new_tokens),
            core.pool_tokens()
        )
    }
}
