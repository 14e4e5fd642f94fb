//! Forward-pass timing: how long a pass takes, given what it computes.
//!
//! Every modelled duration is rounded to whole nanoseconds the way Rust's
//! `Duration::from_secs_f64` rounds, then divided by the speed-up ratios with
//! `Duration::div_f64`; the reference does exactly this, and near-ties at the nanosecond
//! decide event order.

pub mod ais;
pub mod hf_config;
pub mod interpolated;
mod polynomial;
pub mod roofline;
pub mod zipfile;

pub use polynomial::Polynomial;

use crate::args::{EngineArgs, TimingModel};
use interpolated::Profile;
use std::sync::Arc;
use std::time::Duration;

/// A latency model for one engine rank.
#[derive(Clone, Debug)]
pub enum PerfModel {
    Polynomial(Polynomial),
    /// A constant time per pass that prefills and per pass that decodes.
    Fixed {
        prefill_ms: f64,
        decode_ms: f64,
    },
    /// Interpolated from a measured profile.
    Interpolated(Arc<Profile>),
    /// From the model's shape and the GPU's figures.
    Roofline(Arc<roofline::Roofline>),
    /// From measured kernels (AIConfigurator's tables).
    Ais(Arc<ais::AisModel>),
}

impl PerfModel {
    /// Prefill time of a batch of `batch` requests whose mean prompt length after the chunk
    /// is `isl` and whose mean already-present prefix is `prefix` (both floored means).
    pub fn prefill_ms(&self, batch: u64, isl: u64, prefix: u64) -> f64 {
        if batch == 0 {
            return 0.0;
        }
        match self {
            PerfModel::Polynomial(p) => p.prefill_ms(batch * isl.saturating_sub(prefix)),
            PerfModel::Fixed { prefill_ms, .. } => *prefill_ms,
            PerfModel::Interpolated(p) => p.prefill_ms(batch, isl, prefix),
            PerfModel::Roofline(r) => r.prefill_ms(batch, isl, prefix),
            PerfModel::Ais(m) => m.prefill_ms(batch, isl, prefix),
        }
    }

    /// Decode time of one step of `batch` requests holding `active_kv` tokens of context in
    /// total, out of a pool of `total_kv` tokens.
    pub fn decode_ms(&self, batch: u64, active_kv: u64, total_kv: u64) -> f64 {
        if batch == 0 {
            return 0.0;
        }
        match self {
            PerfModel::Polynomial(p) => p.decode_ms(active_kv, total_kv),
            PerfModel::Fixed { decode_ms, .. } => *decode_ms,
            PerfModel::Interpolated(p) => p.decode_ms(batch, active_kv),
            PerfModel::Roofline(r) => r.decode_ms(batch, active_kv),
            PerfModel::Ais(m) => m.decode_ms(batch, active_kv),
        }
    }
}

impl PerfModel {
    /// Whether this model can time a vision encoder: the roofline needs a model with a vision
    /// tower; the others charge `encoder_ms_per_token`.
    pub fn times_images(&self) -> bool {
        match self {
            PerfModel::Roofline(r) => r.has_vision(),
            _ => true,
        }
    }
}

/// A perf model plus the speed-up ratios: turns model milliseconds into pass durations.
#[derive(Clone, Debug)]
pub struct PassTimer {
    pub model: PerfModel,
    prefill_divisor: f64,
    decode_divisor: f64,
    /// Vision-encoder ms per image token for models without a vision tower.
    encoder_ms_per_token: f64,
    /// The power evidence of every pass part timed so far (measured kernels only; the
    /// reference's modelled power, `ais::energy`).
    power: std::cell::Cell<ais::energy::PowerEvidence>,
}

impl PassTimer {
    pub fn new(model: PerfModel, speedup_ratio: f64, decode_speedup_ratio: f64) -> Self {
        // A ratio <= 0 means "do not scale"; decode is divided once by the product.
        let s = if speedup_ratio > 0.0 { speedup_ratio } else { 1.0 };
        let d = if decode_speedup_ratio > 0.0 { decode_speedup_ratio } else { 1.0 };
        PassTimer {
            model,
            prefill_divisor: s,
            decode_divisor: s * d,
            encoder_ms_per_token: crate::args::DEFAULT_ENCODER_MS_PER_TOKEN,
            power: Default::default(),
        }
    }

    /// The timer the arguments describe; `profile` is the NPZ profile they name, loaded by the
    /// caller (the engine reads no files).
    pub fn from_args(args: &EngineArgs, profile: Option<&Arc<Profile>>) -> Result<Self, crate::args::ArgsError> {
        Self::from_args_with(args, profile, None)
    }

