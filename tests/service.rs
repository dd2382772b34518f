//! The service engine driven over its protocol, on real llama.cpp: the tiny model, and the
//! default model (Gemma 3, sliding-window attention) where the window matters.

mod common;

use std::path::Path;
use std::time::Instant;

use common::*;
use kvrun::engine::TokenId;
use kvrun::models::{ModelChoice, ModelSource};
use kvrun::service::engine::ContextSizing;
use kvrun::service::handle::OpenSession;
use kvrun::service::protocol::Transcript;
use kvrun::service::protocol::{
    CancelToken, ConversationKey, FinishReason, Reply, Request, ServiceError, Started, TokenPiece,
    Usage,
};
use kvrun::service::{EngineThread, ServiceHandle, ServiceOptions};
use kvrun::settings::{EngineSettings, FlashAttn, KvType, SamplingSettings};

const THREADS: u32 = 2;
/// A prefix kept in the context and the rest prefilled from inside a page: the batches have
/// other shapes than from scratch, so sums round differently (a chat's next turn does the
/// same). Whole pages restored and prefill from a page boundary must be exact (0).
const ROUNDING: f32 = 0.01;
/// Decoded in one batch with another sequence: the batch's matmuls (and the activation
/// quantization of the quantized weights' dot products) round differently. Measured on
/// Gemma 3: up to 0.116 before the first flip; choices 0.04 and 0.23 apart flipped.
const BATCHED: f32 = 0.25;
/// Two candidates closer than this in log-probability are a tie that rounding may flip
/// (twice the largest rounding allowed: each side may move by it).
const NEAR_TIE: f32 = 2.0 * BATCHED;
/// The same on Gemma 3 (measured: 0.083 cut inside the reply, 0.155 cut 1000 tokens back,
/// where the rest prefills as [601, 768) instead of [512, 768)); greedy tokens agree.
const SWA_BATCH_SHAPES: f32 = 0.2;

/// The same greedy tokens, and log-probabilities within `bound`. Where `bound` allows
/// rounding, the tokens may part only at a near tie of the reference (its two best
/// candidates closer than [`NEAR_TIE`]): rounding may flip such a choice, and after it the
/// texts are different continuations.
fn assert_close(out: &Outcome, reference: &Outcome, bound: f32) {
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

struct Service {
    handle: ServiceHandle,
    thread: Option<EngineThread>,
}

impl Service {
    fn start(home: &Path, model: &Path, parallel: usize) -> Self {
        Self::start_with(home, model, parallel, 4096)
    }

    fn start_with(home: &Path, model: &Path, parallel: usize, ctx_size: u32) -> Self {
        Self::start_full(home, model, parallel, ctx_size, Default::default(), 16)
    }

    fn start_full(
        home: &Path,
        model: &Path,
        parallel: usize,
        ctx_size: u32,
        tiers: kvrun::settings::TierSettings,
        max_queue: usize,
    ) -> Self {
        let options = ServiceOptions {
            paths: kvrun::paths::Paths::under(home),
            model: ModelChoice {
                path: model.to_path_buf(),
                source: ModelSource::Argument,
            },
            engine: EngineSettings {
                ctx_size,
                threads: THREADS,
                gpu_layers: 0,
                batch_size: 256,
                kv_type: KvType::F16,
                flash_attn: FlashAttn::Auto,
            },
            sizing: ContextSizing::Fixed,
            tiers,
            parallel,
            max_queue,
            chat_template: None,
            alias: None,
            prefetch: None,
            keep_latest_hot: false,
        };
        let (handle, thread) = start_service(options);
        Self {
            handle,
            thread: Some(thread),
        }
    }

    fn tokenize(&self, text: &str) -> Vec<TokenId> {
        self.handle.model().unwrap().tokenize_prompt(text)
    }

    fn stop(mut self) {
        self.handle.shutdown();
        self.thread.take().unwrap().join().unwrap();
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.handle.shutdown();
            let _ = thread.join();
        }
    }
}

/// What one request got back.
#[derive(Debug)]
struct Outcome {
    started: Option<Started>,
    pieces: Vec<TokenPiece>,
    done: Option<Usage>,
    failed: Option<ServiceError>,
    /// Prefill progress (done, total), for a request that asked for it.
    progress: Vec<(usize, usize)>,
}

