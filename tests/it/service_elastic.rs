//! The elastic hot tier (`--ctx-size auto`) on real llama.cpp and the tiny model: a context
//! that grows mid-conversation (at an admission, and in the middle of a reply) gives the
//! tokens and log-probabilities a context of the ceiling's size gives, and shrinks back to
//! its floor once its conversations idled out of it. A conversation admitted while another
//! decodes grows the context off the engine thread, and both get the tokens they get alone.

use std::time::{Duration, Instant};

use crate::common::service::{assert_close, from_scratch, named, request, BATCHED};
use crate::common::*;
use kvrun::llama::TokenId;
use kvrun::service::harness::ServiceHarness;
use kvrun::service::protocol::{
    Ask, CancelToken, ConversationKey, FinishReason, Reply, Request, Usage,
};
use kvrun::settings::TierSettings;

const CEILING: u32 = 4096;
/// Two decoding sequences of two pages each.
const FLOOR: u64 = 1024;

/// An engine on the tiny model with room for two sequences: a fixed context of `CEILING`
/// cells, or an elastic one that grows to it.
fn start(home: &std::path::Path, elastic: bool, hot_idle: Option<Duration>) -> ServiceHarness {
    let tiers = TierSettings {
        hot_idle,
        ..Default::default()
    };
    let harness = ServiceHarness::new(home, &tiny_model())
        .with_parallel(2)
        .with_ctx_size(CEILING)
        .with_tiers(tiers)
        .with_max_queue(4);
    match elastic {
        true => harness.with_elastic(CEILING),
        false => harness,
    }
    .start()
    .unwrap()
}

/// One reply: its tokens, their log-probabilities, and its usage.
#[derive(Debug)]
struct Turn {
    tokens: Vec<TokenId>,
    logprobs: Vec<f32>,
    usage: Usage,
}

fn generate(engine: &ServiceHarness, name: &str, prompt: &[TokenId], max_tokens: usize) -> Turn {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    engine
        .handle()
        .submit(Request {
            id: 0,
            ask: Ask::new(
                ConversationKey::Named(name.into()),
                prompt.to_vec(),
                max_tokens,
            )
            .with_logprobs(Some(2)),
            transcript: None,
            progress: false,
            cancel: CancelToken::new(),
            replies: tx,
            received: Instant::now(),
            save_before_done: false,
        })
        .unwrap();
    let (mut tokens, mut logprobs) = (Vec::new(), Vec::new());
    loop {
        match rx.blocking_recv().expect("the engine dropped the request") {
            Reply::Token(t) => {
                tokens.push(t.id);
                logprobs.push(t.logprob.unwrap().logprob);
            }
            Reply::Done(usage) => {
                return Turn {
                    tokens,
                    logprobs,
                    usage,
                }
            }
            Reply::Failed(e) => panic!("the request failed: {e}"),
            Reply::Started(_) | Reply::Progress { .. } => {}
        }
    }
}

/// The conversation: "a" generates past the floor mid-reply, "b" arrives needing more than
/// the context has while "a" is hot and idle, then "a" continues from its hot cells.
fn conversation(engine: &ServiceHarness) -> Vec<Turn> {
    let model = engine.model();
    let text = long_text(4);
    let first: Vec<TokenId> = model.tokenize_prompt(&text)[..300].to_vec();
    let other: Vec<TokenId> =
        model.tokenize_prompt(&format!("Another one.\n{text}"))[..1000].to_vec();
    let a1 = generate(engine, "a", &first, 760);
    let b = generate(engine, "b", &other, 16);
    let mut next = first.clone();
    next.extend_from_slice(&a1.tokens);
    next.extend_from_slice(&model.tokenize_prompt("And then the cache")[1..]);
    let a2 = generate(engine, "a", &next, 16);
    vec![a1, b, a2]
}

