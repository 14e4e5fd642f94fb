//! A routing target's prompt-side (prefill) load, as the KV router counts it.
//!
//! Each routed request whose first token has not come charges its prompt less the overlap it
//! was routed with (its *effective* prefill tokens), fixed at routing. Without a load model
//! the charge stays whole until the first token. With the measured (AIS) load model
//! (`router_prefill_load_model: ais`, Dynamo's `--router-prefill-load-model ais`) each charge
//! also carries an expected prefill duration — the measured kernels' time of a one-request
//! prefill of those tokens after that prefix — and the load decays with time, as Dynamo
//! 1.6.1's `PrefillLoadTracker` does:
//!
//! - the oldest charge still in prefill is the *anchor*, anchored when it became the oldest
//!   (routed onto an empty target, or the anchor before it left);
//! - when every charge has a duration, the load at `now` is the sum of the charges less the
//!   tokens the anchor would have computed since it was anchored, `tokens × elapsed ÷
//!   expected` (whole nanoseconds, floored, not capped at the anchor's own tokens: elapsed
//!   time spills over into the charges behind it), never below 0;
//! - when some charge has no duration, only the anchor decays, to `⌈tokens × (1 − elapsed ÷
//!   expected)⌉` clamped to [0, tokens] (a charge without a duration does not decay).
//!
//! Times are whole nanoseconds, `now` as `Duration::from_secs_f64(now_ms / 1000)`, the way
//! the reference turns replay milliseconds into its decay clock.

use std::collections::VecDeque;
use std::time::Duration;

/// Replay milliseconds on the decay clock (whole nanoseconds).
pub fn clock_ns(now_ms: f64) -> u64 {
    Duration::from_secs_f64(now_ms.max(0.0) / 1000.0).as_nanos().min(u64::MAX as u128) as u64
}

#[derive(Clone, Debug)]
struct Charge {
    id: u64,
    tokens: u64,
    /// Expected prefill duration (ns), from the load model.
    expected_ns: Option<u64>,
}

#[derive(Clone, Debug, Default)]
pub struct PrefillLoad {
    /// Charges in routing order; the front is the anchor.
    charges: VecDeque<Charge>,
    sum: u64,
    unmodeled: usize,
    /// When the front charge became the anchor.
    anchored_ns: u64,
}

impl PrefillLoad {
    /// Adds request `id`'s charge at `now_ns` (a charge of 0 tokens is not tracked).
    pub fn add(&mut self, id: u64, tokens: u64, expected_ns: Option<u64>, now_ns: u64) {
        if tokens == 0 {
            return;
        }
        if self.charges.is_empty() {
            self.anchored_ns = now_ns;
        }
        self.sum += tokens;
        self.unmodeled += expected_ns.is_none() as usize;
        self.charges.push_back(Charge { id, tokens, expected_ns });
    }

    /// Drops request `id`'s charge at `now_ns`; the next oldest becomes the anchor then if
    /// it was the anchor. Whether it had one.
    pub fn remove(&mut self, id: u64, now_ns: u64) -> bool {
        let Some(i) = self.charges.iter().position(|c| c.id == id) else { return false };
        let c = self.charges.remove(i).expect("found");
        self.sum -= c.tokens;
        self.unmodeled -= c.expected_ns.is_none() as usize;
        if i == 0 {
            self.anchored_ns = now_ns;
        }
        true
    }

    /// The load at `now_ns`, in tokens.
    pub fn tokens_at(&self, now_ns: u64) -> u64 {
        let Some(anchor) = self.charges.front() else { return 0 };
        let elapsed = now_ns.saturating_sub(self.anchored_ns);
        if self.unmodeled == 0 {
            let expected = anchor.expected_ns.expect("every charge is modelled");
            let done = if expected == 0 { anchor.tokens as u128 } else { anchor.tokens as u128 * elapsed as u128 / expected as u128 };
            return self.sum.saturating_sub(done.min(u64::MAX as u128) as u64);
        }
        let remaining = match anchor.expected_ns {
            None => anchor.tokens,
            Some(0) => 0,
            Some(expected) => {
                let left = (1.0 - elapsed as f64 / 1e9 / (expected as f64 / 1e9)).clamp(0.0, 1.0);
                (anchor.tokens as f64 * left).ceil() as u64
            }
        };
        self.sum - anchor.tokens + remaining
    }

    /// The charges' sum, undecayed.
    #[cfg(test)]
    pub fn full_tokens(&self) -> u64 {
        self.sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn without_durations_the_load_stays_whole_until_it_leaves() {
        let mut l = PrefillLoad::default();
        l.add(1, 64, None, 0);
        l.add(2, 32, None, 0);
        l.add(3, 0, None, 0);
        assert_eq!(l.tokens_at(100 * S), 96);
        assert!(l.remove(2, 5 * S));
        assert!(!l.remove(3, 5 * S), "a zero charge is not tracked");
        assert_eq!(l.tokens_at(100 * S), 64);
        l.remove(1, 6 * S);
        assert_eq!(l.tokens_at(100 * S), 0);
    }

    #[test]
    fn the_anchor_decays_and_elapsed_time_spills_into_later_charges() {
        let mut l = PrefillLoad::default();
        l.add(1, 64, Some(10 * S), 0);
        assert_eq!(l.tokens_at(0), 64);
        assert_eq!(l.tokens_at(5 * S), 32);
        assert_eq!(l.tokens_at(10 * S), 0);
        l.add(2, 100, Some(S), 5 * S);
        // At 15 s the anchor "did" 96 tokens: 32 of them spill into the second charge.
        assert_eq!(l.tokens_at(15 * S), 164 - 96);
        assert_eq!(l.tokens_at(100 * S), 0);
        // The anchor leaves at 12 s: the second charge is anchored then.
        l.remove(1, 12 * S);
        assert_eq!(l.tokens_at(12 * S), 100);
        assert_eq!(l.tokens_at(12 * S + S / 4), 75);
        assert_eq!(l.full_tokens(), 100);
    }

    #[test]
    fn with_an_unmodelled_charge_only_the_anchor_decays_clamped() {
        let mut l = PrefillLoad::default();
        l.add(1, 10, Some(3 * S), 0);
        l.add(2, 50, None, 0);
        // ⌈10 × (1 − 1/3)⌉ = 7.
        assert_eq!(l.tokens_at(S), 57);
        assert_eq!(l.tokens_at(100 * S), 50, "the anchor's own tokens at most");
        let mut z = PrefillLoad::default();
        z.add(1, 10, Some(0), 0);
        assert_eq!(z.tokens_at(0), 0, "a zero expected duration is done at once");
    }

    #[test]
    fn the_clock_rounds_like_the_reference() {
        assert_eq!(clock_ns(1.0), 1_000_000);
        assert_eq!(clock_ns(0.1), 100_000);
        assert_eq!(clock_ns(-3.0), 0);
    }
}
