//! Mooncake trace parser: any bytes either parse into a workload or give an error naming the
//! source; never a panic. The first byte picks the trace block size (0 must be an error).
#![no_main]
use libfuzzer_sys::fuzz_target;
use servesim_sim::workload::mooncake;

fuzz_target!(|data: &[u8]| {
    let Some((&b, rest)) = data.split_first() else { return };
    let block = [0u32, 1, 16, 64, 512, u32::MAX][b as usize % 6];
    let Ok(text) = std::str::from_utf8(rest) else { return };
    match mooncake::parse(text, block, "fuzz.jsonl") {
        Ok(w) => assert!(!w.is_empty(), "an accepted trace has requests"),
        Err(e) => assert!(!e.0.is_empty()),
    }
});
