//! The offload connector's answers to the admission loop (`connector.rs`): how a waiting
//! request whose prompt the host tier holds is onboarded, and how the scheduler stores
//! computed prompts there.
//!
//! Rules (the reference's):
//!
//! - Requests the connector deferred wait in their own FIFO, ahead of the ordinary queue: the
//!   first awake one is tried first (with G3, the first awake one holding device blocks).
//!   Any completed transfer wakes them all.
//! - A host hit passes the ordinary admission check first, on its G1 prefix alone, with the
//!   headroom of running chunked prefills and of loads in flight kept free. Then its
//!   destination is reserved — its G1 prefix plus one fresh device block per host block, none
//!   for the rest — and the load queues behind the rank's earlier loads (after any store
//!   still reading those fresh blocks). The request sleeps; it spends no token budget, and the
//!   admission loop goes on with the next request. No room for the destination ends the
//!   admissions of the pass.
//! - When the load lands (at the deadline if the rank is idle, else at its pass end) the
//!   loaded blocks become cache-visible in the request's own blocks, and the request is
//!   admitted by the next pass with exactly that prefix (blocks that became visible meanwhile
//!   do not count), less the last block if the prompt must be recomputed for logits. Its
//!   prefill covers only the rest. Its reuse counts the G1 part first, the host part after.

use super::VllmCore;
use super::connector::{Match, Matched};
use super::offload::{HostLookup, HostRequest, Load};
use crate::kv::offload::host_tier::{BlockMeta, StoreOutcome};
use crate::kv::offload::{Key, TransferId};
use crate::kv::{KvEvent, SlotId};

/// What starting a load did.
pub(super) enum StartLoad {
    Queued,
    /// A block is being loaded for another request.
    Deferred,
    /// The host blocks vanished; try again at the pass end.
    Retry,
    /// No device room for the destination.
    CapacityBlocked,
}

/// A request's G1 prefix as the cache holds it now, before the recompute cap.
struct G1Prefix {
    slots: Vec<SlotId>,
    active: u32,
}

impl VllmCore {
    fn offload(&mut self) -> &mut super::offload::Offload {
        self.connector.offload_mut().expect("an offload rank")
    }

    /// Builds `s`'s offload state on first use: its prompt blocks' identities.
    fn ensure_host(&mut self, s: u32) {
        let o = self.connector.offload().expect("an offload rank");
        if o.has_request(s) {
            return;
        }
        let keeps_meta = o.keeps_meta();
        let bs = self.cfg.block_size;
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        let n = seq.prompt_len() / bs;
        seq.hash_blocks(n, bs, &mut self.scratch);
        let hashes = &seq.hashes()[..n as usize];
        let keys: Vec<Key> = hashes.iter().map(|h| h.0).collect();
        let meta = keeps_meta.then(|| {
            hashes
                .iter()
                .enumerate()
                .map(|(i, h)| BlockMeta { parent: (i > 0).then(|| hashes[i - 1].0), tokens_hash: h.1, position: i as u32 })
                .collect()
        });
        let r = HostRequest {
            owner: seq.id,
            keys,
            meta,
            restore: Default::default(),
            next_store: 0,
            latest_store: None,
            load: None,
            first_recorded: false,
            in_connector: false,
            asleep: false,
        };
        self.offload().insert(s, r);
    }

    /// The leading cache-visible blocks of `s`'s known full blocks, uncapped.
    fn g1_prefix(&mut self, s: u32) -> G1Prefix {
        let bs = self.cfg.block_size;
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        let full = seq.len() / bs;
        seq.hash_blocks(full, bs, &mut self.scratch);
        let mut p = G1Prefix { slots: Vec::new(), active: 0 };
        for &(hash, _) in &seq.hashes()[..full as usize] {
            match self.pool.lookup(hash) {
                Some(slot) => {
                    p.active += self.pool.is_held(slot) as u32;
                    p.slots.push(slot);
                }
                None => break,
            }
        }
        p
    }

    /// The first awake deferred request (with G3, one holding device blocks first).
    pub(super) fn deferred_candidate(&self) -> Option<u32> {
        let o = self.connector.offload().expect("an offload rank");
        let awake = |&&c: &&u32| !o.requests[c as usize].as_ref().expect("a connector waiter").asleep;
        let holding = |&&c: &&u32| o.requests[c as usize].as_ref().is_some_and(|r| r.load.is_some());
        let first = if o.g3.is_some() { o.connector.iter().filter(awake).find(holding) } else { None };
        first.or_else(|| o.connector.iter().find(awake)).copied()
    }

    /// `s` waits for a transfer: it moves to the connector queue (keeping its place there if it
    /// is in it already) and sleeps.
    pub(super) fn sleep(&mut self, s: u32, in_connector: bool) {
        if !in_connector {
            let k = self.waiting.iter().position(|&w| w == s).expect("a waiting request");
            self.waiting.remove(k);
            self.offload().connector.push_back(s);
        }
        let r = self.offload().request(s);
        r.in_connector = true;
        r.asleep = true;
    }

