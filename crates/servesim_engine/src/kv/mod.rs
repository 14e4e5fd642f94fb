//! KV cache management: block pools, eviction, events.

pub mod block_pool;
pub mod events;

pub use block_pool::{BlockPool, SlotId};
pub use events::{EventSink, KvEvent, KvEventData, StoredBlock};
