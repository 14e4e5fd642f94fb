//! servesim's engine core: a deterministic, clock-free state machine modelled on NVIDIA
//! Dynamo's mocker. The harness submits requests and calls [`Scheduler::step`] once per forward
//! pass; the pass's duration comes from the performance model.

pub mod args;
pub mod engine;
pub mod hash;
pub mod kv;
pub mod metrics;
pub mod perf;
pub mod sched;
pub mod sequence;

pub use args::{ArgsError, Backend, EngineArgs, LaunchConfig, ResolvedArgs, WorkerType};
pub use engine::Engine;
pub use metrics::RankMetrics;
pub use sched::contract::{HandOff, KvBlocks, RankSetup, Scheduler, TransferClock};
pub use sched::output::{Admission, Finished, ForwardPassMetrics, Outcome, PassOutput, Reservation};
pub use sequence::{Prompt, Request};
