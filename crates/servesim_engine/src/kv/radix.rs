//! SGLang-style radix (prefix) cache over pages of `page_size` tokens.
//!
//! The tree is compressed: a node holds the run of pages on the edge from its parent, keyed
//! under the parent by its first page's local (token) hash, so a path from the root spells a
//! token prefix. Physical page identities have no observable effect, so the cache only counts
//! pages: the pool is split into free pages, pages owned by the tree, and pages requests hold
//! privately (their uncached tail).
//!
//! Node boundaries matter because recency is kept per node, as in the reference's tree:
//! - A request holding a prefix locks its path (`lock_ref` on every node up to the root);
//!   locked pages are *protected*, unlocked ones *evictable*. A locked prefix always ends at
//!   a node boundary: matching part of a node splits it, and the prefix half inherits the
//!   node's access time without being touched.
//! - Matching touches every fully matched node on the path; inserting below a node touches
//!   the whole path from that node to the root, then the nodes it walks through. New pages
//!   extend a leaf in place when it is unlocked (or locked only by the inserting request, at
//!   the node it inserts from); otherwise they form a new child, stamped after the touch.
//! - Eviction takes the least recently accessed unlocked leaf; when fewer pages are needed
//!   than it holds, only its newest pages go and it keeps its access time. A parent left
//!   childless and unlocked becomes a candidate with its own access time.
//! - Inserting a page the tree already has is a duplicate: the caller's private copy is freed.
//! - Events: `Stored` when pages enter the tree, `Removed` when they are evicted (deepest
//!   first). The tree holds each prefix once, so the per-hash reference count of router
//!   visibility is 1.

use super::events::{EventSink, KvEventData, StoredBlock};
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;

pub type NodeId = u32;
pub const ROOT: NodeId = 0;

#[derive(Clone, Debug)]
struct Node {
    parent: NodeId,
    /// Local (token) hashes of the node's pages, in order.
    keys: Vec<u64>,
    /// Sequence (chained) hashes of the same pages: their router identities.
    seqs: Vec<u64>,
    lock_ref: u32,
    children: u32,
    last_access: u64,
    /// Pages from the root through this node's last page.
    depth: u32,
    live: bool,
}

