//! The engine a harness holds: the core of the configured backend, behind the contract in
//! `sched/contract.rs` ([`Scheduler`], [`HandOff`]), whose pass output is in
//! `sched/output.rs`. A core has no clock: `step` computes a pass and says how long it takes;
//! the harness owns time and applies the pass's effects at its end.

use crate::args::{ArgsError, Backend, EngineArgs};
use crate::sched::contract::{RankSetup, Scheduler};
use crate::sched::sglang::SglangCore;
use crate::sched::vllm::VllmCore;
use std::ops::{Deref, DerefMut};

/// The core of a backend.
#[derive(Debug)]
// One per rank, created once and never moved in a hot loop: boxing the cores would add an
// indirection to every call instead.
#[allow(clippy::large_enum_variant)]
pub enum Engine {
    Vllm(VllmCore),
    Sglang(SglangCore),
}

impl Engine {
    /// Builds one rank's core. With more than one rank SGLang runs DP attention, which splits
    /// the chunked-prefill size between the ranks and scales `schedule_conservativeness` by
    /// 0.3 (both measured on the reference); the vLLM core is the same on every rank.
    pub fn new(args: &EngineArgs, setup: &RankSetup) -> Result<Self, ArgsError> {
        // Unset values (a roofline's pool) are derived here if the caller has not done it.
        let resolved;
        let args = if args.num_gpu_blocks.is_none() {
            resolved = args.resolved()?;
            &resolved
        } else {
            args
        };
        args.validate()?;
        match args.backend {
            // TRT-LLM runs the vLLM core under its own capacity policy (guaranteed no evict).
            Backend::Vllm | Backend::Trtllm => Ok(Engine::Vllm(VllmCore::new(args, setup)?)),
            Backend::Sglang => Ok(Engine::Sglang(SglangCore::new(args, setup)?)),
        }
    }
}

impl Deref for Engine {
    type Target = dyn Scheduler;
    fn deref(&self) -> &(dyn Scheduler + 'static) {
        match self {
            Engine::Vllm(c) => c,
            Engine::Sglang(c) => c,
        }
    }
}

impl DerefMut for Engine {
    fn deref_mut(&mut self) -> &mut (dyn Scheduler + 'static) {
        match self {
            Engine::Vllm(c) => c,
            Engine::Sglang(c) => c,
        }
    }
}
