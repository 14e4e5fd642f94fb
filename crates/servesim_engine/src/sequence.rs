//! A request inside an engine: its tokens (prompt, then generated), what is computed, and the
//! blocks it holds.

use crate::hash::{block_hash, mix64, sequence_hash};
use crate::kv::SlotId;

/// A request as submitted to an engine core.
#[derive(Clone, Debug)]
pub struct Request {
    /// Unique within a run; also seeds the request's generated tokens.
    pub id: u64,
    pub prompt: Prompt,
    pub max_output: u32,
}

/// A prompt as runs of identical tokens, (token, end position): a trace's hash id stands for
/// a block of identical tokens, so a long prompt is a handful of runs and a deep waiting
/// queue stays small.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Prompt {
    runs: Vec<(u32, u32)>,
    /// The images among the prompt's tokens, in prompt order (empty for a text-only prompt,
    /// which then allocates nothing more).
    images: Vec<ImageSpan>,
}

/// An image inside a prompt: its placeholder tokens `start..start + tokens` are filled by the
/// vision encoder's output (vLLM's `PlaceholderRange`), and `hash` names its content (vLLM's
/// `mm_hash`): two images with one hash share encoder output and, at the same place after the
/// same prefix, KV blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageSpan {
    pub start: u32,
    pub tokens: u32,
    pub hash: u64,
}

/// An image to place in a prompt: `tokens` tokens inserted before text position `offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Image {
    pub offset: u32,
    pub tokens: u32,
    pub hash: u64,
}

/// The token an image's placeholders carry: derived from its content hash, so the blocks that
/// hold it hash (and are prefix-cached) by the image's content, as vLLM's block hashes take
/// the image hash as an extra key. The top bit is set to keep it apart from a trace's hash
/// ids, which are small integers once interned.
pub fn image_token(hash: u64) -> u32 {
    (mix64(hash) >> 32) as u32 | 0x8000_0000
}

impl Prompt {
    /// Builds a prompt from (token, count) runs.
    pub fn from_runs(runs: impl IntoIterator<Item = (u32, u32)>) -> Self {
        let runs = runs.into_iter();
        let mut out: Vec<(u32, u32)> = Vec::with_capacity(runs.size_hint().0);
        let mut end = 0;
        for (t, n) in runs {
            if n == 0 {
                continue;
            }
            end += n;
            match out.last_mut() {
                Some(last) if last.0 == t => last.1 = end,
                _ => out.push((t, end)),
            }
        }
        Prompt { runs: out, images: Vec::new() }
    }

    /// A prompt of text runs (token, count) with `images` inserted: each image's placeholder
    /// tokens go before text position `offset` (images at one offset in the order given).
    /// Offsets past the text's end place the image at the end.
    pub fn with_images(text: impl IntoIterator<Item = (u32, u32)>, images: &[Image]) -> Self {
        if images.is_empty() {
            return Prompt::from_runs(text);
        }
        let mut order: Vec<usize> = (0..images.len()).collect();
        order.sort_by_key(|&k| images[k].offset);
        let mut merged: Vec<(u32, u32)> = Vec::new();
        let mut spans = Vec::with_capacity(images.len());
        let (mut text_pos, mut pos, mut next) = (0u32, 0u32, 0usize);
        let mut place = |merged: &mut Vec<(u32, u32)>, pos: &mut u32, img: &Image| {
            merged.push((image_token(img.hash), img.tokens));
            spans.push(ImageSpan { start: *pos, tokens: img.tokens, hash: img.hash });
            *pos += img.tokens;
        };
        for (t, n) in text {
            let mut left = n;
            while left > 0 {
                while next < order.len() && images[order[next]].offset <= text_pos {
                    place(&mut merged, &mut pos, &images[order[next]]);
                    next += 1;
                }
                let until = if next < order.len() { images[order[next]].offset - text_pos } else { left };
                let take = left.min(until);
                merged.push((t, take));
                text_pos += take;
                pos += take;
                left -= take;
            }
        }
        for &k in &order[next..] {
            place(&mut merged, &mut pos, &images[k]);
        }
        let mut prompt = Prompt::from_runs(merged);
        prompt.images = spans;
        prompt
    }