impl Outcome {
    fn tokens(&self) -> Vec<TokenId> {
        self.pieces.iter().map(|p| p.id).collect()
    }
    fn logprobs(&self) -> Vec<f32> {
        self.pieces
            .iter()
            .map(|p| p.logprob.as_ref().unwrap().logprob)
            .collect()
    }
    fn text(&self) -> String {
        self.pieces.iter().map(|p| p.text.as_str()).collect()
    }
    fn usage(&self) -> &Usage {
        self.done
            .as_ref()
            .unwrap_or_else(|| panic!("no Done: {self:?}"))
    }
}

struct Pending {
    replies: tokio::sync::mpsc::UnboundedReceiver<Reply>,
    cancel: CancelToken,
}

fn request(key: ConversationKey, prompt: Vec<TokenId>, max_tokens: usize) -> (Request, Pending) {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancelToken::new();
    let request = Request {
        id: 0,
        conversation: key,
        prompt,
        sampling: SamplingSettings::greedy(),
        max_tokens,
        stop: Vec::new(),
        grammar: None,
        logprobs: Some(3),
        template: None,
        transcript: None,
        progress: false,
        cancel: cancel.clone(),
        replies: tx,
        received: Instant::now(),
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
    fn collect(mut self) -> Outcome {
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

fn generate(service: &Service, key: ConversationKey, prompt: Vec<TokenId>, n: usize) -> Outcome {
    let (req, pending) = request(key, prompt, n);
    service.handle.submit(req).unwrap();
    pending.collect()
}

fn named(name: &str) -> ConversationKey {
    ConversationKey::Named(name.to_string())
}

#[test]
fn parallel_1_is_bit_identical_to_kvrun_run() {
    let model = tiny_model();
    let home = Home::new();
    let text = long_text(1);
    let run = run_json(
        &home,
        &[
            "run",
            path_str(&model),
            "--raw",
            "--logprobs",
            "-n",
            "24",
            "--temp",
            "0",
            "-t",
            "2",
            "-c",
            "4096",
            "-p",
            &text,
        ],
    );
    let service = Service::start(home.path(), &model, 1);
    let prompt = service.tokenize(&text);
    let out = generate(&service, ConversationKey::Anonymous, prompt.clone(), 24);
    let usage = out.usage();
    assert_eq!(usage.prompt_tokens, prompt.len());
    assert_eq!(usage.finish, FinishReason::MaxTokens, "{usage:?}");
    let expected: Vec<TokenId> = tokens(&run).into_iter().map(|t| t as TokenId).collect();
    assert_eq!(out.tokens(), expected);
    assert_eq!(out.logprobs(), logprobs(&run));
    service.stop();
}

/// The same prompt from scratch in a fresh home: what every cached variant must equal.
fn from_scratch(model: &Path, prompt: &[TokenId], n: usize) -> Outcome {
    let home = Home::new();
    let service = Service::start(home.path(), model, 1);
    let out = generate(&service, ConversationKey::Anonymous, prompt.to_vec(), n);
    service.stop();
    out
}

/// A second turn: the first prompt, a reply cut inside (`keep_reply` of its tokens), and
/// more text.
fn second_turn(
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

#[test]
fn a_conversation_continues_from_its_hot_cells_and_after_a_restart_from_the_store() {
    let model = tiny_model();
    let home = Home::new();
    let service = Service::start(home.path(), &model, 2);
    let first = service.tokenize(&long_text(2));
    let a = generate(&service, named("work"), first.clone(), 12);
    assert_eq!(a.usage().cached.total(), 0);
    assert_eq!(a.usage().prefilled, first.len());
    assert_eq!(a.started.as_ref().unwrap().session, "work");
    let more = service.tokenize(" And then some more words to read.");
    let second = second_turn(&first, &a.tokens(), 5, &more[1..]);
    let b = generate(&service, named("work"), second.clone(), 12);
    let cached = b.usage().cached;
    assert_eq!(cached.hot, first.len() + 5, "{cached:?}");
    assert_eq!(b.usage().prefilled, second.len() - cached.hot);
    service.stop();

    // A restart: the prefix comes from the cold store, whole pages of it.
    let service = Service::start(home.path(), &model, 2);
    let third = second_turn(&second, &b.tokens(), 3, &more[1..]);
    let c = generate(&service, named("work"), third.clone(), 12);
    let cached = c.usage().cached;
    assert!(cached.cold >= 256 && cached.hot == 0, "{cached:?}");
    assert_eq!(cached.cold % 256, 0);
    service.stop();

    // Whole pages restored, the rest prefilled from the page boundary: the schedule from
    // scratch, bit for bit.
    assert_close(&c, &from_scratch(&model, &third, 12), 0.0);
    // Cut back inside a page, the rest prefills in batches of other shapes than from
    // scratch (as a chat's next turn does): the same tokens, log-probabilities within
    // rounding.
    assert_close(&b, &from_scratch(&model, &second, 12), ROUNDING);
}

/// What a chat front end does: open the session (its whole snapshot comes back, the partial
/// last page included), then send the log plus the new turn.
#[test]
fn a_session_opened_before_its_request_continues_exactly_as_if_never_closed() {
    let model = tiny_model();
    let open = |name: &str| OpenSession {
        name: Some(name.to_string()),
        sampling: SamplingSettings::greedy(),
    };
    // Reference: two turns in one engine, the second from the first's hot cells.
    let reference_home = Home::new();
    let service = Service::start(reference_home.path(), &model, 1);
    let first = service.tokenize(&long_text(2));
    let more = service.tokenize(" And then some more words to read.")[1..].to_vec();
    let a = generate(&service, named("chat"), first.clone(), 12);
    let log: Vec<TokenId> = first.iter().chain(&a.usage().tokens).copied().collect();
    let second: Vec<TokenId> = log.iter().chain(&more).copied().collect();
    let reference = generate(&service, named("chat"), second.clone(), 12);
    service.stop();

    let home = Home::new();
    let service = Service::start(home.path(), &model, 1);
    let (mut req, pending) = request(named("chat"), first.clone(), 12);
    req.progress = true;
    service.handle.submit(req).unwrap();
    let again = pending.collect();
    assert_eq!(again.tokens(), a.tokens());
    // Each prompt chunk without logits reports: a page at a time, then the rest but the
    // last token, which is decoded alone to sample the reply.
    let last = first.len() - 1;
    let mut expected: Vec<(usize, usize)> = (1..)
        .map(|k| k * 256)
        .take_while(|&done| done < last)
        .map(|done| (done, first.len()))
        .collect();
    expected.push((last, first.len()));
    assert_eq!(again.progress, expected);
    assert!(a.progress.is_empty(), "progress nobody asked for");
    let transcript = Transcript {
        messages: vec![kvrun::engine::ChatMessage {
            role: "user".into(),
            content: "hello".into(),
        }],
        ..Transcript::raw()
    };
    service
        .handle
        .save_blocking("chat", transcript.clone())
        .unwrap();
    service.stop();

    let service = Service::start(home.path(), &model, 1);
    let opened = service.handle.open_blocking(open("chat")).unwrap();
    assert_eq!(opened.log, log);
    assert_eq!(opened.transcript, transcript);
    // Everything the log's cache held at the save: all but the last sampled token.
    assert_eq!(opened.cached.hot, 0);
    assert_eq!(opened.cached.total(), log.len() - 1, "{:?}", opened.cached);
    let b = generate(&service, named("chat"), second.clone(), 12);
    assert_eq!(b.usage().cached.hot, log.len() - 1, "{:?}", b.usage());
    assert_eq!(b.usage().prefilled, second.len() - (log.len() - 1));
    assert_close(&b, &reference, 0.0);

    // Fork copies the log under a new name; a taken or bad name is refused by variant.
    service.handle.fork_blocking("chat", "copy").unwrap();
    assert_eq!(
        manifest_json(&home, "copy")["tokens"],
        manifest_json(&home, "chat")["tokens"]
    );
    for to in ["copy", "../x"] {
        let refused = service.handle.fork_blocking("chat", to);
        assert!(
            matches!(refused, Err(ServiceError::Refused(_))),
            "{to}: {refused:?}"
        );
    }
    // Reset empties the log and its cells; the transcript is what the save records.
    service
        .handle
        .reset_blocking("chat", Transcript::raw())
        .unwrap();
    assert_eq!(
        manifest_json(&home, "chat")["tokens"],
        serde_json::json!([])
    );
    let again = service.handle.open_blocking(open("chat")).unwrap();
    assert!(again.log.is_empty() && again.transcript.messages.is_empty());
    service.stop();
}

#[test]
fn an_anonymous_prompt_is_found_by_content_after_a_restart() {
    let model = tiny_model();
    let home = Home::new();
    let service = Service::start(home.path(), &model, 1);
    let first = service.tokenize(&long_text(2));
    let a = generate(&service, ConversationKey::Anonymous, first.clone(), 8);
    let session = a.usage().session.clone();
    assert!(session.starts_with("anon-"), "{session}");
    service.stop();
    let manifest = manifest_json(&home, &session);
    assert_eq!(manifest["unnamed"], true);

    let service = Service::start(home.path(), &model, 1);
    let more = service.tokenize(" A question about it.");
    let second = second_turn(&first, &a.tokens(), 8, &more[1..]);
    let b = generate(&service, ConversationKey::Anonymous, second.clone(), 8);
    assert_eq!(
        b.usage().session,
        session,
        "the same conversation continues"
    );
    assert!(b.usage().cached.cold >= 512, "{:?}", b.usage().cached);
    service.stop();
    assert_close(&b, &from_scratch(&model, &second, 8), 0.0);
}

#[test]
fn conversations_differing_in_one_early_token_share_nothing_after_it() {
    let model = tiny_model();
    let home = Home::new();
    let service = Service::start(home.path(), &model, 2);
    let a_prompt = service.tokenize(&long_text(1));
    let mut b_prompt = a_prompt.clone();
    b_prompt[3] = if b_prompt[3] == 7 { 8 } else { 7 };
    generate(&service, named("a"), a_prompt.clone(), 4);
    let b = generate(&service, named("b"), b_prompt.clone(), 4);
    assert_eq!(b.usage().cached.total(), 3, "{:?}", b.usage().cached);
    assert_eq!(b.usage().prefilled, b_prompt.len() - 3);
    service.stop();
    // After a restart, nothing of `a`'s pages fits `b`'s prompt either.
    let service = Service::start(home.path(), &model, 2);
    let c = generate(&service, named("c"), b_prompt.clone(), 4);
    assert!(c.usage().cached.total() >= 256, "b's own pages are stored");
    let mut d_prompt = a_prompt.clone();
    d_prompt[3] = if a_prompt[3] == 9 { 10 } else { 9 };
    let d = generate(&service, named("d"), d_prompt, 4);
    // Only the three tokens all these prompts begin with (from c's hot cells).
    assert_eq!(d.usage().cached.total(), 3, "{:?}", d.usage().cached);
    service.stop();
    assert_close(&b, &from_scratch(&model, &b_prompt, 4), ROUNDING);
}

#[test]
fn bad_requests_are_refused_with_their_variant() {
    let model = tiny_model();
    let home = Home::new();
    let service = Service::start_with(home.path(), &model, 1, 512);
    let n_ctx = service.handle.info().unwrap().n_ctx;
    let out = generate(&service, ConversationKey::Anonymous, Vec::new(), 4);
    assert_eq!(out.failed, Some(ServiceError::EmptyPrompt));
    let out = generate(&service, ConversationKey::Anonymous, vec![1, 99_999_999], 4);
    assert_eq!(out.failed, Some(ServiceError::BadToken(99_999_999)));
    let out = generate(&service, ConversationKey::Anonymous, vec![1; n_ctx], 4);
    assert_eq!(
        out.failed,
        Some(ServiceError::PromptTooLong {
            tokens: n_ctx,
            n_ctx
        })
    );
    // A session another process holds, and one saved with another model.
    let catalog =
        kvrun::session::SessionCatalog::open(&kvrun::paths::Paths::under(home.path())).unwrap();
    let lock = catalog.lock("held").unwrap();
    let out = generate(&service, named("held"), vec![1, 2, 3], 4);
    assert!(
        matches!(&out.failed, Some(ServiceError::SessionInUse { name, .. }) if name == "held"),
        "{out:?}"
    );
    drop(lock);
    // The engine still serves after refusals.
    let ok = generate(&service, named("held"), vec![1, 2, 3], 4);
    assert_eq!(ok.usage().generated, 4);
    service.stop();
}

#[test]
fn a_session_of_another_model_is_incompatible() {
    let home = Home::new();
    let out = home.run(&[
        "run",
        path_str(&default_model()),
        "--session",
        "gemma",
        "-p",
        "Hi",
        "-n",
        "2",
        "-t",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let service = Service::start(home.path(), &tiny_model(), 1);
    let out = generate(&service, named("gemma"), vec![1, 2, 3], 4);
    assert!(
        matches!(&out.failed, Some(ServiceError::Incompatible { name, .. }) if name == "gemma"),
        "{out:?}"
    );
    service.stop();
}

#[test]
fn cancel_and_a_dropped_receiver_end_the_reply_within_a_token() {
    let model = tiny_model();
    let home = Home::new();
    let service = Service::start(home.path(), &model, 1);
    let prompt = service.tokenize("Count on and on");
    let (req, mut pending) = request(named("c"), prompt.clone(), 10_000);
    service.handle.submit(req).unwrap();
    let mut tokens = 0;
    let usage = loop {
        match pending.replies.blocking_recv().unwrap() {
            Reply::Started(_) | Reply::Progress { .. } => {}
            Reply::Token(_) => {
                tokens += 1;
                if tokens == 3 {
                    pending.cancel.cancel();
                }
            }
            Reply::Done(u) => break u,
            Reply::Failed(e) => panic!("{e}"),
        }
    };
    assert_eq!(usage.finish, FinishReason::Cancelled);
    assert!(usage.generated <= 4, "{usage:?}");
    assert_eq!(tokens, usage.generated);

    // A client that goes away: the engine notices at its next token and moves on.
    let (req, mut pending) = request(named("d"), prompt.clone(), 10_000);
    service.handle.submit(req).unwrap();
    loop {
        if let Reply::Token(_) = pending.replies.blocking_recv().unwrap() {
            break;
        }
    }
    drop(pending);
    let next = generate(&service, named("e"), prompt, 2);
    assert_eq!(next.usage().generated, 2);
    service.stop();
}

#[test]
fn stop_strings_end_the_reply_and_are_never_sent() {
    let model = tiny_model();
    let home = Home::new();
    let service = Service::start(home.path(), &model, 1);
    let prompt = service.tokenize(&long_text(1));
    let free = generate(&service, ConversationKey::Anonymous, prompt.clone(), 24);
    let text = free.text();
    // A stop string taken from the middle of the free reply.
    let chars: Vec<char> = text.chars().collect();
    assert!(chars.len() > 12, "{text:?}");
    let stop: String = chars[8..11].iter().collect();
    let before = &text[..text.find(&stop).unwrap()];
    let (mut req, pending) = request(ConversationKey::Anonymous, prompt, 24);
    req.stop = vec![stop.clone()];
    service.handle.submit(req).unwrap();
    let out = pending.collect();
    assert_eq!(out.usage().finish, FinishReason::StopString);
    assert_eq!(out.text(), before, "stop {stop:?}");
    service.stop();
}

#[test]
fn sliding_window_continuations_inside_the_reply_and_far_back_are_correct() {
    let model = default_model();
    let home = Home::new();
    let service = Service::start(home.path(), &model, 1);
    let first = service.tokenize(&long_text(4));
    assert!(first.len() > 1100, "{}", first.len());
    let a = generate(&service, named("swa"), first.clone(), 16);
    let more = service.tokenize(" So, in short?");
    // The common prefix ends inside the last reply: the window's cells are still there.
    let near = second_turn(&first, &a.tokens(), 5, &more[1..]);
    let b = generate(&service, named("swa"), near.clone(), 8);
    assert_eq!(
        b.usage().cached.hot,
        first.len() + 5,
        "{:?}",
        b.usage().cached
    );
    // Cut back further than the window reaches. llama.cpp keeps a full-size window cache
    // (`swa_full`), so the cells are still there while the context has room, and the cut
    // is valid (the engine checks `seq_pos_min` before it relies on that).
    let far = second_turn(&first[..first.len() - 1000], &[], 0, &more[1..]);
    let c = generate(&service, named("swa"), far.clone(), 8);
    assert_eq!(
        c.usage().cached.hot,
        first.len() - 1000,
        "{:?}",
        c.usage().cached
    );
    service.stop();
    assert_close(&b, &from_scratch(&model, &near, 8), SWA_BATCH_SHAPES);
    assert_close(&c, &from_scratch(&model, &far, 8), SWA_BATCH_SHAPES);
}

#[test]
fn two_conversations_decoding_together_get_the_tokens_they_get_alone() {
    // Gemma, not the tiny model: random weights leave near ties that any rounding flips.
    let model = default_model();
    let home = Home::new();
    let service = Service::start(home.path(), &model, 2);
    let a_prompt = service.tokenize(&long_text(1));
    let b_prompt = service.tokenize("A short prompt of another conversation");
    // Both in flight at once: b's prompt prefills while a generates, in the same batches.
    let (req_a, pending_a) = request(named("a"), a_prompt.clone(), 24);
    let (req_b, pending_b) = request(named("b"), b_prompt.clone(), 24);
    service.handle.submit(req_a).unwrap();
    service.handle.submit(req_b).unwrap();
    let (a, b) = (pending_a.collect(), pending_b.collect());
    // Second turns, interleaved the other way round.
    let more = service.tokenize(" and more");
    let a2_prompt = second_turn(&a_prompt, &a.tokens(), 24, &more[1..]);
    let b2_prompt = second_turn(&b_prompt, &b.tokens(), 24, &more[1..]);
    let (req_b2, pending_b2) = request(named("b"), b2_prompt.clone(), 16);
    let (req_a2, pending_a2) = request(named("a"), a2_prompt.clone(), 16);
    service.handle.submit(req_b2).unwrap();
    service.handle.submit(req_a2).unwrap();
    let (b2, a2) = (pending_b2.collect(), pending_a2.collect());
    assert!(a2.usage().cached.hot > a_prompt.len(), "{:?}", a2.usage());
    assert!(b2.usage().cached.hot > b_prompt.len(), "{:?}", b2.usage());
    let stats = service.handle_stats();
    assert_eq!(stats.requests, 4);
    assert_eq!(stats.sessions.len(), 2);
    service.stop();
    for (out, prompt, n) in [
        (&a, &a_prompt, 24),
        (&b, &b_prompt, 24),
        (&a2, &a2_prompt, 16),
        (&b2, &b2_prompt, 16),
    ] {
        assert_close(out, &from_scratch(&model, prompt, n), BATCHED);
    }
}

impl Service {
    fn handle_stats(&self) -> kvrun::service::ServiceStats {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(self.handle.stats())
            .unwrap()
    }
}

#[test]
fn a_full_queue_refuses_and_shutdown_cancels_what_runs() {
    let model = tiny_model();
    let home = Home::new();
    let service = Service::start_full(home.path(), &model, 1, 4096, Default::default(), 1);
    let prompt = service.tokenize("Go on and on");
    let (first, mut running) = request(named("long"), prompt.clone(), 100_000);
    let (second, waiting) = request(named("next"), prompt.clone(), 100_000);
    let (third, _) = request(named("third"), prompt.clone(), 4);
    service.handle.submit(first).unwrap();
    service.handle.submit(second).unwrap();
    assert!(matches!(
        service.handle.submit(third),
        Err(ServiceError::QueueFull(2))
    ));
    loop {
        if let Reply::Token(_) = running.replies.blocking_recv().unwrap() {
            break;
        }
    }
    service.handle.shutdown();
    // More tokens may come before the shutdown lands; the reply ends with Done.
    let usage = loop {
        match running.replies.blocking_recv().unwrap() {
            Reply::Token(_) => {}
            Reply::Done(usage) => break usage,
            other => panic!("unexpected reply after a token: {other:?}"),
        }
    };
    assert_eq!(usage.finish, FinishReason::Cancelled);
    let waited = waiting.collect();
    assert!(
        waited.failed == Some(ServiceError::ShuttingDown)
            || waited.done.as_ref().map(|u| u.finish) == Some(FinishReason::Cancelled),
        "{waited:?}"
    );
    service.stop();
    // The cancelled conversation was saved, with its tokens so far.
    let manifest = manifest_json(&home, "long");
    let saved = manifest["tokens"].as_array().unwrap().len();
    assert_eq!(saved, prompt.len() + usage.generated);
    assert_eq!(manifest["interrupted"], true);
}

#[test]
fn the_cold_budget_collects_unnamed_sessions_and_keeps_named_and_pinned_ones() {
    let model = tiny_model();
    let home = Home::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // Without a budget: an unnamed session, then pinned.
    let service = Service::start(home.path(), &model, 1);
    let pinned = generate(
        &service,
        ConversationKey::Anonymous,
        service.tokenize("Pin me"),
        4,
    );
    let pinned_name = pinned.usage().session.clone();
    rt.block_on(service.handle.pin_session(&pinned_name, true))
        .unwrap();
    service.stop();
    assert_eq!(manifest_json(&home, &pinned_name)["pinned"], true);

    // Over a 1-byte budget, every unnamed session that is not pinned goes after its reply.
    let tiers = kvrun::settings::TierSettings {
        cold_budget: Some(1),
        ..Default::default()
    };
    let service = Service::start_full(home.path(), &model, 1, 4096, tiers, 4);
    generate(&service, named("kept"), service.tokenize(&long_text(1)), 4);
    let anon = generate(
        &service,
        ConversationKey::Anonymous,
        service.tokenize("Drop me"),
        4,
    );
    let stats = service.handle_stats();
    let mut names: Vec<&str> = stats.sessions.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(names, vec![pinned_name.as_str(), "kept"], "{names:?}");
    assert!(!names.contains(&anon.usage().session.as_str()));
    assert!(stats.cold.used > 1 && stats.cold.budget == Some(1));
    // Removing a named session is explicit.
    rt.block_on(service.handle.remove_session("kept")).unwrap();
    assert_eq!(service.handle_stats().sessions.len(), 1);
    service.stop();
    assert!(!home.path().join("sessions").join("kept").exists());
}

/// An agent's second run shares its first run's system prompt and tools, then says
/// something else; by then the first conversation has moved on far past the window. On a
/// sliding-window model the shared prefix must still come back from pages (after a
/// restart: from disk), which needs the window rows of the earlier pages too.
#[test]
fn a_shared_prefix_far_behind_another_conversations_end_is_restored_from_pages() {
    let model = default_model();
    let home = Home::new();
    let service = Service::start(home.path(), &model, 1);
    let shared = service.tokenize(&long_text(4));
    assert!(shared.len() > 1100, "{}", shared.len());
    let ask = |text: &str| {
        let mut prompt = shared.clone();
        prompt.extend_from_slice(&service.tokenize(text)[1..]);
        prompt
    };
    let first = ask(" First question: what about the apples?");
    let a = generate(&service, named("run-1"), first.clone(), 16);
    // The first run goes on far past the window after the shared prefix.
    let onward = second_turn(
        &first,
        &a.tokens(),
        16,
        &service.tokenize(&long_text(2))[1..],
    );
    let a2 = generate(&service, named("run-1"), onward.clone(), 4);
    assert!(a2.usage().cached.hot > first.len(), "{:?}", a2.usage());
    let second = ask(" Second question: and the pears?");
    service.stop();

    let service = Service::start(home.path(), &model, 1);
    let b = generate(&service, named("run-2"), second.clone(), 8);
    let cached = b.usage().cached;
    let boundary = shared.len() / 256 * 256;
    assert_eq!(cached.cold + cached.warm, boundary, "{cached:?}");
    service.stop();
    assert_close(&b, &from_scratch(&model, &second, 8), SWA_BATCH_SHAPES);
}
