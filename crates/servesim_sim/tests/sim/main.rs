//! The harness crate's integration tests, one binary: conformance against the reference's
//! figures, the runs the reference gives up on, time series, routing and the indexer.

mod ais;
mod common;
mod conformance;
mod dynosim;
mod events;
mod kvbm;
mod moe;
mod multimodal;
mod power;
mod predict;
mod proptest_indexer;
mod reference_aborts;
mod routing_patterns;
mod steady_tokens;
mod timeseries;
mod unschedulable;