    /// The prompt's images, in prompt order.
    pub fn images(&self) -> &[ImageSpan] {
        &self.images
    }

    pub fn len(&self) -> u32 {
        self.runs.last().map_or(0, |r| r.1)
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Token at position `i < len()`.
    pub fn token(&self, i: u32) -> Option<u32> {
        self.runs.get(self.runs.partition_point(|r| r.1 <= i)).map(|r| r.0)
    }

    /// Appends the tokens of positions `start..end` (within the prompt) to `out`.
    pub fn extend_tokens(&self, start: u32, end: u32, out: &mut Vec<u32>) {
        let mut p = start;
        let mut k = self.runs.partition_point(|r| r.1 <= start);
        while p < end {
            let (t, run_end) = self.runs[k];
            let n = run_end.min(end) - p;
            out.extend(std::iter::repeat_n(t, n as usize));
            p += n;
            k += 1;
        }
    }

    /// Every token (a transient copy, e.g. for a router's block hashes).
    pub fn to_vec(&self) -> Vec<u32> {
        let mut v = Vec::with_capacity(self.len() as usize);
        self.extend_tokens(0, self.len(), &mut v);
        v
    }
}

impl From<Vec<u32>> for Prompt {
    fn from(tokens: Vec<u32>) -> Self {
        Prompt::from_runs(tokens.into_iter().map(|t| (t, 1)))
    }
}

/// Field order is deliberate (`repr(C)`, one cache line aligned): a scheduler pass walks every
/// running request several times and reads only `blocks`' length and the counters, so they
/// share the first line (with `Option<Sequence>`'s niche in `blocks`' pointer). Measured: the
/// first load of each request in those walks was the pass's largest stall.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Sequence {
    /// Physical blocks held, in sequence order.
    pub blocks: Vec<SlotId>,
    prompt_len: u32,
    pub max_output: u32,
    /// Output tokens emitted so far.
    pub generated: u32,
    /// Tokens whose KV is computed (vLLM's `num_computed_tokens`).
    pub num_computed: u32,
    /// Leading full blocks already cache-visible.
    pub visible: u32,
    /// Steady tokens emitted in the current streak and not yet reported to the harness.
    pub streak: u32,
    /// Its prompt KV was computed by a prefill worker and transferred here.
    pub prefilled: bool,
    /// Reserved here, its prompt KV still on the way: it keeps its place in the queue but is
    /// passed over.
    pub kv_pending: bool,
    /// It emitted a token at its rank's latest pass end.
    pub emitted_last_pass: bool,
    pub id: u64,
    /// Its place in its scheduler's queue order: when it was submitted or reserved there.
    pub order: u64,
    pub admissions: u32,
    prompt: Prompt,
    /// (sequence hash, local hash) of full blocks, extended lazily.
    hashes: Vec<(u64, u64)>,
    /// The last all-one-token block hashed: (token, local hash). Runs of a trace's hash id
    /// fill many blocks with one token, and those all share their local hash.
    uniform_memo: Option<(u32, u64)>,
    /// Index of the prompt run holding the next block to hash.
    run_cursor: u32,
}

impl Sequence {
    pub fn new(req: Request) -> Self {
        Sequence {
            blocks: Vec::new(),
            prompt_len: req.prompt.len(),
            uniform_memo: None,
            run_cursor: 0,
            id: req.id,
            order: 0,
            prompt: req.prompt,
            max_output: req.max_output,
            generated: 0,
            num_computed: 0,
            hashes: Vec::new(),
            visible: 0,
            streak: 0,
            admissions: 0,
            prefilled: false,
            kv_pending: false,
            emitted_last_pass: false,
        }
    }

    pub fn prompt_len(&self) -> u32 {
        self.prompt_len
    }

