//! SGLang-style radix (prefix) cache over pages of `page_size` tokens.
//!
//! The tree holds one node per cached page, keyed under its parent by the page's local
//! (token) hash, so a path from the root spells a token prefix. Physical page identities
//! have no observable effect, so the cache only counts pages: the pool is split into free
//! pages, pages owned by the tree, and pages requests hold privately (their uncached tail).
//!
//! - A request holding a prefix locks its path (`lock_ref` on every node up to the root);
//!   locked pages are *protected*, unlocked ones *evictable*.
//! - Eviction removes the least recently accessed unlocked leaf, one page at a time; a parent
//!   left childless and unlocked becomes a candidate with its own access time.
//! - Inserting a page the tree already has is a duplicate: the caller frees its private copy.
//! - Events: `Stored` when pages enter the tree, `Removed` when they are evicted. The tree
//!   holds each prefix once, so the per-hash reference count of router visibility is 1.

use super::events::{EventSink, KvEventData, StoredBlock};
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;

pub type NodeId = u32;
pub const ROOT: NodeId = 0;

#[derive(Clone, Debug)]
struct Node {
    parent: NodeId,
    key: u64,
    /// Sequence (chained) hash of the prefix ending with this page: its router identity.
    seq_hash: u64,
    lock_ref: u32,
    children: u32,
    last_access: u64,
    depth: u32,
    live: bool,
}

#[derive(Debug)]
pub struct RadixCache {
    nodes: Vec<Node>,
    free_nodes: Vec<NodeId>,
    children: FxHashMap<(NodeId, u64), NodeId>,
    /// Unlocked leaves, least recently accessed first.
    evictable_leaves: BTreeSet<(u64, NodeId)>,
    total_pages: u32,
    tree_pages: u32,
    private_pages: u32,
    protected_pages: u32,
    clock: u64,
    pub events: EventSink,
}

impl RadixCache {
    pub fn new(total_pages: u32, events: EventSink) -> Self {
        let root = Node { parent: ROOT, key: 0, seq_hash: 0, lock_ref: 1, children: 0, last_access: 0, depth: 0, live: true };
        RadixCache {
            nodes: vec![root],
            free_nodes: Vec::new(),
            children: FxHashMap::default(),
            evictable_leaves: BTreeSet::new(),
            total_pages,
            tree_pages: 0,
            private_pages: 0,
            protected_pages: 0,
            clock: 0,
            events,
        }
    }

    pub fn total_pages(&self) -> u32 {
        self.total_pages
    }
    pub fn free_pages(&self) -> u32 {
        self.total_pages - self.tree_pages - self.private_pages
    }
    pub fn evictable_pages(&self) -> u32 {
        self.tree_pages - self.protected_pages
    }
    /// Pages held by requests: their locked prefixes plus their private tails.
    pub fn used_pages(&self) -> u32 {
        self.protected_pages + self.private_pages
    }
    pub fn protected_pages(&self) -> u32 {
        self.protected_pages
    }
    pub fn depth(&self, n: NodeId) -> u32 {
        self.nodes[n as usize].depth
    }

    /// Advances the access clock; every node touched by one operation gets the same stamp.
    pub fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// Longest cached path spelled by `keys` (at most `keys.len()` pages), read-only.
    pub fn peek(&self, keys: impl IntoIterator<Item = u64>) -> (NodeId, u32) {
        let mut node = ROOT;
        let mut n = 0;
        for k in keys {
            match self.children.get(&(node, k)) {
                Some(&c) => {
                    node = c;
                    n += 1;
                }
                None => break,
            }
        }
        (node, n)
    }

    /// Walks the path of `keys`, stamping every node on it with a fresh access time.
    pub fn match_and_touch(&mut self, keys: impl IntoIterator<Item = u64>) -> (NodeId, u32) {
        let (node, n) = self.peek(keys);
        let now = self.tick();
        self.touch_path(node, now);
        (node, n)
    }

    /// The ancestor of `node` at `depth`.
    pub fn ancestor(&self, mut node: NodeId, depth: u32) -> NodeId {
        while self.nodes[node as usize].depth > depth {
            node = self.nodes[node as usize].parent;
        }
        node
    }

