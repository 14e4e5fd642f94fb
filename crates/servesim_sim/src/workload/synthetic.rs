//! Seeded synthetic workloads: an arrival process, normal input/output lengths and optional
//! shared-prefix groups (DynoSim's `SyntheticTraceSpec`, in servesim's own schema).
//!
//! Logarithms, cosines and powers come from the `libm` crate, not the platform: glibc's and
//! wasm's differ in the last bit for some inputs, and a workload must be the same requests
//! natively and in the page.

use super::{Sessions, Workload};
use crate::SimError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use servesim_engine::sequence::Image;

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Exponential gaps with mean 1000 / rate ms.
    Poisson,
    /// Gaps of exactly 1000 / rate ms.
    Constant,
    /// Gamma gaps (shape = `smoothness`) with mean 1000 / rate ms: < 1 is burstier than Poisson.
    Gamma,
    /// Everything at t = 0.
    Burst,
}

/// A length distribution: mean + stddev × N(0, 1), rounded, at least 1.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Length {
    pub mean: f64,
    #[serde(default)]
    pub stddev: f64,
}

/// A length object as written: a missing `mean` is the field's default mean; a missing
/// `stddev` is 0 (a fixed length), as it always was.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PartialLength {
    #[serde(default)]
    mean: Option<f64>,
    #[serde(default)]
    stddev: f64,
}

fn length_or<'de, D: serde::Deserializer<'de>>(d: D, default: Length) -> Result<Length, D::Error> {
    let p = PartialLength::deserialize(d)?;
    Ok(Length { mean: p.mean.unwrap_or(default.mean), stddev: p.stddev })
}

fn input_length<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Length, D::Error> {
    length_or(d, SyntheticSpec::default().input_tokens)
}

fn output_length<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Length, D::Error> {
    length_or(d, SyntheticSpec::default().output_tokens)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SyntheticSpec {
    pub num_requests: u32,
    pub arrival: Arrival,
    /// Mean requests per second.
    pub rate_rps: f64,
    /// Gamma shape for `arrival: gamma`.
    pub smoothness: f64,
    #[serde(deserialize_with = "input_length")]
    pub input_tokens: Length,
    #[serde(deserialize_with = "output_length")]
    pub output_tokens: Length,
    /// Fraction of each prompt's blocks shared with its prefix group, in [0, 1].
    pub shared_prefix_ratio: f64,
    pub num_prefix_groups: u32,
    /// Tokens per prompt block (the prefix-sharing granularity).
    pub block_tokens: u32,
    pub seed: u64,
    /// Turns of each conversation (1: every request stands alone). A later turn's prompt is
    /// the conversation so far (earlier prompts and their outputs) plus `input_tokens` new
    /// tokens; it arrives `think_time_ms` after the previous turn ends. `num_requests` counts
    /// turns; the arrival process starts conversations.
    #[serde(skip_serializing_if = "is_one")]
    pub turns_per_session: u32,
    #[serde(skip_serializing_if = "is_zero")]
    pub think_time_ms: f64,
    /// Whether a later turn's prompt carries the conversation so far (true, servesim's
    /// default) or is `input_tokens` of its own, after the session's shared prefix (false:
    /// Dynamo 1.6.1's synthetic sessions, as DynoSim's predict files get them).
    #[serde(skip_serializing_if = "is_true")]
    pub history: bool,
    /// Closed loop: this many users, each holding one conversation at a time and starting the
    /// next as soon as it ends (the arrival process is then not used).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<u32>,
    /// Multimodal requests: images in every prompt (absent: text only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub images: Option<ImagesSpec>,
    /// Benchmark-shaped lengths (`vllm bench serve --random-range-ratio`): each input and
    /// output length uniform in [⌊r·L⌋, L] for L the length's `mean` (its `stddev` must be
    /// 0), drawn from a stream of its own so arrivals and prefixes stay as without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range_ratio: Option<f64>,
}

/// `workload.images`: each request carries `per_request` images of `tokens_per_image` image
/// tokens, placed after the shared prefix (if any) and before the rest of the text. Their
/// content is drawn from `distinct` different images (0: every image is unique).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImagesSpec {
    pub per_request: u32,
    pub tokens_per_image: u32,
    #[serde(default)]
    pub distinct: u32,
}

