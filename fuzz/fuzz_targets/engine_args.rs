//! Dynamo engine arguments (`{"engine": {...}, "dp_size": N}` and the bare engine object):
//! errors, never panics; what is accepted validates and builds an engine core.
#![no_main]
use libfuzzer_sys::fuzz_target;
use servesim_engine::{Engine, EngineArgs, LaunchConfig, RankSetup};

fuzz_target!(|data: &[u8]| {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(data) else { return };
    if let Ok(l) = LaunchConfig::from_json(&v) {
        let _ = l.validate();
    }
    if let Ok(a) = EngineArgs::from_json(&v) {
        // Keep allocations small: the pool is sized by num_gpu_blocks.
        if a.validate().is_ok() && a.num_gpu_blocks() <= 1 << 16 {
            let _ = Engine::new(&a, &RankSetup::single(true));
        }
    }
});
