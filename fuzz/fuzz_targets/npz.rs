//! NPZ performance profiles: any bytes give a profile or an error; a profile answers queries
//! with finite, non-negative times.
#![no_main]
use libfuzzer_sys::fuzz_target;
use servesim_engine::perf::interpolated::Profile;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = Profile::from_npz(data) {
        for (b, isl, pre) in [(1, 1, 0), (4, 300, 64), (1 << 20, 1 << 30, 1 << 30)] {
            let t = p.prefill_ms(b, isl, pre);
            assert!(t.is_finite(), "prefill_ms({b}, {isl}, {pre}) = {t}");
            let d = p.decode_ms(b, isl);
            assert!(d.is_finite(), "decode_ms({b}, {isl}) = {d}");
        }
    }
});
