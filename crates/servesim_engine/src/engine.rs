//! The engine a harness holds: the core of the configured backend, behind the contract in
//! `sched/contract.rs` ([`Scheduler`], [`HandOff`]), whose pass output is in
//! `sched/output.rs`. A core has no clock: `step` computes a pass and says how long it takes;
//! the harness owns time, applies the pass's effects at its end, and tells a core whose
//! connector runs transfers (`TransferClock`) the time of each pass and each deadline (the
//! harness queues each idle rank's next deadline as an event and comes back then). An engine
//! is built from [`ResolvedArgs`] (`EngineArgs::resolve`, once per pool): it validates
//! nothing itself, and reads no field whose 0 or absence means "the default".

use crate::args::{ArgsError, Backend, ResolvedArgs};
use crate::kv::KvEvent;
use crate::metrics::RankMetrics;
use crate::sched::contract::{HandOff, KvBlocks, RankSetup, Scheduler, TransferClock};
use crate::sched::output::{Finished, PassOutput, Reservation};
use crate::sched::sglang::SglangCore;
use crate::sched::vllm::VllmCore;
use crate::sequence::Request;

/// The core of a backend.
#[derive(Debug)]
// One per rank, created once and never moved in a hot loop: boxing the cores would add an
// indirection to every call instead; calls dispatch by a match (see `dispatch!`).
#[allow(clippy::large_enum_variant)]
pub enum Engine {
    Vllm(VllmCore),
    Sglang(SglangCore),
}

impl Engine {
    /// Builds one rank's core. With more than one rank SGLang runs DP attention, which splits
    /// the chunked-prefill size between the ranks and scales `schedule_conservativeness` by
    /// 0.3 (both measured on the reference); the vLLM core is the same on every rank.
    pub fn new(args: &ResolvedArgs, setup: &RankSetup) -> Result<Self, ArgsError> {
        match args.backend {
            // TRT-LLM runs the vLLM core under its own capacity policy (guaranteed no evict).
            Backend::Vllm | Backend::Trtllm => Ok(Engine::Vllm(VllmCore::new(args, setup)?)),
            Backend::Sglang => Ok(Engine::Sglang(SglangCore::new(args, setup)?)),
        }
    }
}

/// `$c` bound to the core of `$e`, whichever backend it is: each call dispatches by a match
/// (as `kv::Pool` does), not through a vtable.
macro_rules! dispatch {
    ($e:expr, $c:ident => $call:expr) => {
        match $e {
            Engine::Vllm($c) => $call,
            Engine::Sglang($c) => $call,
        }
    };
}

impl Engine {
    /// The power evidence of the passes this core has timed (measured kernels only).
    pub fn power_evidence(&self) -> Option<crate::perf::ais::energy::PowerEvidence> {
        dispatch!(self, c => c.timer().power_evidence())
    }
}

impl Scheduler for Engine {
    fn submit(&mut self, req: Request) {
        dispatch!(self, c => c.submit(req))
    }
    fn step(&mut self) -> &PassOutput {
        dispatch!(self, c => c.step())
    }
    fn step_into(&mut self, out: &mut Box<PassOutput>) {
        dispatch!(self, c => c.step_into(out))
    }
    fn has_work(&self) -> bool {
        dispatch!(self, c => c.has_work())
    }
    fn in_flight(&self) -> usize {
        dispatch!(self, c => c.in_flight())
    }
    fn stalled(&self) -> bool {
        dispatch!(self, c => c.stalled())
    }
    fn available_blocks(&self) -> u32 {
        dispatch!(self, c => c.available_blocks())
    }
    fn abandon(&mut self, reason: &str) -> Vec<Finished> {
        dispatch!(self, c => c.abandon(reason))
    }
    fn metrics(&self) -> RankMetrics {
        dispatch!(self, c => c.metrics())
    }
    fn take_idle_kv_events(&mut self, into: &mut Vec<KvEvent>) {
        dispatch!(self, c => c.take_idle_kv_events(into))
    }
    fn check(&self) -> Result<(), String> {
        dispatch!(self, c => c.check())
    }
    fn cached_hashes(&self) -> Option<Vec<u64>> {
        dispatch!(self, c => c.cached_hashes())
    }
    fn kv_blocks(&self) -> KvBlocks {
        dispatch!(self, c => c.kv_blocks())
    }
    fn held_blocks(&self) -> Option<Vec<(u64, Vec<u32>)>> {
        dispatch!(self, c => c.held_blocks())
    }
    fn block_view(&self, block: u32) -> (Option<u64>, u32) {
        dispatch!(self, c => c.block_view(block))
    }
    fn set_kv_events(&mut self, on: bool) {
        dispatch!(self, c => c.set_kv_events(on))
    }
    fn set_forward_pass_metrics(&mut self, on: bool) {
        dispatch!(self, c => c.set_forward_pass_metrics(on))
    }
    fn set_steady_tokens(&mut self, on: bool) {
        dispatch!(self, c => c.set_steady_tokens(on))
    }
    fn take_open_streaks(&mut self) -> Vec<(u64, u32)> {
        dispatch!(self, c => c.take_open_streaks())
    }
    fn transfers(&self) -> Option<&dyn TransferClock> {
        dispatch!(self, c => c.transfers())
    }
    fn transfers_mut(&mut self) -> Option<&mut dyn TransferClock> {
        dispatch!(self, c => c.transfers_mut())
    }
}

impl HandOff for Engine {
    fn release_source(&mut self, id: u64) {
        dispatch!(self, c => c.release_source(id))
    }
    fn reserve_destination(&mut self, req: Request) -> Reservation {
        dispatch!(self, c => c.reserve_destination(req))
    }
    fn activate(&mut self, id: u64) -> bool {
        dispatch!(self, c => c.activate(id))
    }
    fn set_destinations_pending(&mut self, pending: bool) {
        dispatch!(self, c => c.set_destinations_pending(pending))
    }
    fn reservation_capacity(&self) -> u32 {
        dispatch!(self, c => c.reservation_capacity())
    }
    fn idle_with_queue(&self) -> bool {
        dispatch!(self, c => c.idle_with_queue())
    }
    fn holds_for_handoff(&self) -> bool {
        dispatch!(self, c => c.holds_for_handoff())
    }
    fn idle_pass(&mut self) {
        dispatch!(self, c => c.idle_pass())
    }
}
