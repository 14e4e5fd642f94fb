//! Waiting-queue order: FIFO (arrival order, nothing to do) or longest prefix match.

use super::SglangCore;
use crate::args::SchedulePolicy;

/// Above this many waiting requests LPM is too costly and SGLang stays FIFO.
const LPM_MAX_WAITING: usize = 128;
/// Requests matching at most this many cached tokens are checked for prefixes shared with
/// earlier waiting requests...
const IN_BATCH_CHECK_TOKENS: u32 = 32;
/// ...and pushed back when their first this-many tokens repeat an earlier request's, so the
/// earlier one populates the cache first.
const DEPRIORITIZE_TOKENS: u32 = 32;

/// Longest prefix match: stable sort by (shares an uncached prefix with an earlier waiting
/// request, then longer cached match first). The order persists, as SGLang sorts its queue.
/// Without a prefix cache there is nothing to match, and LPM is plain FIFO.
pub(super) fn reorder_waiting(core: &mut SglangCore) {
    let lpm = core.cfg.policy == SchedulePolicy::Lpm && core.cfg.prefix_caching;
    if !lpm || core.waiting.len() > LPM_MAX_WAITING || core.waiting.len() < 2 {
        return;
    }
    let page = core.cfg.page;
    let probe_pages = DEPRIORITIZE_TOKENS.div_ceil(page);
    let mut seen = rustc_hash::FxHashSet::default();
    let mut keyed: Vec<(bool, u32, u32)> = Vec::with_capacity(core.waiting.len());
    let waiting: Vec<u32> = core.waiting.iter().copied().collect();
    for s in waiting {
        let len = core.req(s).seq.len();
        let full = len / page;
        let keys = core.page_hashes(s, 0, full);
        let matched = core.cache.peek(keys.iter().map(|k| k.0)).1 * page;
        let mut deprioritized = false;
        if matched <= IN_BATCH_CHECK_TOKENS && full >= probe_pages {
            let probe = core.page_hashes(s, probe_pages - 1, probe_pages)[0].1;
            deprioritized = !seen.insert(probe);
        }
        keyed.push((deprioritized, matched, s));
    }
    keyed.sort_by_key(|&(d, m, _)| (d, std::cmp::Reverse(m)));
    core.waiting = keyed.into_iter().map(|k| k.2).collect();
}
