//! A private transfer lane: one direction (device to host, or host to device) of one DP rank's
//! host link. Transfers are served one after another, first come first served:
//!
//! - a transfer is ready `latency_to_first_byte_ms` after the time it may start (its
//!   `not_before`: a store's pass end, a load's fence); the wait for the first byte overlaps
//!   the previous transfer's service, it does not queue behind it;
//! - it starts when it is ready and the lane is free, and takes `bytes / (GB/s × 1e6)` ms
//!   (0 GB/s: no time at all);
//! - its deadline is fixed when it is submitted.

/// Decimal GB/s as bytes per millisecond; 0 means unlimited.
pub fn bytes_per_ms(gbps: f64) -> f64 {
    if gbps == 0.0 { f64::INFINITY } else { gbps * 1e6 }
}

#[derive(Clone, Copy, Debug)]
pub struct FifoLane {
    bytes_per_ms: f64,
    /// When the last submitted transfer ends.
    tail_ms: f64,
}

impl FifoLane {
    pub fn new(gbps: f64) -> Self {
        FifoLane { bytes_per_ms: bytes_per_ms(gbps), tail_ms: 0.0 }
    }

    /// Queues `bytes` ready at `ready_ms`; returns when they have arrived.
    pub fn submit(&mut self, ready_ms: f64, bytes: u64) -> f64 {
        let start = self.tail_ms.max(ready_ms);
        let service = if self.bytes_per_ms.is_infinite() { 0.0 } else { bytes as f64 / self.bytes_per_ms };
        self.tail_ms = start + service;
        self.tail_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_queue_behind_each_other_but_first_bytes_overlap() {
        // 1 GB/s: 2,097,152 bytes take 2.097152 ms.
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        let mut lane = FifoLane::new(1.0);
        assert!(close(lane.submit(2.0, 2_097_152), 4.097152));
        // Ready before the lane is free: starts when it frees.
        assert!(close(lane.submit(3.0, 2_097_152), 6.194304));
        // Unlimited bandwidth: only the first byte's wait.
        let mut free = FifoLane::new(0.0);
        assert_eq!(free.submit(5.0, 1 << 30), 5.0);
    }
}
