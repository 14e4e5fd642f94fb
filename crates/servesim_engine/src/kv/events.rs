//! KV cache events, shaped like Dynamo's `KvCacheEvent` so a router indexer can consume them.

use serde::Serialize;

/// One block announced by a `Stored` event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct StoredBlock {
    /// Sequence (prefix-chained) hash: the router's block identity.
    pub block_hash: u64,
    /// Hash of the block's own tokens.
    pub tokens_hash: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KvEventData {
    /// Blocks became cache-visible. `parent_hash` is the sequence hash of the block before
    /// the first one (None at the root).
    Stored { parent_hash: Option<u64>, blocks: Vec<StoredBlock> },
    /// The last copy of each block was evicted.
    Removed { block_hashes: Vec<u64> },
}

/// Which memory an event is about: the GPU pool, or the host tier of native offload (Dynamo's
/// `HostPinned` storage tier, which its router weighs at `host_cache_hit_weight`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KvTier {
    #[default]
    Device,
    HostPinned,
}

impl KvTier {
    pub fn is_device(&self) -> bool {
        *self == KvTier::Device
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KvEvent {
    /// Per rank, from 0, +1 per event (device and host events share the numbering).
    pub event_id: u64,
    pub dp_rank: u32,
    /// Absent in the JSON for device events, as in Dynamo's.
    #[serde(skip_serializing_if = "KvTier::is_device")]
    pub tier: KvTier,
    pub data: KvEventData,
}

/// Collects a rank's events during a pass; disabled sinks drop everything (no consumer, or
/// prefix caching off, which publishes nothing).
#[derive(Clone, Debug, Default)]
pub struct EventSink {
    pub enabled: bool,
    pub dp_rank: u32,
    next_id: u64,
    pending: Vec<KvEvent>,
}

impl EventSink {
    pub fn new(enabled: bool, dp_rank: u32) -> Self {
        EventSink { enabled, dp_rank, next_id: 0, pending: Vec::new() }
    }

    pub fn push(&mut self, data: KvEventData) {
        self.push_tier(KvTier::Device, data);
    }

    /// An event about `tier` (a host tier's residency, published through the rank's sink).
    pub fn push_tier(&mut self, tier: KvTier, data: KvEventData) {
        if !self.enabled {
            return;
        }
        let empty = match &data {
            KvEventData::Stored { blocks, .. } => blocks.is_empty(),
            KvEventData::Removed { block_hashes } => block_hashes.is_empty(),
        };
        if empty {
            return;
        }
        self.pending.push(KvEvent { event_id: self.next_id, dp_rank: self.dp_rank, tier, data });
        self.next_id += 1;
    }

    /// Moves the pass's events into `out`.
    pub fn drain_into(&mut self, out: &mut Vec<KvEvent>) {
        out.append(&mut self.pending);
    }
}
