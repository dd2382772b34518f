//! Driving the service over its protocol in the tests (requests with reply channels, what
//! they got back) on a [`ServiceHarness`], and the bounds its outputs are compared by.

use std::path::Path;
use std::time::Instant;

use super::*;
use kvrun::llama::TokenId;
pub use kvrun::service::harness::ServiceHarness;
use kvrun::service::protocol::{
    Ask, CancelToken, ConversationKey, Reply, Request, ServiceError, Started, TokenPiece, Usage,
};

pub const THREADS: u32 = 2;
/// A prefix kept in the context and the rest prefilled from inside a page: the batches have
/// other shapes than from scratch, so sums round differently (a chat's next turn does the
/// same). Whole pages restored and prefill from a page boundary must be exact (0).
pub const ROUNDING: f32 = 0.01;
/// Decoded in one batch with another sequence: the batch's matmuls (and the activation
/// quantization of the quantized weights' dot products) round differently. Measured on
/// Gemma 3: up to 0.116 before the first flip; choices 0.04 and 0.23 apart flipped.
pub const BATCHED: f32 = 0.25;
/// Two candidates closer than this in log-probability are a tie that rounding may flip
/// (twice the largest rounding allowed: each side may move by it).
pub const NEAR_TIE: f32 = 2.0 * BATCHED;
/// The same on Gemma 3 (measured: 0.083 cut inside the reply, 0.155 cut 1000 tokens back,
/// where the rest prefills as [601, 768) instead of [512, 768)); greedy tokens agree.
pub const SWA_BATCH_SHAPES: f32 = 0.2;

/// The same greedy tokens, and log-probabilities within `bound`. Where `bound` allows
/// rounding, the tokens may part only at a near tie of the reference (its two best
/// candidates closer than [`NEAR_TIE`]): rounding may flip such a choice, and after it the
/// texts are different continuations.
pub fn assert_close(out: &Outcome, reference: &Outcome, bound: f32) {
    let (ours, theirs) = (out.tokens(), reference.tokens());
    assert_eq!(ours.len(), theirs.len());
    let agree = ours.iter().zip(&theirs).take_while(|(a, b)| a == b).count();
    if agree < ours.len() {
        let top = &reference.pieces[agree].logprob.as_ref().unwrap().top;
        let gap = top[0].1 - top[1].1;
        assert!(
            bound > 0.0 && gap < NEAR_TIE,
            "greedy tokens part at {agree} where the reference's choice was clear (gap \
             {gap}): {ours:?} vs {theirs:?}"
        );
    }
    let diff = max_diff(&out.logprobs()[..agree], &reference.logprobs()[..agree]);
    assert!(
        diff <= bound,
        "log-probabilities differ by {diff} (bound {bound})"
    );
}

/// What one request got back.
#[derive(Debug)]
pub struct Outcome {
    pub started: Option<Started>,
    pub pieces: Vec<TokenPiece>,
    pub done: Option<Usage>,
    pub failed: Option<ServiceError>,
    /// Prefill progress (done, total), for a request that asked for it.
    pub progress: Vec<(usize, usize)>,
}

impl Outcome {
    pub fn tokens(&self) -> Vec<TokenId> {
        self.pieces.iter().map(|p| p.id).collect()
    }
    pub fn logprobs(&self) -> Vec<f32> {
        self.pieces
            .iter()
            .map(|p| p.logprob.as_ref().unwrap().logprob)
            .collect()
    }
    pub fn text(&self) -> String {
        self.pieces.iter().map(|p| p.text.as_str()).collect()
    }
    pub fn usage(&self) -> &Usage {
        self.done
            .as_ref()
            .unwrap_or_else(|| panic!("no Done: {self:?}"))
    }
}

pub struct Pending {
    pub replies: tokio::sync::mpsc::UnboundedReceiver<Reply>,
    pub cancel: CancelToken,
}

pub fn request(
    key: ConversationKey,
    prompt: Vec<TokenId>,
    max_tokens: usize,
) -> (Request, Pending) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancelToken::new();
    let request = Request {
        id: 0,
        ask: Ask::new(key, prompt, max_tokens).with_logprobs(Some(3)),
        transcript: None,
        progress: false,
        cancel: cancel.clone(),
        replies: tx,
        received: Instant::now(),
        save_before_done: false,
    };
    (
        request,
        Pending {
            replies: rx,
            cancel,
        },
    )
}

impl Pending {
    pub fn collect(mut self) -> Outcome {
        let mut out = Outcome {
            started: None,
            pieces: Vec::new(),
            done: None,
            failed: None,
            progress: Vec::new(),
        };
        while let Some(reply) = self.replies.blocking_recv() {
            match reply {
                Reply::Started(s) => {
                    assert!(out.started.is_none() && out.pieces.is_empty());
                    out.started = Some(s);
                }
                Reply::Progress { done, total } => {
                    assert!(out.started.is_some() && out.pieces.is_empty(), "{out:?}");
                    out.progress.push((done, total));
                }
                Reply::Token(t) => {
                    assert!(out.started.is_some(), "a token before Started");
                    out.pieces.push(t);
                }
                Reply::Done(u) => {
                    out.done = Some(u);
                    break;
                }
                Reply::Failed(e) => {
                    out.failed = Some(e);
                    break;
                }
            }
        }
        out
    }
}

pub fn generate(
    service: &ServiceHarness,
    key: ConversationKey,
    prompt: Vec<TokenId>,
    n: usize,
) -> Outcome {
    let (req, pending) = request(key, prompt, n);
    service.handle().submit(req).unwrap();
    pending.collect()
}

pub fn named(name: &str) -> ConversationKey {
    ConversationKey::Named(name.to_string())
}

pub fn from_scratch(model: &Path, prompt: &[TokenId], n: usize) -> Outcome {
    let home = Home::new();
    let service = ServiceHarness::new(home.path(), model).start().unwrap();
    let out = generate(&service, ConversationKey::Anonymous, prompt.to_vec(), n);
    service.stop().unwrap();
    out
}

/// A second turn: the first prompt, a reply cut inside (`keep_reply` of its tokens), and
/// more text.
pub fn second_turn(
    first: &[TokenId],
    reply: &[TokenId],
    keep_reply: usize,
    more: &[TokenId],
) -> Vec<TokenId> {
    let mut prompt = first.to_vec();
    prompt.extend_from_slice(&reply[..keep_reply.min(reply.len())]);
    prompt.extend_from_slice(more);
    prompt
}