#[test]
fn growth_keeps_outputs_identical_and_an_idle_context_shrinks_to_its_floor() {
    let fixed_home = Home::new();
    let fixed = start(fixed_home.path(), false, None);
    let reference = conversation(&fixed);
    let stats = fixed.stats().unwrap();
    assert_eq!(
        (stats.hot_cells, stats.ctx_ceiling, stats.ctx_resizes),
        (4096, 4096, 0)
    );
    fixed.stop().unwrap();

    let home = Home::new();
    let idle = Duration::from_secs(1);
    let elastic = start(home.path(), true, Some(idle));
    assert_eq!(elastic.handle().info().unwrap().n_ctx, CEILING as usize);
    let before = elastic.stats().unwrap();
    assert_eq!((before.hot_cells, before.ctx_ceiling), (FLOOR, 4096));
    let turns = conversation(&elastic);
    assert_eq!(
        turns[0].usage.finish,
        FinishReason::MaxTokens,
        "{:?}",
        turns[0].usage
    );
    assert_eq!(
        turns[2].usage.cached.hot,
        turns[0].usage.prompt_tokens + 759
    );
    for (i, (ours, theirs)) in turns.iter().zip(&reference).enumerate() {
        assert_eq!(ours.tokens, theirs.tokens, "turn {i}: tokens");
        assert_eq!(
            ours.logprobs, theirs.logprobs,
            "turn {i}: log-probabilities"
        );
    }
    // Mid-reply from 1024 to 2048 cells, at b's admission to 4096.
    let grown = elastic.stats().unwrap();
    assert_eq!((grown.hot_cells, grown.ctx_resizes), (4096, 2), "{grown:?}");
    // The pause's phases are its parts: a context was made on the builder thread, and the
    // pause is the wait for it and the move, never more.
    let p = grown.ctx_last_resize_phases;
    assert!(p.build_ms > 0.0, "{p:?}");
    let parts = p.capture_ms + p.wait_ms + p.load_ms;
    assert!(
        parts <= grown.ctx_last_resize_ms + 1e-6,
        "{p:?} of {grown:?}"
    );

    // Stats polls are commands: the engine counts idle time only between them.
    let deadline = Instant::now() + Duration::from_secs(60);
    let shrunk = loop {
        std::thread::sleep(Duration::from_millis(1500));
        let s = elastic.stats().unwrap();
        if s.hot_cells == FLOOR || Instant::now() > deadline {
            break s;
        }
    };
    assert_eq!(
        (shrunk.hot_cells, shrunk.hot_cells_used),
        (FLOOR, 0),
        "{shrunk:?}"
    );
    assert_eq!(shrunk.ctx_resizes, 3);
    // Back from the pages in RAM, into a context grown again.
    let model = elastic.handle().model().unwrap();
    let mut again: Vec<TokenId> = model.tokenize_prompt(&long_text(4))[..300].to_vec();
    again.extend_from_slice(&turns[0].tokens);
    let back = generate(&elastic, "a", &again, 4);
    // (Pages from RAM; the partial last page, which the warm tier does not keep, from disk.)
    let cached = back.usage.cached;
    assert!(cached.hot == 0 && cached.warm >= 768, "{:?}", back.usage);
    assert!(cached.warm + cached.cold >= 1024, "{:?}", back.usage);
    assert!(elastic.stats().unwrap().hot_cells > FLOOR);
    elastic.stop().unwrap();
}

#[test]
fn a_conversation_admitted_while_another_decodes_grows_the_context_beside_it() {
    // Gemma, not the tiny model: random weights leave near ties that batching flips.
    let model = default_model();
    let home = Home::new();
    let service = ServiceHarness::new(home.path(), &model)
        .with_parallel(2)
        .with_elastic(CEILING)
        .start()
        .unwrap();
    let floor = service.stats().unwrap().hot_cells;
    assert_eq!(floor, FLOOR);
    let a_prompt = service.tokenize(&long_text(1));
    let b_prompt = service.tokenize(&format!("Another one.\n{}", long_text(6)))[..1400].to_vec();
    assert!(
        a_prompt.len() + 1400 > FLOOR as usize,
        "b must need a larger context"
    );
    // b arrives while a is in flight: it begins in the cells there are, while the larger
    // context is made on the builder thread, and moves into it with a.
    let (req_a, pending_a) = request(named("a"), a_prompt.clone(), 48);
    let (req_b, pending_b) = request(named("b"), b_prompt.clone(), 16);
    service.handle().submit(req_a).unwrap();
    service.handle().submit(req_b).unwrap();
    let (a, b) = (pending_a.collect(), pending_b.collect());
    let stats = service.stats().unwrap();
    assert_eq!((stats.hot_cells, stats.ctx_resizes), (2048, 1), "{stats:?}");
    assert!(stats.ctx_last_resize_phases.build_ms > 0.0, "{stats:?}");
    service.stop().unwrap();
    assert_close(&a, &from_scratch(&model, &a_prompt, 48), BATCHED);
    assert_close(&b, &from_scratch(&model, &b_prompt, 16), BATCHED);
}