    /// A deferred request leaves the connector's queue (admitted or ended).
    pub(super) fn leave_deferred(&mut self, s: u32) {
        let o = self.offload();
        let k = o.connector.iter().position(|&c| c == s).expect("a connector waiter");
        o.connector.remove(k);
        let r = o.request(s);
        (r.in_connector, r.asleep) = (false, false);
    }

    /// Device blocks a new host hit must leave free: what running chunked prefills still need
    /// and what loads in flight will need beyond their loaded prefix.
    fn onboarding_headroom(&self) -> u32 {
        let o = self.connector.offload().expect("an offload rank");
        let prefills: u32 = self
            .running
            .iter()
            .map(|&s| self.seq(s))
            .filter(|q| q.num_computed < q.prompt_len())
            .map(|q| self.blocks_for(q.len()).saturating_sub(q.blocks.len() as u32))
            .sum();
        let loads: u32 = o.requests.iter().flatten().filter_map(|r| r.load.as_ref()).map(Load::tail).sum();
        prefills + loads
    }

    /// The offload connector's answer for candidate `s` (see the module's rules): a landed
    /// load's frozen prefix, else its G1 prefix, extended by a host hit if there is one.
    pub(super) fn offload_match(&mut self, s: u32) -> Matched {
        let bs = self.cfg.block_size;
        self.ensure_host(s);
        let g1 = self.g1_prefix(s);
        let activated = match &self.offload().request(s).load {
            Some(Load::Activated { loaded_prefix, .. }) => Some(*loaded_prefix),
            _ => None,
        };
        let mut host_hit = None;
        if activated.is_none() {
            match self.offload().lookup(s, g1.slots.len() as u32) {
                HostLookup::Miss => {}
                HostLookup::Hit(keys) => host_hit = Some(keys),
                HostLookup::Deferred => return Matched::Defer,
            }
        }
        let (len, done) = {
            let q = self.seq(s);
            (q.len(), q.generation_done())
        };
        // The cost: a landed load's prefix is frozen; else the G1 prefix. Then the last
        // block is recomputed if the request still needs logits.
        let (cost, cost_active) = activated.map_or((g1.slots.len() as u32, g1.active), |p| (p, p));
        let cap = if done { u32::MAX } else { (len - 1) / bs };
        let cached = cost.min(cap);
        let active = cost_active.min(cached);
        let reserved = activated.unwrap_or(0);
        let slots = match activated {
            Some(p) => self.seq(s).blocks[..p as usize].to_vec(),
            None => g1.slots[..cached as usize].to_vec(),
        };
        // A host hit keeps the headroom of running chunked prefills and loads in flight free.
        let headroom = if host_hit.is_some() { self.onboarding_headroom() } else { 0 };
        let hit = super::PrefixHit { cached_tokens: cached * bs, active_blocks: active.max(reserved), slots };
        Matched::Admit(Match { hit, headroom, load: host_hit.map(|keys| (keys, g1.slots)) })
    }

    /// The admission of `s` reusing `reused` tokens: its store cursor moves past a loaded
    /// prefix, and its first admission's host tokens are returned (G1 tokens count first).
    pub(super) fn attribute(&mut self, s: u32, reused: u32) -> Option<u32> {
        let bs = self.cfg.block_size;
        let r = self.offload().request(s);
        r.restore.reset();
        let host = match r.load.take() {
            Some(Load::Activated { original_g1, loaded, .. }) => {
                r.next_store = reused / bs;
                let host = reused - original_g1.min(reused);
                debug_assert!(host <= loaded * bs, "host tokens beyond the loaded blocks");
                host
            }
            Some(Load::Loading { .. }) => unreachable!("a loading request is not admitted"),
            None => 0,
        };
        (!std::mem::replace(&mut r.first_recorded, true)).then_some(host)
    }

    /// Reserves `s`'s destination (its G1 prefix and a fresh block per host block) and queues
    /// the load.
    pub(super) fn start_load(&mut self, s: u32, keys: Vec<Key>, g1: &[SlotId]) -> StartLoad {
        if self.offload().any_loading(&keys) {
            return StartLoad::Deferred;
        }
        let n = keys.len() as u32;
        let base = g1.len() as u32;
        let free = self.pool.free();
        let seq = self.seqs[s as usize].as_mut().expect("live sequence");
        debug_assert!(seq.blocks.is_empty());
        if !self.pool.reserve(g1, n, &mut seq.blocks) {
            return StartLoad::CapacityBlocked;
        }
        let readers = self.pool.native_mut().claim_fresh(&seq.blocks[base as usize..], free.min(n) as usize);
        let (owner, len) = (seq.id, seq.len());
        let footprint = self.blocks_for(len);
        let o = self.connector.offload_mut().expect("an offload rank");
        let now = o.now;
        // A shared pool holds the blocks its stores read: no fresh block has a reader then.
        let not_before = if o.is_shared() { now } else { o.stores_end(&readers, now) };
        let client = o.client();
        let queued = o.host().schedule_load(client, s as u64, &keys, now, not_before);
        let Some(id) = queued else {
            self.release_blocks(s);
            return StartLoad::Retry;
        };
        o.note_load(&keys, id, owner);
        let bs = self.cfg.block_size;
        o.request(s).load = Some(Load::Loading { id, keys, original_g1: (base * bs).min(len), loaded_prefix: base + n, footprint });
        self.seq_mut(s).visible = base;
        StartLoad::Queued
    }

