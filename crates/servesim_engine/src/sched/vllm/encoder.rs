//! Multimodal requests in the vLLM scheduler, after vLLM v1's `_try_schedule_encoder_inputs`:
//! before a chunk covering an image's placeholder tokens is scheduled, the image's encoder
//! output must be in the encoder cache or be computed in this pass, within the pass's encoder
//! token budget and the cache's room. When neither holds, the chunk stops just before the
//! image (and is not scheduled if that leaves nothing).
//!
//! Text-only requests never reach this code: the state is created on the first request with
//! images, and only such requests are planned.

use super::VllmCore;
use crate::kv::encoder_cache::EncoderCache;
use crate::sequence::Sequence;

#[derive(Debug)]
pub(super) struct EncoderState {
    pub cache: EncoderCache,
    /// Image tokens the encoder may take per pass.
    pub budget: u32,
    /// What is left of it in this pass.
    pub budget_left: u32,
    /// The pass's encoder work so far: image tokens and images.
    pub pass_tokens: u64,
    pub pass_images: u64,
    /// The plan for the request being scheduled: indices of its images to encode, and their
    /// tokens.
    plan: Vec<u32>,
    plan_tokens: u32,
    /// Images of the plan found in the cache (counted once the request is scheduled).
    plan_hits: u32,
    /// (image hash, request) references to drop at the pass end: those images are prefilled
    /// (vLLM frees encoder inputs once the step that consumed them has run).
    to_release: Vec<(u64, u64)>,
}

impl EncoderState {
    pub fn new(budget: u32, cache_tokens: u32) -> Self {
        EncoderState {
            cache: EncoderCache::new(cache_tokens),
            budget,
            budget_left: budget,
            pass_tokens: 0,
            pass_images: 0,
            plan: Vec::new(),
            plan_tokens: 0,
            plan_hits: 0,
            to_release: Vec::new(),
        }
    }
}

impl VllmCore {
    /// Why a request's images can never run here, if they cannot (checked once, on its first
    /// admission attempt).
    pub(super) fn image_rejection(&self, seq: &Sequence) -> Option<String> {
        if self.cfg.capacity == super::Capacity::NoEvict {
            return Some("has images: the trtllm backend does not model multimodal requests (use backend \"vllm\")".into());
        }
        if !self.timer.model.times_images() {
            return Some("has images but the roofline model has no vision tower (use a multimodal preset such as qwen2.5-vl-7b, or add `vision` to the model)".into());
        }
        let (budget, cache) = (self.encoder_budget(), self.encoder_cache_tokens());
        for img in seq.images() {
            if img.tokens > budget {
                return Some(format!("has an image of {} tokens, more than max_num_encoder_input_tokens {budget}", img.tokens));
            }
            if img.tokens > cache {
                return Some(format!("has an image of {} tokens, more than the encoder cache (encoder_cache_size {cache})", img.tokens));
            }
        }
        if !self.cfg.chunked_prefill {
            let total: u64 = seq.images().iter().map(|i| i.tokens as u64).sum();
            if total > budget as u64 {
                return Some(format!(
                    "has {total} image tokens, more than max_num_encoder_input_tokens {budget}, and chunked prefill is off (its prompt must run in one pass)"
                ));
            }
        }
        None
    }

    fn encoder_budget(&self) -> u32 {
        self.encoder.as_ref().map_or(self.encoder_args.0, |e| e.budget)
    }

    fn encoder_cache_tokens(&self) -> u32 {
        self.encoder.as_ref().map_or(self.encoder_args.1, |e| e.cache.capacity())
    }

    /// The encoder state, created when the first request with images arrives.
    pub(super) fn encoder_mut(&mut self) -> &mut EncoderState {
        let (budget, cache) = self.encoder_args;
        self.encoder.get_or_insert_with(|| Box::new(EncoderState::new(budget, cache)))
    }