    /// [`PassTimer::from_args`] with the measured-kernel model the arguments name, built by
    /// the caller from the data file it read.
    pub fn from_args_with(
        args: &EngineArgs,
        profile: Option<&Arc<Profile>>,
        kernels: Option<&Arc<ais::AisModel>>,
    ) -> Result<Self, crate::args::ArgsError> {
        if args.timing_model.ais().is_some() {
            let Some(m) = kernels else {
                return Err(crate::args::ArgsError(
                    "engine.timing_model: the measured-kernel data was not loaded (the caller reads it and passes it in)".into(),
                ));
            };
            let mut timer = PassTimer::new(PerfModel::Ais(m.clone()), args.speedup_ratio, args.decode_speedup_ratio);
            if let Some(ms) = args.encoder_ms_per_token {
                timer.encoder_ms_per_token = ms;
            }
            return Ok(timer);
        }
        let model = match (&args.timing_model, args.profile_path()) {
            (_, Some(path)) => match profile {
                Some(p) => PerfModel::Interpolated(p.clone()),
                None => {
                    return Err(crate::args::ArgsError(format!(
                        "engine.timing_model: the profile `{path}` was not loaded (the caller reads it and passes it in)"
                    )));
                }
            },
            (TimingModel::Roofline(r), None) => PerfModel::Roofline(Arc::new(
                roofline::Roofline::new(r).map_err(|e| crate::args::ArgsError(format!("engine.timing_model.{e}")))?,
            )),
            (TimingModel::Fixed { prefill_ms, decode_ms }, None) => PerfModel::Fixed { prefill_ms: *prefill_ms, decode_ms: *decode_ms },
            _ => PerfModel::Polynomial(Polynomial),
        };
        let mut timer = PassTimer::new(model, args.speedup_ratio, args.decode_speedup_ratio);
        if let Some(ms) = args.encoder_ms_per_token {
            timer.encoder_ms_per_token = ms;
        }
        Ok(timer)
    }

    pub fn prefill(&self, batch: u64, isl: u64, prefix: u64) -> Duration {
        if let PerfModel::Ais(m) = &self.model
            && batch > 0
        {
            let (ms, evidence) = m.prefill_timed(batch, isl, prefix);
            self.record(evidence.scaled(self.prefill_divisor));
            return scale(ms, self.prefill_divisor);
        }
        scale(self.model.prefill_ms(batch, isl, prefix), self.prefill_divisor)
    }

    fn record(&self, e: ais::energy::PowerEvidence) {
        let mut total = self.power.get();
        total.add(e);
        self.power.set(total);
    }

    /// The power evidence of the passes timed so far: `None` unless the timing is measured
    /// kernels (the other models supply no energy).
    pub fn power_evidence(&self) -> Option<ais::energy::PowerEvidence> {
        matches!(self.model, PerfModel::Ais(_)).then(|| self.power.get())
    }

    /// The vision encoder over `images` images of `tokens` image tokens in all (scaled like
    /// prefill: it is compute-bound work of the same pass).
    pub fn encoder(&self, tokens: u64, images: u64) -> Duration {
        let ms = match &self.model {
            PerfModel::Roofline(r) => r.encoder_ms(tokens, images),
            _ => self.encoder_ms_per_token * tokens as f64,
        };
        scale(ms, self.prefill_divisor)
    }

    pub fn decode(&self, batch: u64, active_kv: u64, total_kv: u64) -> Duration {
        if let PerfModel::Ais(m) = &self.model
            && batch > 0
        {
            let (ms, evidence) = m.decode_timed(batch, active_kv);
            self.record(evidence.scaled(self.decode_divisor));
            return scale(ms, self.decode_divisor);
        }
        scale(self.model.decode_ms(batch, active_kv, total_kv), self.decode_divisor)
    }
}

fn scale(ms: f64, divisor: f64) -> Duration {
    let d = Duration::from_secs_f64(ms.max(0.0) / 1000.0);
    if divisor == 1.0 { d } else { d.div_f64(divisor) }
}

/// Milliseconds of a duration, as the reference converts them (seconds as f64, times 1000).
pub fn duration_ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(d: Duration) -> f64 {
        duration_ms(d)
    }

    #[test]
    fn rounds_to_the_nanosecond_before_scaling() {
        let t = PassTimer::new(PerfModel::Polynomial(Polynomial), 0.5, 1.0);
        // P(68) = 17.535841 ns-rounded; halved it is 35.071682 (35.071681 unrounded).
        assert_eq!(t.prefill(1, 68, 0).as_nanos(), 35_071_682);
    }

    #[test]
    fn speedups_match_the_reference_table() {
        // {0,1000,3}: TTFT 32.105859 / 16.05293, TTST 5.791536 / 2.895768 / 1.447884 / 0.723942.
        let cases = [
            (1.0, 1.0, 32.105859, 5.791536),
            (2.0, 1.0, 16.05293, 2.895768),
            (1.0, 4.0, 32.105859, 1.447884),
            (2.0, 4.0, 16.05293, 0.723942),
            (0.0, 0.0, 32.105859, 5.791536),
        ];
        for (s, d, ttft, ttst) in cases {
            let t = PassTimer::new(PerfModel::Polynomial(Polynomial), s, d);
            assert!((ms(t.prefill(1, 1000, 0)) - ttft).abs() < 1e-9, "{s} {d}");
            assert!((ms(t.decode(1, 1001, 16384 * 64)) - ttst).abs() < 1e-9, "{s} {d}");
        }
    }
}
