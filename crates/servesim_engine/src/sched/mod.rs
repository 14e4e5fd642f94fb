//! Schedulers: how each pass spends its token budget and KV blocks. `contract.rs` is what
//! every scheduler offers the harness, `output.rs` what a pass hands back.

pub mod contract;
pub mod output;
pub mod sglang;
pub mod vllm;