    /// Plans the encoder work of `s`'s chunk of `desired` tokens from position `before`:
    /// returns the tokens it may take (cut before the first image it cannot get). Images found
    /// in the cache are referenced at once (as vLLM does); those to encode are remembered
    /// until [`Self::commit_encoder`].
    pub(super) fn plan_encoder(&mut self, s: u32, before: u32, desired: u32) -> u32 {
        let seq = self.seqs[s as usize].as_ref().expect("live sequence");
        let id = seq.id;
        let end = before + desired;
        // The images are few; a copy keeps the borrow of the sequence short.
        let images: Vec<_> = seq.images().to_vec();
        let enc = self.encoder_mut();
        enc.plan.clear();
        enc.plan_tokens = 0;
        enc.plan_hits = 0;
        let mut budget = enc.budget_left;
        let mut allowed = desired;
        for (k, img) in images.iter().enumerate() {
            if img.start >= end {
                break;
            }
            if img.start + img.tokens <= before {
                // Already in the KV cache (computed, or a prefix-cache hit).
                continue;
            }
            if enc.cache.is_referenced_by(img.hash, id) {
                // Encoded (or found) for this request in an earlier pass.
                continue;
            }
            if enc.cache.check_and_reference(img.hash, id) {
                enc.plan_hits += 1;
                continue;
            }
            if enc.plan.iter().any(|&p| images[p as usize].hash == img.hash) {
                // The same picture twice in one prompt: encoded once.
                continue;
            }
            if img.tokens > budget || !enc.cache.make_room(img.tokens, enc.plan_tokens) {
                allowed = img.start.saturating_sub(before);
                break;
            }
            budget -= img.tokens;
            enc.plan_tokens += img.tokens;
            enc.plan.push(k as u32);
        }
        allowed
    }

    /// `s` was scheduled with its planned chunk (now computed up to `computed`): its planned
    /// images are encoded in this pass, and those it has now prefilled are released at the
    /// pass end.
    pub(super) fn commit_encoder(&mut self, s: u32, computed: u32) {
        let seq = self.seqs[s as usize].as_ref().expect("live sequence");
        let id = seq.id;
        let enc = self.encoder.as_mut().expect("planned");
        let mut encoded = 0u32;
        for &k in &enc.plan {
            let img = seq.images()[k as usize];
            enc.cache.allocate(img.hash, img.tokens, id);
            enc.budget_left -= img.tokens;
            enc.pass_tokens += img.tokens as u64;
            enc.pass_images += 1;
            encoded += 1;
        }
        let hits = std::mem::take(&mut enc.plan_hits);
        enc.plan.clear();
        enc.plan_tokens = 0;
        self.out.encoder_hits += hits;
        self.out.encoder_lookups += hits;
        for img in seq.images() {
            if img.start + img.tokens <= computed && enc.cache.is_referenced_by(img.hash, id) {
                enc.to_release.push((img.hash, id));
            }
        }
        if encoded > 0 {
            self.out.encoder_lookups += encoded;
            if self.out.encoded.last() != Some(&id) {
                self.out.encoded.push(id);
            }
        }
    }

    /// A new pass: the encoder budget is whole again.
    pub(super) fn begin_encoder_pass(&mut self) {
        if let Some(e) = &mut self.encoder {
            e.budget_left = e.budget;
            e.pass_tokens = 0;
            e.pass_images = 0;
        }
    }

    /// The pass end: drops the references of images now prefilled, and times the encoder.
    pub(super) fn end_encoder_pass(&mut self) -> std::time::Duration {
        let Some(e) = &mut self.encoder else { return Default::default() };
        for (hash, id) in e.to_release.drain(..) {
            e.cache.release(hash, id);
        }
        if e.pass_tokens == 0 { Default::default() } else { self.timer.encoder(e.pass_tokens, e.pass_images) }
    }

    /// `s` leaves the running set (preempted or finished), or was not admitted after all:
    /// every encoder output it references becomes freeable (vLLM's
    /// `encoder_cache_manager.free(request)`). A waiting request gives back the references its
    /// plan took, unlike vLLM: otherwise waiting requests could hold the whole cache while
    /// nothing runs, and no pass could ever encode again.
    pub(super) fn forget_images(&mut self, s: u32) {
        let Some(e) = &mut self.encoder else { return };
        let seq = self.seqs[s as usize].as_ref().expect("live sequence");
        for img in seq.images() {
            e.cache.release(img.hash, seq.id);
        }
        e.to_release.retain(|&(_, r)| r != seq.id);
    }
}
