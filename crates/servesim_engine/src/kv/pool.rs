//! The block manager behind the vLLM scheduler: the native pool (the default, matching the
//! reference) or the kvbm manager with its eviction backends.

use super::kvbm::pool::KvbmPool;
use super::{BlockPool, EventSink, SlotId};

#[derive(Debug)]
pub enum Pool {
    Native(BlockPool),
    Kvbm(KvbmPool),
}

macro_rules! both {
    ($self:ident, $p:ident => $e:expr) => {
        match $self {
            Pool::Native($p) => $e,
            Pool::Kvbm($p) => $e,
        }
    };
}

impl Pool {
    pub fn active(&self) -> u32 {
        both!(self, p => p.active())
    }
    // Inlined into the prefix walk (one call per prompt block); left to itself the compiler
    // outlines it with the kvbm side's lookup, which costs the vLLM replays ~6% instructions.
    #[inline]
    pub fn lookup(&self, hash: u64) -> Option<SlotId> {
        both!(self, p => p.lookup(hash))
    }
    pub fn is_held(&self, slot: SlotId) -> bool {
        both!(self, p => p.is_held(slot))
    }
    pub fn reserve(&mut self, hits: &[SlotId], fresh: u32, out: &mut Vec<SlotId>) -> bool {
        both!(self, p => p.reserve(hits, fresh, out))
    }
    /// See `BlockPool::register_run` and `KvbmPool::register_run`; the kvbm manager may
    /// rewrite handles in `run`.
    pub fn register_run(&mut self, parent: Option<u64>, first_position: u32, run: &mut [(SlotId, u64, u64)]) {
        match self {
            Pool::Native(p) => p.register_run(parent, run),
            Pool::Kvbm(p) => p.register_run(parent, first_position, run),
        }
    }
    pub fn release(&mut self, slot: SlotId) {
        both!(self, p => p.release(slot))
    }
    pub fn events(&mut self) -> &mut EventSink {
        match self {
            Pool::Native(p) => &mut p.events,
            Pool::Kvbm(p) => p.events(),
        }
    }
    pub fn idle(&self) -> u32 {
        both!(self, p => p.inactive())
    }
    pub fn free(&self) -> u32 {
        both!(self, p => p.free())
    }
    pub fn cached_count(&self) -> u32 {
        both!(self, p => p.cached_count())
    }
    pub fn cached_hashes(&self) -> Vec<u64> {
        both!(self, p => p.cached_hashes())
    }
    /// The native pool (native offload runs only on it).
    pub fn native_mut(&mut self) -> &mut BlockPool {
        match self {
            Pool::Native(p) => p,
            Pool::Kvbm(_) => unreachable!("offload tiers need the native pool"),
        }
    }

    pub fn native(&self) -> &BlockPool {
        match self {
            Pool::Native(p) => p,
            Pool::Kvbm(_) => unreachable!("offload tiers need the native pool"),
        }
    }

    pub fn check(&self) -> Result<(), String> {
        both!(self, p => p.check())
    }
}
