//! The engine crate's integration tests, one binary: scheduler scenarios pass by pass (vLLM,
//! TRT-LLM, SGLang), the disaggregated hand-off, and property tests of the KV structures
//! against naive models.

mod disagg_handoff;
mod proptest_block_pool;
mod proptest_kvbm;
mod proptest_radix;
mod sglang_scheduler;
mod trtllm_scheduler;
mod vllm_blocks;
mod vllm_multimodal;
mod vllm_scheduler;
