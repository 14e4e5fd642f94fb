//! A request inside the SGLang core: its tokens and how much of them the pool holds.

use crate::kv::{NodeId, ROOT};
use crate::sequence::{Request, Sequence};

#[derive(Debug)]
pub(super) struct SgRequest {
    /// Tokens, generated count; `num_computed` is the materialised length: the tokens whose
    /// KV is computed, and the newest sampled token once it holds its slot.
    pub seq: Sequence,
    /// End of the cached prefix this request has locked in the radix tree (ROOT if none).
    pub node: NodeId,
    /// Pages of that prefix (the depth of `node`).
    pub tree_pages: u32,
    /// Pages held outside the tree: the uncached tail.
    pub private_pages: u32,
    /// Consecutive prefills undone by a retraction before the first token (a livelock
    /// guard: the reference can loop here forever).
    pub fruitless_prefills: u32,
}

impl SgRequest {
    pub fn new(req: Request) -> Self {
        SgRequest { seq: Sequence::new(req), node: ROOT, tree_pages: 0, private_pages: 0, fruitless_prefills: 0 }
    }

    /// Pages of KV space held.
    pub fn allocated_pages(&self) -> u32 {
        self.tree_pages + self.private_pages
    }

    pub fn remaining_output(&self) -> u32 {
        self.seq.max_output.saturating_sub(self.seq.generated)
    }
}
