//! KV cache management: block pools, eviction, events.

pub mod block_pool;
pub mod copy_index;
pub mod encoder_cache;
pub mod events;
pub mod kvbm;
pub mod offload;
pub mod pool;
pub mod radix;

pub use block_pool::{BlockPool, SlotId};
pub use events::{EventSink, KvEvent, KvEventData, KvTier, StoredBlock};
pub use pool::Pool;
pub use radix::{NodeId, ROOT, RadixCache};
