//! A request inside an engine: its tokens (prompt, then generated), what is computed, and the
//! blocks it holds.

use crate::hash::{block_hash, mix64, sequence_hash};
use crate::kv::SlotId;

/// A request as submitted to an engine core.
#[derive(Clone, Debug)]
pub struct Request {
    /// Unique within a run; also seeds the request's generated tokens.
    pub id: u64,
    pub prompt: Vec<u32>,
    pub max_output: u32,
}

#[derive(Debug)]
pub struct Sequence {
    pub id: u64,
    prompt: Vec<u32>,
    pub max_output: u32,
    /// Output tokens emitted so far.
    pub generated: u32,
    /// Tokens whose KV is computed (vLLM's `num_computed_tokens`).
    pub num_computed: u32,
    /// Physical blocks held, in sequence order.
    pub blocks: Vec<SlotId>,
    /// (sequence hash, local hash) of full blocks, extended lazily.
    hashes: Vec<(u64, u64)>,
    /// Leading full blocks already cache-visible.
    pub visible: u32,
    pub admissions: u32,
    /// Its prompt KV was computed by a prefill worker and transferred here.
    pub prefilled: bool,
}

impl Sequence {
    pub fn new(req: Request) -> Self {
        Sequence {
            blocks: Vec::with_capacity(req.prompt.len() / 16 + 4),
            id: req.id,
            prompt: req.prompt,
            max_output: req.max_output,
            generated: 0,
            num_computed: 0,
            hashes: Vec::new(),
            visible: 0,
            admissions: 0,
            prefilled: false,
        }
    }

    pub fn prompt_len(&self) -> u32 {
        self.prompt.len() as u32
    }

    /// Prompt plus generated tokens.
    pub fn len(&self) -> u32 {
        self.prompt_len() + self.generated
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn fully_computed(&self) -> bool {
        self.num_computed == self.len()
    }

    pub fn generation_done(&self) -> bool {
        self.generated >= self.max_output
    }

    /// Token at position `i`: the prompt's, or a generated token derived from the request id
    /// (no two requests generate the same text, so generated blocks are never shared).
    pub fn token(&self, i: u32) -> u32 {
        match self.prompt.get(i as usize) {
            Some(&t) => t,
            // A Weyl sequence from a per-request seed: cheap, and distinct across requests.
            None => (mix64(self.id).wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 32) as u32,
        }
    }

    /// (sequence hash, local hash) of full block `i`; `i` must be below `len() / bs`.
    pub fn block_hashes(&mut self, i: u32, bs: u32, scratch: &mut (Vec<u32>, Vec<u8>)) -> (u64, u64) {
        if self.hashes.is_empty() {
            // Every block the request will ever fill, so the chain never reallocates.
            self.hashes.reserve_exact(((self.prompt.len() as u32 + self.max_output) / bs) as usize + 1);
        }
        while self.hashes.len() as u32 <= i {
            let b = self.hashes.len() as u32;
            let (start, end) = ((b * bs) as usize, ((b + 1) * bs) as usize);
            let (toks, bytes) = &mut *scratch;
            let local = if end <= self.prompt.len() {
                block_hash(&self.prompt[start..end], bytes)
            } else {
                toks.clear();
                toks.extend((start..end).map(|p| self.token(p as u32)));
                block_hash(toks, bytes)
            };
            let parent = self.hashes.last().map(|h| h.0);
            self.hashes.push((sequence_hash(parent, local), local));
        }
        self.hashes[i as usize]
    }

    /// Sequence hash of the block before `i`, if any.
    pub fn parent_of(&self, i: u32) -> Option<u64> {
        if i == 0 { None } else { Some(self.hashes[(i - 1) as usize].0) }
    }
}