impl Node {
    fn pages(&self) -> u32 {
        self.keys.len() as u32
    }
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

/// How many leading pages of `node_keys` equal `keys`.
fn common_prefix(node_keys: &[u64], keys: &[u64]) -> usize {
    node_keys.iter().zip(keys).take_while(|(a, b)| a == b).count()
}

impl RadixCache {
    pub fn new(total_pages: u32, events: EventSink) -> Self {
        let root =
            Node { parent: ROOT, keys: Vec::new(), seqs: Vec::new(), lock_ref: 1, children: 0, last_access: 0, depth: 0, live: true };
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
    /// Pages in the tree (cached), locked or not.
    pub fn tree_pages(&self) -> u32 {
        self.tree_pages
    }
    pub fn protected_pages(&self) -> u32 {
        self.protected_pages
    }
    /// Pages from the root through `n`'s last page.
    pub fn depth(&self, n: NodeId) -> u32 {
        self.nodes[n as usize].depth
    }

    /// Advances the access clock: every node touched by one operation gets the same stamp,
    /// and a node created afterwards a later one.
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn is_evictable_leaf(&self, n: NodeId) -> bool {
        let node = &self.nodes[n as usize];
        n != ROOT && node.live && node.lock_ref == 0 && node.children == 0
    }

    /// Takes `n` out of the eviction index before one of its keys changes.
    fn unindex(&mut self, n: NodeId) {
        if self.is_evictable_leaf(n) {
            self.evictable_leaves.remove(&(self.nodes[n as usize].last_access, n));
        }
    }

    /// Puts `n` back into the eviction index if it is an unlocked leaf.
    fn reindex(&mut self, n: NodeId) {
        if self.is_evictable_leaf(n) {
            self.evictable_leaves.insert((self.nodes[n as usize].last_access, n));
        }
    }

    fn touch(&mut self, n: NodeId, now: u64) {
        self.unindex(n);
        self.nodes[n as usize].last_access = now;
        self.reindex(n);
    }

    fn touch_path(&mut self, mut n: NodeId, now: u64) {
        while n != ROOT {
            self.touch(n, now);
            n = self.nodes[n as usize].parent;
        }
    }

    /// Longest cached path spelled by `keys` (at most `keys.len()` pages), read-only: the
    /// matched page count, with the deepest node all of whose pages match.
    pub fn peek(&self, keys: impl IntoIterator<Item = u64>) -> (NodeId, u32) {
        let keys: Vec<u64> = keys.into_iter().collect();
        let (mut node, mut m) = (ROOT, 0);
        while m < keys.len() {
            let Some(&child) = self.children.get(&(node, keys[m])) else { break };
            let c = &self.nodes[child as usize];
            let common = common_prefix(&c.keys, &keys[m..]);
            m += common;
            if common < c.keys.len() {
                break;
            }
            node = child;
        }
        (node, m as u32)
    }

    /// Matches the path of `keys` for a request about to lock it: every fully matched node is
    /// touched; a match ending inside a node splits it there, and the node returned (whose
    /// depth is the matched page count) is that untouched prefix half.
    pub fn match_and_touch(&mut self, keys: impl IntoIterator<Item = u64>) -> (NodeId, u32) {
        let keys: Vec<u64> = keys.into_iter().collect();
        let now = self.tick();
        let (mut node, mut m) = (ROOT, 0);
        let mut pending = None;
        while m < keys.len() {
            let Some(&child) = self.children.get(&(node, keys[m])) else { break };
            if let Some(p) = pending.take() {
                self.touch(p, now);
            }
            let c = &self.nodes[child as usize];
            let (common, len) = (common_prefix(&c.keys, &keys[m..]), c.keys.len());
            m += common;
            if common < len {
                node = self.split(child, common);
                break;
            }
            node = child;
            pending = Some(child);
        }
        if let Some(p) = pending {
            self.touch(p, now);
        }
        (node, m as u32)
    }

    /// Splits `child` after its first `at` pages; the returned new node holds them (with the
    /// child's lock count and access time) and `child` keeps the rest, so handles on `child`
    /// stay valid.
    fn split(&mut self, child: NodeId, at: usize) -> NodeId {
        let c = &mut self.nodes[child as usize];
        let (parent, first) = (c.parent, c.keys[0]);
        let keys: Vec<u64> = c.keys.drain(..at).collect();
        let seqs: Vec<u64> = c.seqs.drain(..at).collect();
        let depth = c.depth - c.pages();
        let rest_first = c.keys[0];
        let inter = Node { parent, keys, seqs, lock_ref: c.lock_ref, children: 1, last_access: c.last_access, depth, live: true };
        let id = self.alloc_node(inter);
        self.nodes[child as usize].parent = id;
        self.children.insert((parent, first), id);
        self.children.insert((id, rest_first), child);
        id
    }

    fn alloc_node(&mut self, node: Node) -> NodeId {
        match self.free_nodes.pop() {
            Some(id) => {
                self.nodes[id as usize] = node;
                id
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as NodeId
            }
        }
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
    /// path changes, instead of walking the whole path twice.
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
        self.unindex(node);
        let n = &mut self.nodes[node as usize];
        if n.lock_ref == 0 {
            self.protected_pages += n.pages();
        }
        n.lock_ref += 1;
    }

    pub fn unlock(&mut self, mut node: NodeId) {
        while node != ROOT {
            let n = &mut self.nodes[node as usize];
            n.lock_ref -= 1;
            if n.lock_ref == 0 {
                self.protected_pages -= n.pages();
            }
            let parent = n.parent;
            self.reindex(node);
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

    /// Moves pages a request holds privately into the tree below `start` (the end of the
    /// prefix the request has locked); `pages` gives each page's (local, sequence) hash.
    /// Returns the node the inserted run ends at, which is `start` itself when the request's
    /// own tail was extended in place. Duplicates of pages already cached are freed. The
    /// caller re-locks: `move_lock(start, returned)`.
    pub fn insert(&mut self, start: NodeId, pages: &[(u64, u64)]) -> NodeId {
        if pages.is_empty() {
            return start;
        }
        self.private_pages -= pages.len() as u32;
        let now = self.tick();
        self.touch_path(start, now);
        let mut cur = start;
        let mut off = 0;
        while off < pages.len() {
            let n = &self.nodes[cur as usize];
            let extendable = cur != ROOT && n.children == 0 && (n.lock_ref == 0 || (cur == start && n.lock_ref == 1));
            if extendable {
                self.extend_leaf(cur, &pages[off..], now);
                return cur;
            }
            let Some(&child) = self.children.get(&(cur, pages[off].0)) else {
                return self.add_child(cur, &pages[off..]);
            };
            let c = &self.nodes[child as usize];
            let (common, len) = (c.keys.iter().zip(&pages[off..]).take_while(|(a, p)| **a == p.0).count(), c.keys.len());
            off += common;
            if common < len {
                let inter = self.split(child, common);
                if off < pages.len() {
                    return self.add_child(inter, &pages[off..]);
                }
                return inter;
            }
            // Already cached (another request computed it): keep the tree's copy.
            cur = child;
            self.touch(cur, now);
        }
        cur
    }

    /// Publishes `pages`, held privately by a request whose cached prefix ends at `parent`,
    /// as stored without caching them: the reference announces a page's block when the page
    /// is allocated for complete tokens, whether or not it is in the tree yet.
    pub fn announce_private(&mut self, parent: NodeId, pages: &[(u64, u64)]) {
        self.announce(parent, pages);
    }

    fn announce(&mut self, parent: NodeId, pages: &[(u64, u64)]) {
        let n = &self.nodes[parent as usize];
        let parent_hash = n.seqs.last().copied();
        let blocks = pages.iter().map(|&(local, seq)| StoredBlock { block_hash: seq, tokens_hash: local }).collect();
        self.events.push(KvEventData::Stored { parent_hash, blocks });
    }

    fn extend_leaf(&mut self, n: NodeId, pages: &[(u64, u64)], now: u64) {
        self.announce(n, pages);
        self.unindex(n);
        let k = pages.len() as u32;
        let node = &mut self.nodes[n as usize];
        node.keys.extend(pages.iter().map(|p| p.0));
        node.seqs.extend(pages.iter().map(|p| p.1));
        node.depth += k;
        node.last_access = now;
        if node.lock_ref > 0 {
            self.protected_pages += k;
        }
        self.tree_pages += k;
        self.reindex(n);
    }

    fn add_child(&mut self, parent: NodeId, pages: &[(u64, u64)]) -> NodeId {
        self.announce(parent, pages);
        // The parent stops being a leaf.
        self.unindex(parent);
        self.nodes[parent as usize].children += 1;
        let now = self.tick();
        let depth = self.nodes[parent as usize].depth + pages.len() as u32;
        let node = Node {
            parent,
            keys: pages.iter().map(|p| p.0).collect(),
            seqs: pages.iter().map(|p| p.1).collect(),
            lock_ref: 0,
            children: 0,
            last_access: now,
            depth,
            live: true,
        };
        let id = self.alloc_node(node);
        self.children.insert((parent, pages[0].0), id);
        self.tree_pages += pages.len() as u32;
        self.reindex(id);
        id
    }

    /// Evicts up to `pages` unlocked pages, least recently used leaves first; returns how
    /// many were freed.
    pub fn evict(&mut self, pages: u32) -> u32 {
        let mut freed = 0;
        let mut removed = Vec::new();
        while freed < pages {
            let Some((la, n)) = self.evictable_leaves.pop_first() else { break };
            let want = pages - freed;
            let node = &mut self.nodes[n as usize];
            let len = node.pages();
            if want < len {
                // Only the newest pages go; the leaf keeps its place and access time.
                let keep = (len - want) as usize;
                removed.extend(node.seqs[keep..].iter().rev());
                node.keys.truncate(keep);
                node.seqs.truncate(keep);
                node.depth -= want;
                self.tree_pages -= want;
                freed += want;
                self.evictable_leaves.insert((la, n));
                continue;
            }
            removed.extend(node.seqs.iter().rev());
            node.live = false;
            let (parent, first) = (node.parent, node.keys[0]);
            self.children.remove(&(parent, first));
            self.free_nodes.push(n);
            self.tree_pages -= len;
            freed += len;
            self.nodes[parent as usize].children -= 1;
            self.reindex(parent);
        }
        if !removed.is_empty() {
            self.events.push(KvEventData::Removed { block_hashes: removed });
        }
        freed
    }

    /// Internal consistency, for tests.
    pub fn check(&self) -> Result<(), String> {
        let live: Vec<(usize, &Node)> = self.nodes.iter().enumerate().skip(1).filter(|(_, n)| n.live).collect();
        let pages: u32 = live.iter().map(|(_, n)| n.pages()).sum();
        if pages != self.tree_pages {
            return Err(format!("{pages} pages in live nodes, {} tree pages", self.tree_pages));
        }
        let locked: u32 = live.iter().filter(|(_, n)| n.lock_ref > 0).map(|(_, n)| n.pages()).sum();
        if locked != self.protected_pages {
            return Err(format!("{locked} locked pages, {} protected pages", self.protected_pages));
        }
        for &(i, n) in &live {
            if n.keys.is_empty() || n.depth != self.nodes[n.parent as usize].depth + n.pages() {
                return Err(format!("node {i}: {} pages, depth {}", n.pages(), n.depth));
            }
            if self.is_evictable_leaf(i as NodeId) != self.evictable_leaves.contains(&(n.last_access, i as NodeId)) {
                return Err(format!("node {i}: eviction index out of date"));
            }
        }
        if self.evictable_leaves.len() != live.iter().filter(|(i, _)| self.is_evictable_leaf(*i as NodeId)).count() {
            return Err("stale entries in the eviction index".into());
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
        // A second branch sharing page 1, touched later: matching page 1 splits the node.
        assert!(c.take_private(1));
        let (n1, d) = c.match_and_touch([1]);
        assert_eq!((c.depth(n1), d), (1, 1));
        let b = c.insert(n1, &[(9, 19)]);
        assert_eq!(c.depth(b), 2);
        // The oldest leaf is pages 2-3 of the first branch (the split kept their old time).
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

    #[test]
    fn a_request_extends_its_own_tail_in_place() {
        let mut c = cache(8);
        assert!(c.take_private(2));
        let a = c.insert(ROOT, &[(1, 1), (2, 12)]);
        c.lock(a);
        assert!(c.take_private(1));
        let b = c.insert(a, &[(3, 123)]);
        assert_eq!((b, c.depth(b)), (a, 3));
        // A second holder makes the next insert a new child.
        c.lock(a);
        assert!(c.take_private(1));
        let d = c.insert(a, &[(4, 1234)]);
        assert_ne!(d, a);
        assert_eq!(c.depth(d), 4);
        c.check().unwrap();
    }

    #[test]
    fn inserting_below_a_node_refreshes_its_whole_path() {
        let mut c = cache(8);
        assert!(c.take_private(2));
        c.insert(ROOT, &[(1, 1), (2, 12)]);
        // A request holds [1] (splitting the node: [1] keeps the old access time).
        let (n1, _) = c.match_and_touch([1]);
        c.lock(n1);
        // Another holds [7], cached after [1, 2].
        assert!(c.take_private(1));
        let n7 = c.insert(ROOT, &[(7, 7)]);
        c.lock(n7);
        // The first inserts [3] below [1], which refreshes [1], and finishes.
        assert!(c.take_private(1));
        let n3 = c.insert(n1, &[(3, 13)]);
        c.move_lock(n1, n3);
        c.unlock(n3);
        // [1, 2]'s second page goes first, then [1, 3]'s; [1] is a leaf again.
        assert_eq!(c.evict(2), 2);
        assert_eq!((c.peek([1, 2]).1, c.peek([1, 3]).1), (1, 1));
        // Once unlocked, [7] is older than the refreshed [1] and goes first.
        c.unlock(n7);
        assert_eq!(c.evict(1), 1);
        assert_eq!((c.peek([7]).1, c.peek([1]).1), (0, 1));
        c.check().unwrap();
    }

    #[test]
    fn eviction_trims_a_long_leaf_from_its_end() {
        let mut c = cache(8);
        assert!(c.take_private(4));
        c.insert(ROOT, &[(1, 1), (2, 12), (3, 123), (4, 1234)]);
        assert_eq!(c.evict(1), 1);
        assert_eq!(c.peek([1, 2, 3, 4]).1, 3);
        let mut ev = Vec::new();
        c.events.drain_into(&mut ev);
        assert_eq!(ev.last().unwrap().data, KvEventData::Removed { block_hashes: vec![1234] });
        c.check().unwrap();
    }
}
