//! The decode pass: every running request computes the KV of its newest token and emits the
//! next one. If the pool cannot hold the step, requests are retracted first.

use super::SglangCore;
use crate::engine::Outcome;

/// Decode steps each surviving request is assumed to run before the next retraction.
const RETRACT_DECODE_STEPS: u64 = 20;

/// Pages the running requests need for this step beyond what they hold.
fn pages_needed(core: &SglangCore) -> u32 {
    let page = core.cfg.page;
    core.running
        .iter()
        .map(|&s| {
            let r = core.req(s);
            (r.seq.len() + 1).div_ceil(page).saturating_sub(r.allocated_pages())
        })
        .sum()
}

/// Retracts the running request with the fewest generated tokens (the earliest in running
/// order on ties). It keeps its generated tokens and its cached prefix stays in the tree,
/// so readmission reuses whatever survives; it queues behind the requests already waiting.
fn retract_one(core: &mut SglangCore) -> (u32, crate::kv::NodeId) {
    let (pos, _) = core
        .running
        .iter()
        .enumerate()
        .min_by_key(|&(i, &s)| (core.req(s).seq.generated, i))
        .expect("a running request");
    let s = core.running.remove(pos);
    let node = core.req(s).node;
    core.release(s);
    let r = core.req_mut(s);
    r.seq.num_computed = 0;
    let id = r.seq.id;
    core.out.preempted.push(id);
    core.retractions_total += 1;
    core.waiting.push_back(s);
    (s, node)
}

/// SGLang's `check_decode_mem`: while the running requests' next step does not fit in the
/// free and evictable pages, retract requests (never the last one). After a retraction,
/// `new_token_ratio` is re-estimated from the survivors. Returns whether any was retracted.
pub(super) fn retract_until_fits(core: &mut SglangCore) -> Vec<(u32, crate::kv::NodeId)> {
    let mut victims = Vec::new();
    while core.cache.free_pages() + core.cache.evictable_pages() < pages_needed(core) && core.running.len() > 1 {
        victims.push(retract_one(core));
    }
    if !victims.is_empty() {
        // What the survivors generated so far plus a few more steps each, over what they
        // may generate in all (capped at 1).
        let (mut done, mut max) = (0u64, 0u64);
        for &s in &core.running {
            let r = core.req(s);
            done += r.seq.generated as u64;
            max += r.seq.max_output as u64;
        }
        let est = (done + RETRACT_DECODE_STEPS * core.running.len() as u64) as f64 / max as f64;
        core.ratio.current = est.min(1.0);
    }
    victims
}

pub(super) fn decode_pass(core: &mut SglangCore) {
    let retracted = !retract_until_fits(core).is_empty();
    let need = pages_needed(core);
    if core.cache.free_pages() + core.cache.evictable_pages() < need {
        // A lone request outgrew the pool: no retraction can help (the reference aborts).
        let s = core.running.pop().expect("a running request");
        let reason = format!(
            "grew to {} tokens and no longer fits the KV pool of {} tokens",
            core.req(s).seq.len(),
            core.pool_tokens()
        );
        core.finish(s, Outcome::Unschedulable(reason));
        return;
    }
    let free = core.cache.free_pages();
    if free < need {
        core.cache.evict(need - free);
    }

    let batch = core.running.len() as u64;
    let context: u64 = core.running.iter().map(|&s| core.req(s).seq.len() as u64).sum();
    let total = core.pool_tokens();
    core.out.duration = if core.cfg.worker_type == crate::args::WorkerType::Prefill {
        Default::default()
    } else {
        core.timer.decode(batch, context.min(total), total)
    };
    core.out.scheduled_tokens += batch;

    let page = core.cfg.page;
    let mut k = 0;
    while k < core.running.len() {
        let s = core.running[k];
        let r = core.req_mut(s);
        let grow = (r.seq.len() + 1).div_ceil(page).saturating_sub(r.allocated_pages());
        r.private_pages += grow;
        let ok = core.cache.take_private(grow);
        debug_assert!(ok, "decode pages were checked");
        let r = core.req_mut(s);
        r.seq.num_computed = r.seq.len();
        r.seq.generated += 1;
        let id = r.seq.id;
        let done = r.seq.generation_done();
        core.out.tokens.push(id);
        if done {
            core.running.remove(k);
            core.complete(s);
        } else {
            core.cache_materialized(s);
            k += 1;
        }
    }
    if !retracted {
        core.ratio.decay();
    }
}