    /// The prompt's images (empty for text only).
    pub fn images(&self) -> &[ImageSpan] {
        &self.prompt.images
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

    /// Transferred here and not yet admitted: its prompt's KV fills its reserved blocks.
    pub fn kv_in_place(&self) -> bool {
        self.prefilled && self.admissions == 0 && !self.kv_pending
    }

    pub fn generation_done(&self) -> bool {
        self.generated >= self.max_output
    }

    /// Token at position `i`: the prompt's, or a generated token derived from the request id
    /// (no two requests generate the same text, so generated blocks are never shared).
    pub fn token(&self, i: u32) -> u32 {
        match self.prompt.token(i) {
            Some(t) => t,
            // A Weyl sequence from a per-request seed: cheap, and distinct across requests.
            None => self.generated_token(i),
        }
    }

    fn generated_token(&self, i: u32) -> u32 {
        generated_token(self.id, i)
    }

    /// (sequence hash, local hash) of full block `i`; `i` must be below `len() / bs`.
    pub fn block_hashes(&mut self, i: u32, bs: u32, scratch: &mut (Vec<u32>, Vec<u8>)) -> (u64, u64) {
        self.hash_blocks(i + 1, bs, scratch);
        self.hashes[i as usize]
    }

    /// Hashes full blocks up to `n` (at most `len() / bs`), in one pass: a prompt's blocks are
    /// looked up at admission and registered soon after, so they are hashed together.
    pub fn hash_blocks(&mut self, n: u32, bs: u32, scratch: &mut (Vec<u32>, Vec<u8>)) {
        if self.hashes.len() as u32 >= n {
            return;
        }
        if self.hashes.is_empty() {
            // Every block the request will ever fill, so the chain never reallocates.
            self.hashes.reserve_exact(((self.prompt_len + self.max_output) / bs) as usize + 1);
        }
        let mut parent = self.hashes.last().map(|h| h.0);
        let mut b = self.hashes.len() as u32;
        while b < n {
            let local = self.local_hash(b * bs, (b + 1) * bs, scratch);
            let h = sequence_hash(parent, local);
            self.hashes.push((h, local));
            parent = Some(h);
            b += 1;
            // The blocks after it that the same one-token run fills share its local hash:
            // only their chain is hashed (profiled: finding the run again for each block
            // cost three times the hash itself).
            // `run_cursor` holds the run where the block just hashed starts, so the next
            // block starts inside it too; if it also ends inside it, `local_hash` would
            // return the memo.
            let Some((memo_token, memo)) = self.uniform_memo else { continue };
            let Some(&(t, run_end)) = self.prompt.runs.get(self.run_cursor as usize) else { continue };
            let run_end = run_end.min(self.prompt_len);
            if t != memo_token || (b + 1) * bs > run_end {
                continue;
            }
            let last = (run_end / bs).min(n);
            let mut p = h;
            for _ in b..last {
                p = sequence_hash(Some(p), memo);
                self.hashes.push((p, memo));
            }
            parent = Some(p);
            b = b.max(last);
        }
    }

    /// (sequence hash, local hash) of the blocks hashed so far (see [`Self::hash_blocks`]).
    pub fn hashes(&self) -> &[(u64, u64)] {
        &self.hashes
    }

    /// Hash of the tokens `start..end`. Blocks are hashed in order, so the prompt run holding
    /// `start` is found by moving a cursor forward, never by searching.
    fn local_hash(&mut self, start: u32, end: u32, scratch: &mut (Vec<u32>, Vec<u8>)) -> u64 {
        let (toks, bytes) = &mut *scratch;
        toks.clear();
        let runs = &self.prompt.runs;
        let mut k = self.run_cursor as usize;
        let prompt_end = end.min(self.prompt_len);
        if start < prompt_end {
            while runs[k].1 <= start {
                k += 1;
            }
            self.run_cursor = k as u32;
            let (t, run_end) = runs[k];
            if end <= run_end {
                // One token fills the block: a trace's hash id spans many such blocks, and
                // they all share this hash.
                if let Some((m, h)) = self.uniform_memo
                    && m == t
                {
                    return h;
                }
                toks.resize(toks.len() + (end - start) as usize, t);
                let h = block_hash(toks, bytes);
                self.uniform_memo = Some((t, h));
                return h;
            }
            let mut p = start;
            while p < prompt_end {
                let (t, run_end) = runs[k];
                let n = run_end.min(prompt_end) - p;
                toks.extend(std::iter::repeat_n(t, n as usize));
                p += n;
                k += 1;
            }
        }
        let seed = mix64(self.id);
        toks.extend((start.max(prompt_end)..end).map(|q| weyl(seed, q)));
        block_hash(toks, bytes)
    }

    /// Sequence hash of the block before `i`, if any.
    pub fn parent_of(&self, i: u32) -> Option<u64> {
        if i == 0 { None } else { Some(self.hashes[(i - 1) as usize].0) }
    }
}

/// The token request `id` generates at position `i` (past its prompt): a Weyl sequence from a
/// per-request seed, cheap and distinct across requests. A harness that replays a session's
/// history (a later turn's prompt holds an earlier turn's output) appends these.
pub fn generated_token(id: u64, i: u32) -> u32 {
    weyl(mix64(id), i)
}

fn weyl(seed: u64, i: u32) -> u32 {
    (seed.wrapping_add((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)) >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Long one-token runs (a trace's hash ids) hash block by block like their tokens, for
    /// any block size, run lengths and increments of `hash_blocks`.
    #[test]
    fn uniform_runs_hash_like_the_tokens() {
        let mut x = 12345u64;
        let mut draw = |m: u64| {
            x = mix64(x);
            x % m
        };
        for case in 0..400 {
            let bs = [1, 2, 3, 4, 8, 16][case % 6];
            let runs: Vec<(u32, u32)> = (0..1 + draw(8)).map(|_| (draw(4) as u32, 1 + draw(70) as u32)).collect();
            let prompt: Vec<u32> = runs.iter().flat_map(|&(t, n)| std::iter::repeat_n(t, n as usize)).collect();
            let mut seq = Sequence::new(Request { id: case as u64, prompt: Prompt::from_runs(runs), max_output: 30 });
            seq.generated = draw(30) as u32;
            let blocks = seq.len() / bs;
            let mut scratch = Default::default();
            let mut upto = 0;
            while upto < blocks {
                upto = (upto + 1 + draw(12) as u32).min(blocks);
                seq.hash_blocks(upto, bs, &mut scratch);
            }
            let (mut bytes, mut parent) = (Vec::new(), None);
            for b in 0..blocks {
                let toks: Vec<u32> = (b * bs..(b + 1) * bs).map(|i| seq.token(i)).collect();
                if ((b + 1) * bs) as usize <= prompt.len() {
                    assert_eq!(&toks[..], &prompt[(b * bs) as usize..((b + 1) * bs) as usize]);
                }
                let local = block_hash(&toks, &mut bytes);
                let h = sequence_hash(parent, local);
                assert_eq!(seq.hashes()[b as usize], (h, local), "case {case}, block {b} of {bs}");
                parent = Some(h);
            }
        }
    }

    #[test]
    fn run_length_prompts_hash_like_the_tokens() {
        let prompt: Vec<u32> = [7u32; 20].iter().chain([9u32; 13].iter()).copied().chain(0..5).collect();
        let mut seq = Sequence::new(Request { id: 3, prompt: prompt.clone().into(), max_output: 40 });
        assert_eq!(seq.prompt.runs.len(), 7);
        assert_eq!((seq.token(0), seq.token(19), seq.token(20), seq.token(32), seq.token(33)), (7, 7, 9, 9, 0));
        seq.generated = 20;
        let mut scratch = Default::default();
        let mut bytes = Vec::new();
        let mut parent = None;
        for b in 0..(seq.len() / 8) {
            let toks: Vec<u32> = (b * 8..(b + 1) * 8).map(|i| seq.token(i)).collect();
            if (b as usize + 1) * 8 <= prompt.len() {
                assert_eq!(&toks[..], &prompt[b as usize * 8..(b as usize + 1) * 8]);
            }
            let local = block_hash(&toks, &mut bytes);
            let h = sequence_hash(parent, local);
            assert_eq!(seq.block_hashes(b, 8, &mut scratch), (h, local), "block {b}");
            parent = Some(h);
        }
    }
}
