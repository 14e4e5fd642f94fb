//! Token steps: the decode pass, where every running request computes the KV of its newest
//! token and samples the next, and the first token of the requests an extend pass just
//! prefilled. A step first makes sure the pool can hold it, retracting requests if not.
//!
//! A sampled token takes its KV slot when it is sampled and counts as materialised from then
//! on: its page enters the radix tree once full, and a completed request caches it too (so a
//! finished request leaves `floor_page(prompt + output)` tokens in the tree). The reference's
//! telemetry shows it: at page 1, a lone `[0, 10, 3]` request holds 11 pages right after its
//! prefill and leaves 13 in the tree when it finishes.

use super::SglangCore;
use crate::sched::contract::Scheduler;
use crate::sched::output::Outcome;

/// Decode steps each surviving request is assumed to run before the next retraction.
const RETRACT_DECODE_STEPS: u64 = 20;

/// Pages request `s` needs for one more token beyond what it holds.
fn step_pages(core: &SglangCore, s: u32) -> u32 {
    let r = core.req(s);
    (r.seq.len() + 1).div_ceil(core.cfg.page).saturating_sub(r.allocated_pages())
}

/// Pages the requests in `set` need for one more token each beyond what they hold.
fn pages_needed(core: &SglangCore, set: &[u32]) -> u32 {
    set.iter().map(|&s| step_pages(core, s)).sum()
}

/// The time of one decode step of `set` (none on a prefill worker, whose tokens are not
/// delivered).
fn decode_time(core: &SglangCore, set: &[u32]) -> std::time::Duration {
    if core.cfg.worker_type == crate::args::WorkerType::Prefill {
        return Default::default();
    }
    let context: u64 = set.iter().map(|&s| core.req(s).seq.len() as u64).sum();
    let total = core.pool_tokens();
    // Logical tokens: shared prefixes count once per request, so this can exceed the pool
    // (the reference does not cap it; the polynomial caps its utilisation at 1).
    core.timer.decode(set.len() as u64, context, total)
}

/// Takes `s`'s pages back and resets it to recompute from its cached prefix; the caller
/// decides where it waits.
fn retract(core: &mut SglangCore, s: u32) {
    core.release(s);
    let r = core.req_mut(s);
    r.seq.num_computed = 0;
    let id = r.seq.id;
    core.out.preempted.push(id);
    core.retractions_total += 1;
}

/// Retracts the request of `set` with the fewest generated tokens (the earliest on ties).
/// It keeps its generated tokens and its cached prefix stays in the tree, unlocked, so
/// readmission reuses whatever survives; it queues behind the requests already waiting.
fn retract_one(core: &mut SglangCore, set: &mut Vec<u32>) -> u32 {
    let (pos, _) = set.iter().enumerate().min_by_key(|&(i, &s)| (core.req(s).seq.generated, i)).expect("a request to retract");
    let s = set.remove(pos);
    retract(core, s);
    core.waiting.push_back(s);
    s
}

/// SGLang's `check_decode_mem` over the batch `set`: while the free and evictable pages
/// cannot hold its next step, retract from it (never its last request). After a retraction,
/// `new_token_ratio` is re-estimated from the survivors. Returns the retracted requests.
fn retract_until_fits(core: &mut SglangCore, set: &mut Vec<u32>) -> Vec<u32> {
    let mut victims = Vec::new();
    while core.available_blocks() < pages_needed(core, set) && set.len() > 1 {
        victims.push(retract_one(core, set));
    }
    if !victims.is_empty() {
        // What the survivors generated so far plus a few more steps each, over what they
        // may generate in all plus one (capped at 1). Without the "plus one", sg-small-chunks
        // misses a 128-token chunk's admission by 0.2 tokens of budget.
        let (mut done, mut max) = (0u64, 0u64);
        for &s in set.iter() {
            let r = core.req(s);
            done += r.seq.generated as u64;
            max += r.seq.max_output as u64;
        }
        let est = (done + RETRACT_DECODE_STEPS * set.len() as u64) as f64 / (max + 1) as f64;
        core.ratio.current = est.min(1.0);
    }
    victims
}

