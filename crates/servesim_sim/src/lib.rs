//! servesim's harness: engine cores on one virtual clock behind a router, fed by a workload,
//! observed by a report collector. [`build`] turns a scenario or a replay case into a
//! [`Simulation`]; every caller (the CLI, the page, tests, fuzz targets) builds runs with it.

pub mod build;
pub mod cluster;
mod error;
pub mod kernels;
pub mod planner;
pub mod predict;
mod queue;
pub mod replay;
pub mod report;
pub mod scenario;
pub mod sim;
pub mod sweep;
pub mod workload;

pub use build::{BuildOptions, DirFiles, Files, Input, Interval, KERNEL_PREFIX, MemFiles, Uploads, build, default_kernel_dir};
pub use error::{LEFT_OUT, SimError};
pub use report::RunReport;
pub use scenario::{Scenario, SimConfig};
pub use sim::Simulation;
pub use workload::Workload;
