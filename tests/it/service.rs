//! The service engine driven over its protocol, on real llama.cpp: one conversation at a
//! time (exactness against `kvrun run`, restarts, sessions found by content, refusals,
//! cancel and stop strings). `service_many.rs` has many conversations at once.

use crate::common::service::*;
use crate::common::*;
use kvrun::llama::TokenId;
use kvrun::service::handle::OpenSession;
use kvrun::service::protocol::{ConversationKey, FinishReason, Reply, ServiceError, Transcript};
use kvrun::settings::SamplingSettings;

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
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let prompt = service.tokenize(&text);
    let out = generate(&service, ConversationKey::Anonymous, prompt.clone(), 24);
    let usage = out.usage();
    assert_eq!(usage.prompt_tokens, prompt.len());
    assert_eq!(usage.finish, FinishReason::MaxTokens, "{usage:?}");
    let expected: Vec<TokenId> = tokens(&run).into_iter().map(|t| t as TokenId).collect();
    assert_eq!(out.tokens(), expected);
    assert_eq!(out.logprobs(), logprobs(&run));
    service.stop().unwrap();
}

/// The same prompt from scratch in a fresh home: what every cached variant must equal.
#[test]
fn a_conversation_continues_from_its_hot_cells_and_after_a_restart_from_the_store() {
    let model = tiny_model();
    let home = Home::new();
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(2)
        .start()
        .unwrap();
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
    service.stop().unwrap();

    // A restart: the prefix comes from the cold store, to the token (the session's own
    // save reaches into its last, partial page and the reply).
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(2)
        .start()
        .unwrap();
    let third = second_turn(&second, &b.tokens(), 3, &more[1..]);
    let c = generate(&service, named("work"), third.clone(), 12);
    let cached = c.usage().cached;
    assert_eq!(
        (cached.hot, cached.cold),
        (0, second.len() + 3),
        "{cached:?}"
    );
    service.stop().unwrap();

    // Bit for bit what the conversation computes when the server never stops.
    let fresh = Home::new();
    let service = ServiceHarness::new(fresh.path(), &model)
        .with_parallel(2)
        .start()
        .unwrap();
    generate(&service, named("work"), first, 12);
    generate(&service, named("work"), second.clone(), 12);
    let uninterrupted = generate(&service, named("work"), third, 12);
    assert_eq!(uninterrupted.usage().cached.hot, c.usage().cached.cold);
    service.stop().unwrap();
    assert_close(&c, &uninterrupted, 0.0);
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
    let service = ServiceHarness::new(reference_home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let first = service.tokenize(&long_text(2));
    let more = service.tokenize(" And then some more words to read.")[1..].to_vec();
    let a = generate(&service, named("chat"), first.clone(), 12);
    let log: Vec<TokenId> = first.iter().chain(&a.usage().tokens).copied().collect();
    let second: Vec<TokenId> = log.iter().chain(&more).copied().collect();
    let reference = generate(&service, named("chat"), second.clone(), 12);
    service.stop().unwrap();

    let home = Home::new();
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let (mut req, pending) = request(named("chat"), first.clone(), 12);
    req.progress = true;
    service.handle().submit(req).unwrap();
    let again = pending.collect();
    assert_eq!(again.tokens(), a.tokens());
    // Each prompt chunk without logits reports: a batch (two pages) at a time, then the
    // rest but the last token, which is decoded alone to sample the reply.
    let last = first.len() - 1;
    let mut expected: Vec<(usize, usize)> = (1..)
        .map(|k| k * kvrun::settings::DEFAULT_BATCH_SIZE as usize)
        .take_while(|&done| done < last)
        .map(|done| (done, first.len()))
        .collect();
    expected.push((last, first.len()));
    assert_eq!(again.progress, expected);
    assert!(a.progress.is_empty(), "progress nobody asked for");
    let transcript = Transcript {
        messages: vec![kvrun::llama::ChatMessage {
            role: "user".into(),
            content: "hello".into(),
        }],
        ..Transcript::raw()
    };
    service
        .handle()
        .save_blocking("chat", transcript.clone())
        .unwrap();
    service.stop().unwrap();

    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let opened = service.handle().open_blocking(open("chat")).unwrap();
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
    service.handle().fork_blocking("chat", "copy").unwrap();
    assert_eq!(
        manifest_json(&home, "copy")["tokens"],
        manifest_json(&home, "chat")["tokens"]
    );
    for to in ["copy", "../x"] {
        let refused = service.handle().fork_blocking("chat", to);
        assert!(
            matches!(refused, Err(ServiceError::Refused(_))),
            "{to}: {refused:?}"
        );
    }
    // Reset empties the log and its cells; the transcript is what the save records.
    service
        .handle()
        .reset_blocking("chat", Transcript::raw())
        .unwrap();
    assert_eq!(
        manifest_json(&home, "chat")["tokens"],
        serde_json::json!([])
    );
    let again = service.handle().open_blocking(open("chat")).unwrap();
    assert!(again.log.is_empty() && again.transcript.messages.is_empty());
    service.stop().unwrap();
}

#[test]
fn an_anonymous_prompt_is_found_by_content_after_a_restart() {
    let model = tiny_model();
    let home = Home::new();
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let first = service.tokenize(&long_text(2));
    let a = generate(&service, ConversationKey::Anonymous, first.clone(), 8);
    let session = a.usage().session.clone();
    assert!(session.starts_with("anon-"), "{session}");
    service.stop().unwrap();
    let manifest = manifest_json(&home, &session);
    assert_eq!(manifest["unnamed"], true);

    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let more = service.tokenize(" A question about it.");
    let second = second_turn(&first, &a.tokens(), 8, &more[1..]);
    let b = generate(&service, ConversationKey::Anonymous, second.clone(), 8);
    assert_eq!(
        b.usage().session,
        session,
        "the same conversation continues"
    );
    assert!(b.usage().cached.cold >= 512, "{:?}", b.usage().cached);
    service.stop().unwrap();

    // Bit for bit what the conversation computes when the server never stops.
    let fresh = Home::new();
    let service = ServiceHarness::new(fresh.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    generate(&service, ConversationKey::Anonymous, first, 8);
    let uninterrupted = generate(&service, ConversationKey::Anonymous, second, 8);
    service.stop().unwrap();
    assert_eq!(uninterrupted.usage().cached.hot, b.usage().cached.cold);
    assert_close(&b, &uninterrupted, 0.0);
}

#[test]
fn conversations_differing_in_one_early_token_share_nothing_after_it() {
    let model = tiny_model();
    let home = Home::new();
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(2)
        .start()
        .unwrap();
    let a_prompt = service.tokenize(&long_text(1));
    let mut b_prompt = a_prompt.clone();
    b_prompt[3] = if b_prompt[3] == 7 { 8 } else { 7 };
    generate(&service, named("a"), a_prompt.clone(), 4);
    let b = generate(&service, named("b"), b_prompt.clone(), 4);
    assert_eq!(b.usage().cached.total(), 3, "{:?}", b.usage().cached);
    assert_eq!(b.usage().prefilled, b_prompt.len() - 3);
    service.stop().unwrap();
    // After a restart, nothing of `a`'s pages fits `b`'s prompt either.
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(2)
        .start()
        .unwrap();
    let c = generate(&service, named("c"), b_prompt.clone(), 4);
    assert!(c.usage().cached.total() >= 256, "b's own pages are stored");
    let mut d_prompt = a_prompt.clone();
    d_prompt[3] = if a_prompt[3] == 9 { 10 } else { 9 };
    let d = generate(&service, named("d"), d_prompt, 4);
    // Only the three tokens all these prompts begin with (from c's hot cells).
    assert_eq!(d.usage().cached.total(), 3, "{:?}", d.usage().cached);
    service.stop().unwrap();
    assert_close(&b, &from_scratch(&model, &b_prompt, 4), ROUNDING);
}

#[test]
fn bad_requests_are_refused_with_their_variant() {
    let model = tiny_model();
    let home = Home::new();
    let service = ServiceHarness::new(home.path(), &model)
        .with_ctx_size(512)
        .start()
        .unwrap();
    let n_ctx = service.handle().info().unwrap().n_ctx;
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
    service.stop().unwrap();
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
    let service = ServiceHarness::new(home.path(), &tiny_model())
        .with_parallel(1)
        .start()
        .unwrap();
    let out = generate(&service, named("gemma"), vec![1, 2, 3], 4);
    assert!(
        matches!(&out.failed, Some(ServiceError::Incompatible { name, .. }) if name == "gemma"),
        "{out:?}"
    );
    service.stop().unwrap();
}

#[test]
fn cancel_and_a_dropped_receiver_end_the_reply_within_a_token() {
    let model = tiny_model();
    let home = Home::new();
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let prompt = service.tokenize("Count on and on");
    let (req, mut pending) = request(named("c"), prompt.clone(), 10_000);
    service.handle().submit(req).unwrap();
    let mut tokens = 0;
    // Tokens the engine had sent when the cancel was made: those received, and those
    // waiting in the channel (this thread may be scheduled late on a busy machine, and the
    // engine decodes on meanwhile). After the cancel at most one more may come.
    let mut sent_at_cancel = None;
    let usage = loop {
        match pending.replies.blocking_recv().unwrap() {
            Reply::Started(_) | Reply::Progress { .. } => {}
            Reply::Token(_) => {
                tokens += 1;
                if tokens == 3 {
                    pending.cancel.cancel();
                    let queued =
                        std::iter::from_fn(|| pending.replies.try_recv().ok()).collect::<Vec<_>>();
                    let queued_tokens = queued
                        .iter()
                        .filter(|r| matches!(r, Reply::Token(_)))
                        .count();
                    tokens += queued_tokens;
                    sent_at_cancel = Some(3 + queued_tokens);
                    if let Some(Reply::Done(u)) = queued.into_iter().last() {
                        break u;
                    }
                }
            }
            Reply::Done(u) => break u,
            Reply::Failed(e) => panic!("{e}"),
        }
    };
    assert_eq!(usage.finish, FinishReason::Cancelled);
    let sent_at_cancel = sent_at_cancel.expect("the reply ended before its third token");
    assert!(usage.generated <= sent_at_cancel + 1, "{usage:?}");
    assert!(usage.generated < 10_000, "{usage:?}");
    assert_eq!(tokens, usage.generated);

    // A client that goes away: the engine notices at its next token and moves on.
    let (req, mut pending) = request(named("d"), prompt.clone(), 10_000);
    service.handle().submit(req).unwrap();
    loop {
        if let Reply::Token(_) = pending.replies.blocking_recv().unwrap() {
            break;
        }
    }
    drop(pending);
    let next = generate(&service, named("e"), prompt, 2);
    assert_eq!(next.usage().generated, 2);
    service.stop().unwrap();
}

#[test]
fn stop_strings_end_the_reply_and_are_never_sent() {
    let model = tiny_model();
    let home = Home::new();
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let prompt = service.tokenize(&long_text(1));
    let free = generate(&service, ConversationKey::Anonymous, prompt.clone(), 24);
    let text = free.text();
    // A stop string taken from the middle of the free reply.
    let chars: Vec<char> = text.chars().collect();
    assert!(chars.len() > 12, "{text:?}");
    let stop: String = chars[8..11].iter().collect();
    let before = &text[..text.find(&stop).unwrap()];
    let (mut req, pending) = request(ConversationKey::Anonymous, prompt, 24);
    req.ask.stop = vec![stop.clone()];
    service.handle().submit(req).unwrap();
    let out = pending.collect();
    assert_eq!(out.usage().finish, FinishReason::StopString);
    assert_eq!(out.text(), before, "stop {stop:?}");
    service.stop().unwrap();
}