fn is_true(b: &bool) -> bool {
    *b
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Default for SyntheticSpec {
    fn default() -> Self {
        SyntheticSpec {
            num_requests: 200,
            arrival: Arrival::Poisson,
            rate_rps: 10.0,
            smoothness: 1.0,
            input_tokens: Length { mean: 2048.0, stddev: 512.0 },
            output_tokens: Length { mean: 256.0, stddev: 64.0 },
            shared_prefix_ratio: 0.0,
            num_prefix_groups: 0,
            block_tokens: 64,
            seed: 42,
            turns_per_session: 1,
            think_time_ms: 0.0,
            history: true,
            concurrency: None,
            images: None,
            range_ratio: None,
        }
    }
}

impl SyntheticSpec {
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |f: &str, why: &str| Err(SimError::new(format!("workload.{f}: {why}")));
        if self.num_requests == 0 || self.num_requests > 2_000_000 {
            return bad("num_requests", "must be within 1..=2000000");
        }
        if !(self.rate_rps.is_finite() && self.rate_rps > 0.0) && self.arrival != Arrival::Burst {
            return bad("rate_rps", "must be a positive number");
        }
        if self.arrival == Arrival::Gamma && !(self.smoothness.is_finite() && self.smoothness > 0.0) {
            return bad("smoothness", "must be a positive number");
        }
        for (f, l) in [("input_tokens", self.input_tokens), ("output_tokens", self.output_tokens)] {
            if !(l.mean.is_finite() && l.mean >= 1.0 && l.mean <= 1e6 && l.stddev.is_finite() && l.stddev >= 0.0) {
                return bad(f, "mean must be within [1, 1e6] and stddev non-negative");
            }
        }
        if !(0.0..=1.0).contains(&self.shared_prefix_ratio) {
            return bad("shared_prefix_ratio", "must be within [0, 1]");
        }
        if self.block_tokens == 0 {
            return bad("block_tokens", "must be positive");
        }
        if self.num_prefix_groups > 1000 {
            return bad("num_prefix_groups", "must be at most 1000");
        }
        if self.turns_per_session == 0 || self.turns_per_session > 1000 {
            return bad("turns_per_session", "must be within 1..=1000");
        }
        if !(self.think_time_ms.is_finite() && self.think_time_ms >= 0.0) {
            return bad("think_time_ms", "must be a non-negative number");
        }
        if self.concurrency == Some(0) {
            return bad("concurrency", "must be at least 1");
        }
        if let Some(r) = self.range_ratio {
            if !(r > 0.0 && r <= 1.0) {
                return bad("range_ratio", "must be within (0, 1]");
            }
            if self.input_tokens.stddev != 0.0 || self.output_tokens.stddev != 0.0 {
                return bad("range_ratio", "draws lengths uniformly below each mean: input_tokens and output_tokens need stddev 0");
            }
        }
        if let Some(m) = &self.images {
            if m.per_request > 64 {
                return bad("images.per_request", "must be at most 64");
            }
            if m.tokens_per_image == 0 || m.tokens_per_image > 1_000_000 {
                return bad("images.tokens_per_image", "must be within 1..=1000000");
            }
            if self.turns_per_session > 1 && m.per_request > 0 {
                return bad("images", "multi-turn conversations with images are not supported yet (turns_per_session must be 1)");
            }
        }
        Ok(())
    }

    /// Generates the workload; the same spec always gives the same requests.
    pub fn generate(&self) -> Result<Workload, SimError> {
        self.validate()?;
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        // Images draw from their own stream of the same seed, so the text (arrivals, lengths,
        // prefixes) is the same with images as without.
        let mut image_rng = ChaCha8Rng::seed_from_u64(self.seed);
        image_rng.set_stream(1);
        let mut range_rng = ChaCha8Rng::seed_from_u64(self.seed);
        range_rng.set_stream(2);
        let mut length = |rng: &mut ChaCha8Rng, l: Length| match self.range_ratio {
            Some(r) => {
                let hi = l.mean.round().max(1.0) as u32;
                let lo = ((r * hi as f64).floor() as u32).clamp(1, hi);
                range_rng.random_range(lo..=hi)
            }
            None => sample_length(rng, l),
        };
        let mut w = Workload::new(self.block_tokens);
        let mean_gap = 1000.0 / self.rate_rps;
        let mut t = 0.0;
        // Ids become u32 tokens: group prefixes below 2^31, unique blocks from 2^31 up.
        let mut next_id: u64 = 1 << 31;
        let mut ids = Vec::new();
        let turns = self.turns_per_session;
        let mut sessions = Sessions::default();
        let mut session_group = None;
        for i in 0..self.num_requests {
            let (session, turn) = (i / turns, i % turns);
            if turn > 0 && self.history {
                // A later turn: only its new input (the driver prepends the conversation).
                let isl = length(&mut rng, self.input_tokens);
                let osl = length(&mut rng, self.output_tokens);
                ids.clear();
                while (ids.len() as u32) < isl.div_ceil(self.block_tokens) {
                    next_id += 1;
                    ids.push(next_id);
                }
                sessions.push(session, String::new, i, self.think_time_ms);
                w.push(f64::NAN, isl, osl, &ids);
                continue;
            }
            if i > 0 && turn == 0 {
                t += match self.arrival {
                    Arrival::Burst => 0.0,
                    Arrival::Constant => mean_gap,
                    Arrival::Poisson => -mean_gap * libm::log(1.0 - rng.random::<f64>()),
                    Arrival::Gamma => gamma(&mut rng, self.smoothness) * mean_gap / self.smoothness,
                };
            }
            let isl = length(&mut rng, self.input_tokens);
            let osl = length(&mut rng, self.output_tokens);
            let blocks = isl.div_ceil(self.block_tokens);
            let shared = if self.num_prefix_groups > 0 { (blocks as f64 * self.shared_prefix_ratio).round() as u32 } else { 0 };
            ids.clear();
            if shared > 0 {
                // A session keeps its group over its turns.
                let g = match (turn, session_group) {
                    (0, _) | (_, None) => rng.random_range(0..self.num_prefix_groups) as u64,
                    (_, Some(g)) => g,
                };
                session_group = Some(g);
                ids.extend((0..shared as u64).map(|j| (1 << 30) + (g << 20) + j));
            } else if turn == 0 {
                session_group = None;
            }
            while (ids.len() as u32) < blocks {
                next_id += 1;
                ids.push(next_id);
            }
            if turns > 1 {
                sessions.push(session, || format!("conversation_{session}"), i, if turn == 0 { 0.0 } else { self.think_time_ms });
            }
            w.push(if turn == 0 { t } else { f64::NAN }, isl, osl, &ids);
            if let Some(m) = &self.images {
                let offset = (shared * self.block_tokens).min(isl);
                let images = (0..m.per_request)
                    .map(|_| {
                        let hash =
                            if m.distinct == 0 { image_rng.random::<u64>() } else { image_rng.random_range(0..m.distinct) as u64 + 1 };
                        Image { offset, tokens: m.tokens_per_image, hash }
                    })
                    .collect();
                w.set_images(images);
            }
        }
        if turns > 1 {
            w.sessions = Some(sessions);
            w.cumulative = self.history;
        }
        Ok(w)
    }
}