/// Makes `need` pages free for a step, evicting cached pages if the free ones are short.
/// False (and nothing evicted) when even eviction cannot make room.
fn make_room(core: &mut SglangCore, need: u32) -> bool {
    if core.available_blocks() < need {
        return false;
    }
    let free = core.cache.free_pages();
    if free < need {
        core.cache.evict(need - free);
    }
    true
}

/// Every request of `set` samples a token into a fresh slot (the pages were reserved);
/// finished requests leave `set` and complete.
///
/// They complete after the whole batch has stepped, as the reference cleans them up: their
/// last pages enter the tree, and their paths are touched, after every other request's new
/// page, which decides what the LRU evicts first (a fuzzed LPM case showed it).
fn emit_tokens(core: &mut SglangCore, set: &mut Vec<u32>) {
    let mut k = 0;
    let mut finished = Vec::new();
    while k < set.len() {
        let s = set[k];
        if core.req(s).remaining_output() == 0 {
            // A transferred request that asked for no output: it leaves with this step, and
            // samples nothing (a disaggregated decode worker; the reference's too).
            set.remove(k);
            finished.push(s);
            continue;
        }
        let grow = step_pages(core, s);
        let r = core.req_mut(s);
        r.private_pages += grow;
        let ok = core.cache.take_private(grow);
        debug_assert!(ok, "step pages were reserved");
        let r = core.req_mut(s);
        r.seq.generated += 1;
        r.seq.num_computed = r.seq.len();
        let id = r.seq.id;
        let done = r.seq.generation_done();
        core.out.tokens.push(id);
        if done {
            set.remove(k);
            finished.push(s);
        } else {
            core.cache_materialized(s);
            k += 1;
        }
    }
    for s in finished {
        core.complete(s);
    }
}

/// The first token of the requests an extend pass just prefilled (`prefilled`, in batch
/// order). A request whose first token is also its last finishes right away and never
/// gives that token a slot (one that asked for no output finishes without a token). The
/// others' memory check covers only them, so only they can be retracted here. When a
/// retraction happens, the step becomes a decode step of the whole running batch (the
/// survivors join it, and the requests running before the pass decode too), timed as a
/// decode after the extend forward; otherwise the extend forward produced the tokens and
/// takes no extra time. A decode worker (whose extend passes readmit retracted requests)
/// retracts nobody here. If the slots do not fit even after eviction, they get no token now
/// (the next decode pass samples it, retracting if it must). Returns the requests that join
/// the running batch (after a retraction: the whole batch, which was taken from it).
///
/// Differential fuzzing pinned these down: a step checked over everything running would
/// retract running requests (or end a lone one as outgrowing the pool) where the reference
/// goes on, and a readmitted request one token short of its output ends with its extend
/// pass even when the pool has no page left.
pub(super) fn first_tokens(core: &mut SglangCore, prefilled: Vec<u32>) -> Vec<u32> {
    // A request asking for no output (an agentic trace may) completes with its prefill and
    // emits nothing, as in the reference; one whose first token is its last emits it.
    let (finishing, mut rest): (Vec<u32>, Vec<u32>) = prefilled.into_iter().partition(|&s| core.req(s).remaining_output() <= 1);
    let victims = if core.cfg.worker_type == crate::args::WorkerType::Decode { Vec::new() } else { retract_until_fits(core, &mut rest) };
    give_up_on_fruitless_prefills(core, &victims, &rest);
    if !victims.is_empty() {
        // A retraction turns the step into a decode step of the whole running batch: the
        // requests that were running before this pass decode in it too, behind the extend
        // forward (found case hf-75001-28: a running request's last token comes with the
        // survivor's first one).
        let mut running = std::mem::take(&mut core.running);
        running.append(&mut rest);
        core.out.duration += decode_time(core, &running);
        if make_room(core, pages_needed(core, &running)) {
            emit_tokens(core, &mut running);
        }
        rest = running;
    } else if make_room(core, pages_needed(core, &rest)) {
        emit_tokens(core, &mut rest);
    }
    // The finishing requests free their pages only after the step.
    for s in finishing {
        let r = core.req_mut(s);
        if r.remaining_output() == 1 {
            r.seq.generated += 1;
            let id = r.seq.id;
            core.out.tokens.push(id);
        }
        core.complete(s);
    }
    rest
}