    fn touch_path(&mut self, mut node: NodeId, now: u64) {
        while node != ROOT {
            self.set_access(node, now);
            node = self.nodes[node as usize].parent;
        }
    }

    fn is_evictable_leaf(&self, n: NodeId) -> bool {
        let node = &self.nodes[n as usize];
        n != ROOT && node.live && node.lock_ref == 0 && node.children == 0
    }

    fn set_access(&mut self, n: NodeId, now: u64) {
        let leaf = self.is_evictable_leaf(n);
        let node = &mut self.nodes[n as usize];
        if leaf {
            self.evictable_leaves.remove(&(node.last_access, n));
            self.evictable_leaves.insert((now, n));
        }
        node.last_access = now;
    }

    /// Takes a reference on the path from `node` to the root.
    pub fn lock(&mut self, mut node: NodeId) {
        while node != ROOT {
            self.lock_one(node);
            node = self.nodes[node as usize].parent;
        }
    }

    /// Moves a lock from `from` to `to`: the same as `lock(to)` then `unlock(from)`, but when
    /// `to` lies below `from` (a request extending its cached prefix) only the new part of the
    /// path changes, instead of walking the whole path twice per page.
    pub fn move_lock(&mut self, from: NodeId, to: NodeId) {
        let mut node = to;
        while node != ROOT && node != from {
            self.lock_one(node);
            node = self.nodes[node as usize].parent;
        }
        if node != from {
            // `to` was not below `from`: the general case.
            self.unlock(from);
        }
    }

    fn lock_one(&mut self, node: NodeId) {
        if self.is_evictable_leaf(node) {
            let la = self.nodes[node as usize].last_access;
            self.evictable_leaves.remove(&(la, node));
        }
        let n = &mut self.nodes[node as usize];
        if n.lock_ref == 0 {
            self.protected_pages += 1;
        }
        n.lock_ref += 1;
    }

    pub fn unlock(&mut self, mut node: NodeId) {
        while node != ROOT {
            let n = &mut self.nodes[node as usize];
            n.lock_ref -= 1;
            if n.lock_ref == 0 {
                self.protected_pages -= 1;
            }
            let parent = n.parent;
            if self.is_evictable_leaf(node) {
                let la = self.nodes[node as usize].last_access;
                self.evictable_leaves.insert((la, node));
            }
            node = parent;
        }
    }

    /// Requests' private pages: taken from the free pool (the caller evicts first).
    pub fn take_private(&mut self, pages: u32) -> bool {
        if pages > self.free_pages() {
            return false;
        }
        self.private_pages += pages;
        true
    }

    pub fn release_private(&mut self, pages: u32) {
        self.private_pages -= pages;
    }

    /// Moves pages a request holds privately into the tree below `parent` (which the
    /// request has locked), page by page; `pages` gives each page's (local, sequence) hash.
    /// Returns the new last node; duplicates of pages already cached are freed. The caller
    /// re-locks: it should lock the returned node and unlock `parent`.
    pub fn insert(&mut self, parent: NodeId, pages: &[(u64, u64)]) -> NodeId {
        let now = self.tick();
        let mut node = parent;
        let mut stored: Vec<StoredBlock> = Vec::new();
        let mut stored_parent = None;
        for &(local, seq) in pages {
            self.private_pages -= 1;
            if let Some(&c) = self.children.get(&(node, local)) {
                // Already cached (another request computed it): keep the tree's copy.
                self.flush_stored(&mut stored, stored_parent);
                node = c;
                self.set_access(node, now);
                continue;
            }
            if stored.is_empty() {
                stored_parent = if node == ROOT { None } else { Some(self.nodes[node as usize].seq_hash) };
            }
            node = self.add_child(node, local, seq, now);
            stored.push(StoredBlock { block_hash: seq, tokens_hash: local });
        }
        self.flush_stored(&mut stored, stored_parent);
        node
    }

    fn flush_stored(&mut self, stored: &mut Vec<StoredBlock>, parent: Option<u64>) {
        if !stored.is_empty() {
            self.events.push(KvEventData::Stored { parent_hash: parent, blocks: std::mem::take(stored) });
        }
    }