    /// After a pass's scheduling: each request scheduled in it offers its newly computed full
    /// prompt blocks to the host tier (see `offload/`'s rules).
    pub(super) fn offer_stores(&mut self) {
        let mut scheduled = std::mem::take(&mut self.scratch_flags);
        scheduled.clear();
        scheduled.resize(self.seqs.len(), false);
        for c in &self.chunks {
            scheduled[c.seq as usize] = true;
        }
        for k in 0..self.running.len() {
            let s = self.running[k];
            if scheduled[s as usize] {
                self.offer_store(s);
            }
        }
        self.scratch_flags = scheduled;
    }

    fn offer_store(&mut self, s: u32) {
        self.ensure_host(s);
        let bs = self.cfg.block_size;
        let (computed, prompt_len) = {
            let q = self.seq(s);
            (q.num_computed, q.prompt_len())
        };
        let o = self.connector.offload_mut().expect("an offload rank");
        let now = o.now;
        let client = o.client();
        let r = o.requests[s as usize].as_mut().expect("a request's offload state");
        let end = (computed.min(prompt_len) / bs).min(r.keys.len() as u32);
        if end <= r.next_store {
            return;
        }
        let start = r.next_store;
        let mut tier = o.host.borrow_mut();
        let missing: Vec<u32> =
            (start..end).filter(|&i| tier.lookup(r.keys[i as usize]) == crate::kv::offload::host_tier::Lookup::Miss).collect();
        if missing.is_empty() {
            r.next_store = end;
            return;
        }
        let seq = self.seqs[s as usize].as_ref().expect("live sequence");
        let slots: Vec<SlotId> = missing.iter().map(|&i| seq.blocks[i as usize]).collect();
        // Its device copies must be computed and not still read by an earlier store.
        let pool = self.pool.native_mut();
        if missing.iter().any(|&i| i >= seq.visible) || !pool.can_attach_reader(&slots) {
            return;
        }
        let range = start as usize..end as usize;
        match tier.prepare_store(client, r.owner, &r.keys[range.clone()], r.meta.as_deref().map(|m| &m[range]), now) {
            StoreOutcome::AlreadyPresent => r.next_store = end,
            StoreOutcome::RetryCapacity => {}
            StoreOutcome::Prepared(id) => {
                pool.attach_reader(&slots, id.0);
                r.latest_store = Some(id);
                r.next_store = end;
                for &k in r.keys.iter().rev() {
                    tier.touch(k);
                }
            }
        }
    }

    /// A load landed: the loaded blocks become cache-visible in `s`'s own device blocks.
    fn activate(&mut self, s: u32, id: TransferId) {
        let r = self.offload().request(s);
        let Some(Load::Loading { id: mine, keys, original_g1, loaded_prefix, footprint }) = r.load.take() else {
            unreachable!("a landed load's request is loading")
        };
        debug_assert_eq!(mine, id);
        r.load = Some(Load::Activated { original_g1, loaded_prefix, loaded: keys.len() as u32, footprint });
        self.make_visible(s, loaded_prefix);
    }

    /// Applies what settling the tiers did: landed loads are activated, sleepers wake.
    fn apply_progress(&mut self, p: super::offload::Progress) {
        for (s, id) in p.loads {
            self.activate(s, id);
        }
        if p.any {
            let o = self.offload();
            for r in o.requests.iter_mut().flatten() {
                r.asleep = false;
            }
        }
    }

    /// The rank's pass (or its worker's, for an idle rank) ended at `end`.
    pub(super) fn offload_boundary(&mut self, end: f64, events: &mut Vec<KvEvent>) {
        let o = self.connector.offload_mut().expect("an offload rank");
        let p = o.boundary(self.pool.native_mut(), end);
        self.apply_progress(p);
        self.pool.events().drain_into(events);
    }

    /// Idle: the transfers due by `now` land.
    pub(super) fn offload_settle(&mut self, now: f64, events: &mut Vec<KvEvent>) {
        let o = self.connector.offload_mut().expect("an offload rank");
        let p = o.advance(self.pool.native_mut(), now);
        self.apply_progress(p);
        self.pool.events().drain_into(events);
    }

    /// Any connector waiter awake.
    pub(super) fn connector_ready(&self) -> bool {
        let o = self.connector.offload().expect("an offload rank");
        o.connector.iter().any(|&c| o.requests[c as usize].as_ref().is_some_and(|r| !r.asleep))
    }
}