/// A lone running request cannot take its next step while waiting requests hold pages for
/// the chunks of their prompts computed so far. The reference can never leave this state
/// (it stops with no result); servesim retracts those partial prefills instead, the latest
/// in the queue first, until the step fits. Returns whether it does.
fn release_waiting_chunks(core: &mut SglangCore) -> bool {
    let held: Vec<u32> = core.waiting.iter().rev().copied().filter(|&s| core.req(s).seq.num_computed > 0).collect();
    for s in held {
        retract(core, s);
        if make_room(core, pages_needed(core, &core.running)) {
            return true;
        }
    }
    false
}

/// Retract-after-prefill cycles tolerated for one request before it is given up.
const MAX_FRUITLESS_PREFILLS: u32 = 10_000;

/// A livelock guard: the reference can retract the same request right after its prefill
/// forever. servesim gives such a request up after `MAX_FRUITLESS_PREFILLS` cycles in a row.
fn give_up_on_fruitless_prefills(core: &mut SglangCore, victims: &[u32], survivors: &[u32]) {
    for &s in survivors {
        core.req_mut(s).fruitless_prefills = 0;
    }
    for &s in victims {
        let r = core.req_mut(s);
        r.fruitless_prefills += 1;
        if r.fruitless_prefills >= MAX_FRUITLESS_PREFILLS {
            let pos = core.waiting.iter().position(|&w| w == s).expect("a retracted request waits");
            core.waiting.remove(pos);
            let reason = format!(
                "retracted right after its prefill {MAX_FRUITLESS_PREFILLS} times in a row: the KV pool cannot hold it beside the running requests"
            );
            core.finish(s, Outcome::Unschedulable(reason));
        }
    }
}

pub(super) fn decode_pass(core: &mut SglangCore) {
    let mut running = std::mem::take(&mut core.running);
    let retracted = !retract_until_fits(core, &mut running).is_empty();
    core.running = running;
    if !make_room(core, pages_needed(core, &core.running)) && !release_waiting_chunks(core) {
        // A lone request outgrew what the pool can give it: no retraction can help (the
        // reference aborts the replay here).
        let s = core.running.pop().expect("a running request");
        let reason = format!("grew to {} tokens and no longer fits the KV pool of {} tokens", core.req(s).seq.len(), core.pool_tokens());
        core.finish(s, Outcome::Unschedulable(reason));
        return;
    }

    // A transferred request that asked for no output leaves with this step without
    // computing: the step is timed over the others (no time when it is alone), as in the
    // reference.
    if core.running.iter().any(|&s| core.req(s).remaining_output() == 0) {
        let live: Vec<u32> = core.running.iter().copied().filter(|&s| core.req(s).remaining_output() > 0).collect();
        core.out.duration = if live.is_empty() { Default::default() } else { decode_time(core, &live) };
        core.out.scheduled_tokens += live.len() as u64;
    } else {
        core.out.duration = decode_time(core, &core.running);
        core.out.scheduled_tokens += core.running.len() as u64;
    }
    if core.fpm {
        for &s in &core.running {
            let len = core.req(s).seq.len();
            core.out.fpm.decode(len);
        }
    }

    let mut running = std::mem::take(&mut core.running);
    emit_tokens(core, &mut running);
    core.running = running;
    if !retracted {
        core.ratio.decay();
    }
}
