//! Scenario parser and validation: errors, never panics.
#![no_main]
use libfuzzer_sys::fuzz_target;
use servesim_sim::Scenario;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(s) = Scenario::from_json_str(text) {
        let _ = s.config();
    }
});
