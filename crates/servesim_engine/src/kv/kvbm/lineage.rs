//! Lineage eviction: inactive blocks form prefix trees (a block's parent is the block before
//! it in its sequence), and only leaves are evicted, oldest first. A shared prefix therefore
//! outlives every suffix hanging from it.
//!
//! - The leaf queue is ordered by (tick at which the block became inactive, position, hash).
//! - When a leaf goes and its parent is left childless, the parent becomes a leaf with the
//!   tick it got when *it* became inactive (usually older than its children's).
//! - A block can become inactive before its parent (released out of order) or stay inactive
//!   while its parent is reused: the parent is then a *ghost* that only keeps the structure,
//!   and is never evicted.

use super::FullBlock;
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;

#[derive(Clone, Debug)]
struct Node {
    parent: Option<u64>,
    position: u32,
    children: u32,
    /// Some(tick) for an inactive block; None for a ghost.
    tick: Option<u64>,
}

#[derive(Clone, Debug, Default)]
pub struct Lineage {
    nodes: FxHashMap<u64, Node>,
    leaves: BTreeSet<(u64, u32, u64)>,
    clock: u64,
    inactive: usize,
}

impl Lineage {
    fn leaf_key(&self, hash: u64) -> Option<(u64, u32, u64)> {
        let n = self.nodes.get(&hash)?;
        match n.tick {
            Some(t) if n.children == 0 => Some((t, n.position, hash)),
            _ => None,
        }
    }

    pub fn insert(&mut self, b: &FullBlock) {
        self.clock += 1;
        let tick = self.clock;
        match self.nodes.get_mut(&b.hash) {
            Some(n) => {
                // A ghost comes back to life, and now knows its parent.
                n.tick = Some(tick);
                if n.parent.is_none()
                    && let Some(p) = b.parent
                {
                    n.parent = Some(p);
                    self.adopt(p, b.position.saturating_sub(1));
                }
            }
            None => {
                self.nodes.insert(b.hash, Node { parent: b.parent, position: b.position, children: 0, tick: Some(tick) });
                if let Some(p) = b.parent {
                    self.adopt(p, b.position.saturating_sub(1));
                }
            }
        }
        self.inactive += 1;
        if let Some(k) = self.leaf_key(b.hash) {
            self.leaves.insert(k);
        }
    }

    /// Registers one more child under `parent`, creating a ghost if it is not here.
    fn adopt(&mut self, parent: u64, position: u32) {
        if let Some(k) = self.leaf_key(parent) {
            self.leaves.remove(&k);
        }
        match self.nodes.get_mut(&parent) {
            Some(n) => n.children += 1,
            None => {
                self.nodes.insert(parent, Node { parent: None, position, children: 1, tick: None });
            }
        }
    }

    /// Takes `hash` out of the inactive set (reused, or evicted).
    pub fn remove(&mut self, hash: u64) -> bool {
        let Some(k) = self.nodes.get(&hash).and_then(|n| n.tick.map(|t| (t, n.position, hash))) else {
            return false;
        };
        self.leaves.remove(&k);
        self.inactive -= 1;
        let n = self.nodes.get_mut(&hash).expect("node");
        if n.children > 0 {
            n.tick = None; // its inactive descendants still hang from it
        } else {
            self.drop_node(hash);
        }
        true
    }

    /// Deletes a childless node; a parent left childless becomes a leaf again (or, if a
    /// ghost, goes too).
    fn drop_node(&mut self, hash: u64) {
        let n = self.nodes.remove(&hash).expect("node");
        let Some(p) = n.parent else { return };
        let Some(pn) = self.nodes.get_mut(&p) else { return };
        pn.children -= 1;
        if pn.children == 0 {
            if pn.tick.is_none() {
                self.drop_node(p);
            } else if let Some(k) = self.leaf_key(p) {
                self.leaves.insert(k);
            }
        }
    }

    pub fn evict(&mut self) -> Option<u64> {
        let &(_, _, hash) = self.leaves.iter().next()?;
        self.remove(hash);
        Some(hash)
    }

    pub fn len(&self) -> usize {
        self.inactive
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
