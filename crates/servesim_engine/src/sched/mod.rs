//! Schedulers: how each pass spends its token budget and KV blocks.

pub mod sglang;
pub mod vllm;
