//! Dynamo replay case files and their translation into a simulation config.
#![no_main]
use libfuzzer_sys::fuzz_target;
use servesim_sim::replay::Case;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(c) = Case::from_json_str(text, "fuzz.json") {
        let _ = c.trace_block_size();
        let _ = c.config();
    }
});