fn sample_length(rng: &mut ChaCha8Rng, l: Length) -> u32 {
    if l.stddev == 0.0 {
        return l.mean.round().max(1.0) as u32;
    }
    // Box–Muller.
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random();
    let z = (-2.0 * libm::log(u1)).sqrt() * libm::cos(2.0 * std::f64::consts::PI * u2);
    (l.mean + z * l.stddev).round().clamp(1.0, 4e6) as u32
}

/// Gamma(shape, 1) by Marsaglia–Tsang, with the u^(1/shape) boost below shape 1.
fn gamma(rng: &mut ChaCha8Rng, shape: f64) -> f64 {
    if shape < 1.0 {
        let u: f64 = 1.0 - rng.random::<f64>();
        return gamma(rng, shape + 1.0) * libm::pow(u, 1.0 / shape);
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let u1: f64 = 1.0 - rng.random::<f64>();
        let u2: f64 = rng.random();
        let x = (-2.0 * libm::log(u1)).sqrt() * libm::cos(2.0 * std::f64::consts::PI * u2);
        let v = (1.0 + c * x).powi(3);
        if v <= 0.0 {
            continue;
        }
        let u: f64 = 1.0 - rng.random::<f64>();
        if libm::log(u) < 0.5 * x * x + d - d * v + d * libm::log(v) {
            return d * v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_shaped_as_asked() {
        let spec = SyntheticSpec { num_requests: 2000, shared_prefix_ratio: 0.5, num_prefix_groups: 4, ..Default::default() };
        let a = spec.generate().unwrap();
        let b = spec.generate().unwrap();
        assert_eq!(a.rows, b.rows);
        let span = a.rows.last().unwrap().timestamp / 1000.0;
        let rate = 1999.0 / span;
        assert!((rate - 10.0).abs() < 1.0, "rate {rate}");
        let mean_isl = a.rows.iter().map(|r| r.input_length as f64).sum::<f64>() / 2000.0;
        assert!((mean_isl - 2048.0).abs() < 50.0, "isl {mean_isl}");
        // Requests of one group share their leading ids.
        let firsts: std::collections::BTreeSet<u32> = a.rows.iter().map(|r| a.hash_ids(r)[0]).collect();
        assert_eq!(firsts.len(), 4);
    }

    #[test]
    fn images_draw_from_the_distinct_pool() {
        let images = ImagesSpec { per_request: 2, tokens_per_image: 100, distinct: 3 };
        let spec = SyntheticSpec { num_requests: 50, images: Some(images), ..Default::default() };
        let w = spec.generate().unwrap();
        let hashes: std::collections::BTreeSet<u64> = (0..50).flat_map(|i| w.images(i).iter().map(|m| m.hash)).collect();
        assert_eq!(hashes.len(), 3);
        // The text is the same as without images.
        let text = SyntheticSpec { num_requests: 50, ..Default::default() }.generate().unwrap();
        assert_eq!(w.rows, text.rows);
        assert_eq!(w.input_length(0), w.rows[0].input_length + 200);
        let unique = SyntheticSpec { images: Some(ImagesSpec { distinct: 0, ..images }), ..spec }.generate().unwrap();
        let hashes: std::collections::BTreeSet<u64> = (0..50).flat_map(|i| unique.images(i).iter().map(|m| m.hash)).collect();
        assert_eq!(hashes.len(), 100);
        let e = SyntheticSpec { images: Some(ImagesSpec { tokens_per_image: 0, ..images }), ..Default::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("workload.images.tokens_per_image"), "{e}");
    }

    /// `range_ratio`: every length within [⌊r·L⌋, L], spread over it, the same requests for
    /// the same seed, and the arrivals exactly as without it.
    #[test]
    fn range_ratio_draws_lengths_uniformly_below_the_mean() {
        let fixed = SyntheticSpec {
            num_requests: 4000,
            input_tokens: Length { mean: 1000.0, stddev: 0.0 },
            output_tokens: Length { mean: 200.0, stddev: 0.0 },
            ..Default::default()
        };
        let spec = SyntheticSpec { range_ratio: Some(0.5), ..fixed.clone() };
        let w = spec.generate().unwrap();
        assert_eq!(w.rows, spec.generate().unwrap().rows);
        let isl: Vec<u32> = w.rows.iter().map(|r| r.input_length).collect();
        let osl: Vec<u32> = w.rows.iter().map(|r| r.output_length).collect();
        assert!(isl.iter().all(|&l| (500..=1000).contains(&l)) && osl.iter().all(|&l| (100..=200).contains(&l)));
        assert_eq!((isl.iter().min(), isl.iter().max()), (Some(&500), Some(&1000)));
        let mean = isl.iter().map(|&l| l as f64).sum::<f64>() / isl.len() as f64;
        assert!((mean - 750.0).abs() < 10.0, "mean {mean}");
        let below = isl.iter().filter(|&&l| l < 750).count() as f64 / isl.len() as f64;
        assert!((below - 0.5).abs() < 0.03, "{below}");
        let plain = fixed.generate().unwrap();
        let times = |w: &Workload| w.rows.iter().map(|r| r.timestamp).collect::<Vec<_>>();
        assert_eq!(times(&w), times(&plain));
        let e = SyntheticSpec { range_ratio: Some(0.0), ..fixed.clone() }.validate().unwrap_err();
        assert!(e.to_string().contains("workload.range_ratio"), "{e}");
        let e = SyntheticSpec { range_ratio: Some(0.5), ..Default::default() }.validate().unwrap_err();
        assert!(e.to_string().contains("stddev 0"), "{e}");
    }

    #[test]
    fn bad_fields_are_named() {
        let e = SyntheticSpec { rate_rps: 0.0, ..Default::default() }.generate().unwrap_err();
        assert!(e.to_string().contains("workload.rate_rps"));
    }
}
