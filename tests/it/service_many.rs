//! The service engine with many conversations at once, on real llama.cpp: the tiny model,
//! and the default model (Gemma 3, sliding-window attention) where the window matters:
//! batched decoding, the queue, the cold budget and prefixes shared across conversations.

use crate::common::service::*;
use crate::common::*;
use kvrun::service::protocol::{ConversationKey, FinishReason, Reply, ServiceError};

#[test]
fn sliding_window_continuations_inside_the_reply_and_far_back_are_correct() {
    let model = default_model();
    let home = Home::new();
    let service = ServiceHarness::builder(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
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
    // Cut back further than the window reaches. The window is laid out afresh at page
    // boundaries (kv::window), which drops the cells behind it, so the engine's
    // `seq_pos_min` check refuses the cut and the prefix comes back from the stored pages:
    // whole pages, the rest prefilled.
    let far = second_turn(&first[..first.len() - 1000], &[], 0, &more[1..]);
    let c = generate(&service, named("swa"), far.clone(), 8);
    let cached = c.usage().cached;
    assert_eq!(
        cached.hot + cached.warm + cached.cold,
        (first.len() - 1000) / 256 * 256,
        "{cached:?}"
    );
    service.stop().unwrap();
    assert_close(&b, &from_scratch(&model, &near, 8), SWA_BATCH_SHAPES);
    assert_close(&c, &from_scratch(&model, &far, 8), SWA_BATCH_SHAPES);
}

#[test]
fn two_conversations_decoding_together_get_the_tokens_they_get_alone() {
    // Gemma, not the tiny model: random weights leave near ties that any rounding flips.
    let model = default_model();
    let home = Home::new();
    let service = ServiceHarness::builder(home.path(), &model)
        .with_parallel(2)
        .start()
        .unwrap();
    let a_prompt = service.tokenize(&long_text(1));
    let b_prompt = service.tokenize("A short prompt of another conversation");
    // Both in flight at once: b's prompt prefills while a generates, in the same batches.
    let (req_a, pending_a) = request(named("a"), a_prompt.clone(), 24);
    let (req_b, pending_b) = request(named("b"), b_prompt.clone(), 24);
    service.handle().submit(req_a).unwrap();
    service.handle().submit(req_b).unwrap();
    let (a, b) = (pending_a.collect(), pending_b.collect());
    // Second turns, interleaved the other way round.
    let more = service.tokenize(" and more");
    let a2_prompt = second_turn(&a_prompt, &a.tokens(), 24, &more[1..]);
    let b2_prompt = second_turn(&b_prompt, &b.tokens(), 24, &more[1..]);
    let (req_b2, pending_b2) = request(named("b"), b2_prompt.clone(), 16);
    let (req_a2, pending_a2) = request(named("a"), a2_prompt.clone(), 16);
    service.handle().submit(req_b2).unwrap();
    service.handle().submit(req_a2).unwrap();
    let (b2, a2) = (pending_b2.collect(), pending_a2.collect());
    assert!(a2.usage().cached.hot > a_prompt.len(), "{:?}", a2.usage());
    assert!(b2.usage().cached.hot > b_prompt.len(), "{:?}", b2.usage());
    let stats = service.stats().unwrap();
    assert_eq!(stats.requests, 4);
    assert_eq!(stats.sessions.len(), 2);
    service.stop().unwrap();
    for (out, prompt, n) in [
        (&a, &a_prompt, 24),
        (&b, &b_prompt, 24),
        (&a2, &a2_prompt, 16),
        (&b2, &b2_prompt, 16),
    ] {
        assert_close(out, &from_scratch(&model, prompt, n), BATCHED);
    }
}

/// What kvrun promises a greedy request beside others (README, "Exactness"): the tokens
/// it gets alone, except where rounding flips a near tie, and log-probabilities within
/// [`BATCHED`]. Not the same bits: llama.cpp's batched kernels are not batch-invariant.
#[test]
fn a_request_alone_and_in_a_batch_of_four_differ_at_most_by_rounding() {
    let model = chat_model();
    let home = Home::new();
    let service = ServiceHarness::builder(home.path(), &model)
        .with_parallel(4)
        .start()
        .unwrap();
    let prompts: Vec<_> = [
        "What is 1 + 2? Answer, then explain.",
        "Name a planet and say one thing about it.",
        "Write the first line of a poem about rain.",
        "List three things found in a kitchen.",
    ]
    .iter()
    .map(|t| service.tokenize(t))
    .collect();
    let pending: Vec<_> = prompts
        .iter()
        .enumerate()
        .map(|(i, prompt)| {
            let (req, pending) = request(named(&format!("c{i}")), prompt.clone(), 24);
            service.handle().submit(req).unwrap();
            pending
        })
        .collect();
    let batched: Vec<Outcome> = pending.into_iter().map(Pending::collect).collect();
    service.stop().unwrap();
    for (out, prompt) in batched.iter().zip(&prompts) {
        let alone = from_scratch(&model, prompt, 24);
        assert_close(out, &alone, BATCHED);
    }
}

#[test]
fn a_full_queue_refuses_and_shutdown_cancels_what_runs() {
    let model = tiny_model();
    let home = Home::new();
    let service = ServiceHarness::builder(home.path(), &model)
        .with_max_queue(1)
        .start()
        .unwrap();
    let prompt = service.tokenize("Go on and on");
    let (first, mut running) = request(named("long"), prompt.clone(), 100_000);
    let (second, waiting) = request(named("next"), prompt.clone(), 100_000);
    let (third, _) = request(named("third"), prompt.clone(), 4);
    service.handle().submit(first).unwrap();
    service.handle().submit(second).unwrap();
    assert!(matches!(
        service.handle().submit(third),
        Err(ServiceError::QueueFull(2))
    ));
    loop {
        if let Reply::Token(_) = running.replies.blocking_recv().unwrap() {
            break;
        }
    }
    service.handle().shutdown();
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
    service.stop().unwrap();
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
    let service = ServiceHarness::builder(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let pinned = generate(
        &service,
        ConversationKey::Anonymous,
        service.tokenize("Pin me"),
        4,
    );
    let pinned_name = pinned.usage().session.clone();
    rt.block_on(service.handle().pin_session(&pinned_name, true))
        .unwrap();
    service.stop().unwrap();
    assert_eq!(manifest_json(&home, &pinned_name)["pinned"], true);

    // Over a 1-byte budget, every unnamed session that is not pinned goes after its reply.
    let tiers = kvrun::settings::TierSettings {
        cold_budget: Some(1),
        ..Default::default()
    };
    let service = ServiceHarness::builder(home.path(), &model)
        .with_tiers(tiers)
        .with_max_queue(4)
        .start()
        .unwrap();
    generate(&service, named("kept"), service.tokenize(&long_text(1)), 4);
    let anon = generate(
        &service,
        ConversationKey::Anonymous,
        service.tokenize("Drop me"),
        4,
    );
    let stats = service.stats().unwrap();
    let mut names: Vec<&str> = stats.sessions.iter().map(|s| s.name.as_str()).collect();
    names.sort();
    assert_eq!(names, vec![pinned_name.as_str(), "kept"], "{names:?}");
    assert!(!names.contains(&anon.usage().session.as_str()));
    assert!(stats.cold.used > 1 && stats.cold.budget == Some(1));
    // Removing a named session is explicit.
    rt.block_on(service.handle().remove_session("kept"))
        .unwrap();
    assert_eq!(service.stats().unwrap().sessions.len(), 1);
    service.stop().unwrap();
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
    let service = ServiceHarness::builder(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
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
    service.stop().unwrap();

    let service = ServiceHarness::builder(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let b = generate(&service, named("run-2"), second.clone(), 8);
    let cached = b.usage().cached;
    // To the token: the page where the prompts part comes from the first run's save.
    assert!(!shared.len().is_multiple_of(256), "{}", shared.len());
    assert_eq!(cached.cold + cached.warm, shared.len(), "{cached:?}");
    service.stop().unwrap();
    assert_close(&b, &from_scratch(&model, &second, 8), SWA_BATCH_SHAPES);
}

/// Reuse to the token, across conversations and a restart: a prompt that parts from a saved
/// conversation inside a page gets that page's cells up to the parting point (cut there),
/// not only the whole pages before it; the answer is the from-scratch answer, bit for bit.
/// With the first conversation's save gone, only whole pages (none here) could serve.
#[test]
fn a_prompt_parting_inside_a_page_reuses_its_cells_to_the_token() {
    let model = tiny_model();
    let home = Home::new();
    let service = ServiceHarness::builder(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let shared = service.tokenize(&long_text(1));
    let ask = |text: &str| {
        let mut prompt = shared.clone();
        prompt.extend_from_slice(&service.tokenize(text)[1..]);
        prompt
    };
    let first = ask(" First question: what about the apples?");
    let second = ask(" Second question: and the pears?");
    let parting = second
        .iter()
        .zip(&first)
        .take_while(|(a, b)| a == b)
        .count();
    assert!(parting > 256 && parting % 256 != 0, "{parting}");
    generate(&service, named("one"), first.clone(), 8);
    service.stop().unwrap();

    let service = ServiceHarness::builder(home.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let b = generate(&service, named("two"), second.clone(), 8);
    let cached = b.usage().cached;
    assert_eq!(cached.cold + cached.warm, parting, "{cached:?}");
    // The other conversation's own turn comes back to the token as well.
    let again = generate(&service, named("three"), first.clone(), 8);
    assert_eq!(
        again.usage().cached.total(),
        first.len() - 1,
        "{:?}",
        again.usage()
    );
    service.stop().unwrap();
    // b prefills from inside a batch of its from-scratch schedule: other batch shapes.
    assert_close(&b, &from_scratch(&model, &second, 8), ROUNDING);
    assert_close(&again, &from_scratch(&model, &first, 8), 0.0);
}
