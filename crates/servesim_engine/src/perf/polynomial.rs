//! Dynamo's default timing polynomial (fitted to H200 planner sweeps).

/// Prefill: quadratic in the batch's new tokens. Decode: quadratic in KV utilisation.
#[derive(Clone, Copy, Debug, Default)]
pub struct Polynomial;

impl Polynomial {
    /// `tokens` = batch × (mean isl − mean prefix); 0 tokens cost nothing.
    pub fn prefill_ms(&self, tokens: u64) -> f64 {
        if tokens == 0 {
            return 0.0;
        }
        let t = tokens as f64;
        (4.209989e-7 * t * t + 1.518344e-2 * t + 16.50142).max(0.0)
    }

    /// `active_kv` = Σ context of the decode batch (logical tokens), capped at the pool.
    pub fn decode_ms(&self, active_kv: u64, total_kv: u64) -> f64 {
        let p = if total_kv == 0 { 1.0 } else { (active_kv as f64 / total_kv as f64).min(1.0) };
        // The evaluation order matters at the nanosecond: −25.74·(p·p), not (−25.74·p)·p.
        (-25.74 * (p * p) + 54.01 * p + 5.74).max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_values() {
        let p = Polynomial;
        for (t, ms) in [(1000, 32.11), (2048, 49.36), (4096, 85.76), (8192, 169.14), (16384, 378.28)] {
            assert!((p.prefill_ms(t) - ms).abs() < 0.01, "{t}");
        }
        assert_eq!(p.prefill_ms(0), 0.0);
        for (u, ms) in [(0.0, 5.74), (0.25, 17.63), (0.5, 26.31), (0.75, 31.77), (1.0, 34.01)] {
            let total = 1_000_000u64;
            assert!((p.decode_ms((u * total as f64) as u64, total) - ms).abs() < 0.01, "{u}");
        }
        // Utilisation saturates at 1.
        assert_eq!(p.decode_ms(262, 192), p.decode_ms(192, 192));
    }
}