    fn add_child(&mut self, parent: NodeId, key: u64, seq_hash: u64, now: u64) -> NodeId {
        // The parent stops being a leaf.
        if self.is_evictable_leaf(parent) {
            let la = self.nodes[parent as usize].last_access;
            self.evictable_leaves.remove(&(la, parent));
        }
        let depth = self.nodes[parent as usize].depth + 1;
        let node = Node { parent, key, seq_hash, lock_ref: 0, children: 0, last_access: now, depth, live: true };
        let id = match self.free_nodes.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as NodeId
            }
        };
        self.nodes[parent as usize].children += 1;
        self.children.insert((parent, key), id);
        self.tree_pages += 1;
        // A fresh node is an unlocked leaf until someone locks it.
        self.evictable_leaves.insert((now, id));
        id
    }

    /// Evicts up to `pages` unlocked pages, least recently used leaves first; returns how
    /// many were freed.
    pub fn evict(&mut self, pages: u32) -> u32 {
        let mut freed = 0;
        let mut removed = Vec::new();
        while freed < pages {
            let Some(&(la, n)) = self.evictable_leaves.iter().next() else { break };
            self.evictable_leaves.remove(&(la, n));
            let node = self.nodes[n as usize].clone();
            removed.push(node.seq_hash);
            self.children.remove(&(node.parent, node.key));
            self.nodes[n as usize].live = false;
            self.free_nodes.push(n);
            self.tree_pages -= 1;
            freed += 1;
            let p = node.parent;
            self.nodes[p as usize].children -= 1;
            if self.is_evictable_leaf(p) {
                let pla = self.nodes[p as usize].last_access;
                self.evictable_leaves.insert((pla, p));
            }
        }
        if !removed.is_empty() {
            self.events.push(KvEventData::Removed { block_hashes: removed });
        }
        freed
    }

    /// Internal consistency, for tests.
    pub fn check(&self) -> Result<(), String> {
        let live: Vec<&Node> = self.nodes.iter().skip(1).filter(|n| n.live).collect();
        if live.len() as u32 != self.tree_pages {
            return Err(format!("{} live nodes, {} tree pages", live.len(), self.tree_pages));
        }
        let locked = live.iter().filter(|n| n.lock_ref > 0).count() as u32;
        if locked != self.protected_pages {
            return Err(format!("{locked} locked nodes, {} protected pages", self.protected_pages));
        }
        if self.tree_pages + self.private_pages > self.total_pages {
            return Err("pool overcommitted".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(pages: u32) -> RadixCache {
        RadixCache::new(pages, EventSink::new(true, 0))
    }

    #[test]
    fn insert_match_lock_evict() {
        let mut c = cache(8);
        assert!(c.take_private(3));
        let a = c.insert(ROOT, &[(1, 1), (2, 12), (3, 123)]);
        c.lock(a);
        assert_eq!(c.peek([1, 2, 3, 4]), (a, 3));
        assert_eq!((c.free_pages(), c.evictable_pages()), (5, 0));
        assert_eq!(c.evict(2), 0, "locked pages stay");
        c.unlock(a);
        // A second branch sharing page 1, touched later.
        assert!(c.take_private(1));
        let (n1, _) = c.match_and_touch([1]);
        let b = c.insert(n1, &[(9, 19)]);
        assert_eq!(c.depth(b), 2);
        // The oldest leaf is page 3 of the first branch, then its parent page 2.
        assert_eq!(c.evict(2), 2);
        assert_eq!(c.peek([1, 2]).1, 1);
        assert_eq!(c.peek([1, 9]).1, 2);
        c.check().unwrap();
    }

    #[test]
    fn duplicates_free_the_private_copy() {
        let mut c = cache(4);
        assert!(c.take_private(2));
        c.insert(ROOT, &[(1, 1), (2, 12)]);
        assert!(c.take_private(2));
        c.insert(ROOT, &[(1, 1), (2, 12)]);
        assert_eq!(c.free_pages(), 2);
        c.check().unwrap();
    }
}
