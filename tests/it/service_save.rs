//! Saves off the engine thread, on real llama.cpp (the default model): a reply's save is
//! captured between batch steps and committed by the session's writer thread while another
//! conversation decodes; a commit that fails is reported and the next save repairs it.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::service::*;
use crate::common::*;
use kvrun::llama::TokenId;
use kvrun::service::protocol::{Request, Transcript};
use kvrun::service::ServiceStats;

/// Tokens the conversation that ends first generates, and the one that decodes on.
const FIRST_REPLY: usize = 4;
const SECOND_REPLY: usize = 64;

/// Starts an engine with `requests` already queued: both are admitted in the engine's
/// first step, whatever the machine's load, so two runs decode in the same batches.
fn start_with_requests(home: &Path, model: &Path, requests: Vec<Request>) -> ServiceHarness {
    ServiceHarness::new(home, model)
        .with_parallel(2)
        .with_queued(requests)
        .start()
        .unwrap()
}

/// Polls the engine's stats until `done` holds (a minute at most).
fn wait_for(
    service: &ServiceHarness,
    what: &str,
    done: impl Fn(&ServiceStats) -> bool,
) -> ServiceStats {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stats = service.stats().unwrap();
        if done(&stats) {
            return stats;
        }
        assert!(Instant::now() < deadline, "{what}: {stats:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The two prompts: "first" is two pages and more, so its save has pages and a tail.
fn prompts(model: &Path) -> (Vec<TokenId>, Vec<TokenId>) {
    let model = kvrun::llama::Model::load(model, 0).unwrap();
    let first = model.tokenize_prompt(&long_text(2));
    assert!(first.len() > 512, "{}", first.len());
    let second = model.tokenize_prompt("A short prompt of another conversation");
    (first, second)
}

/// "first" ends after a few tokens and keeps its transcript (its client saves next, as a
/// chat does); "second" decodes on meanwhile.
fn requests(first: &[TokenId], second: &[TokenId]) -> (Vec<Request>, Pending, Pending) {
    let (mut req_a, pending_a) = request(named("first"), first.to_vec(), FIRST_REPLY);
    req_a.transcript = Some(Transcript::raw());
    let (req_b, pending_b) = request(named("second"), second.to_vec(), SECOND_REPLY);
    (vec![req_a, req_b], pending_a, pending_b)
}

/// Breaks the object store for every write, as root too: each object's fan-out
/// directory is a file, so no object can be created under it.
fn break_store(home: &Path) -> Vec<std::path::PathBuf> {
    let root = kvrun::paths::Paths::under(home).objects();
    std::fs::create_dir_all(&root).unwrap();
    (0..=255u8)
        .map(|b| {
            let path = root.join(format!("{b:02x}"));
            std::fs::write(&path, b"not a directory").unwrap();
            path
        })
        .collect()
}

fn log_of(prompt: &[TokenId], reply: &Outcome) -> Vec<i64> {
    prompt
        .iter()
        .chain(&reply.tokens())
        .map(|&t| i64::from(t))
        .collect()
}

#[test]
fn a_reply_saved_while_another_decodes_is_durable_and_the_other_stream_is_unchanged() {
    let model = default_model();
    let (first, second) = prompts(&model);

    // A healthy store: the end-of-reply save of "first" lands while "second" decodes.
    let home = Home::new();
    let (queued, pending_a, pending_b) = requests(&first, &second);
    let service = start_with_requests(home.path(), &model, queued);
    let a = pending_a.collect();
    assert_eq!(a.tokens().len(), FIRST_REPLY);
    let stats = wait_for(&service, "the first save to land", |s| s.saves_landed >= 1);
    assert_eq!(stats.save_failures, 0, "{stats:?}");
    // Once landed, the manifest on disk names the whole log.
    let manifest = manifest_json(&home, "first");
    assert_eq!(tokens(&manifest), log_of(&first, &a));
    assert!(
        manifest["snapshot"]["tail"].is_string(),
        "{}",
        manifest["snapshot"]
    );
    // The client's Save after it: durable when it answers.
    let saved = service
        .handle()
        .save_blocking("first", Transcript::raw())
        .unwrap();
    assert!(saved.warnings.is_empty(), "{:?}", saved.warnings);
    let b = pending_b.collect();
    let stats = service.stats().unwrap();
    // Three saves queued (two of "first", one of "second"), each by the engine thread.
    assert_eq!(stats.saves, 3, "{stats:?}");
    assert!(
        stats.save_engine_ms > 0.0 && stats.save_writer_ms > 0.0,
        "{stats:?}"
    );
    service.stop().unwrap();
    assert_eq!(tokens(&manifest_json(&home, "second")), log_of(&second, &b));

    // The same two requests over a store that refuses every write: "first"'s saves fail
    // and are reported, "second" decodes exactly as before.
    let broken = Home::new();
    let blockers = break_store(broken.path());
    let (queued, pending_a, pending_b) = requests(&first, &second);
    let service = start_with_requests(broken.path(), &model, queued);
    let a_broken = pending_a.collect();
    assert_eq!(a_broken.tokens(), a.tokens());
    wait_for(&service, "the first save to fail", |s| s.save_failures >= 1);
    let refused = service
        .handle()
        .save_blocking("first", Transcript::raw())
        .unwrap_err();
    assert!(refused.to_string().contains("first"), "{refused}");
    assert!(!broken
        .path()
        .join("sessions/first")
        .join("session.kvrun")
        .exists());
    let b_broken = pending_b.collect();
    assert_eq!(b_broken.tokens(), b.tokens());
    assert_eq!(
        b_broken.logprobs(),
        b.logprobs(),
        "the saves changed the decoding"
    );

    // Repaired, the next save writes everything the failed ones lacked.
    for path in blockers {
        std::fs::remove_file(path).unwrap();
    }
    let saved = service
        .handle()
        .save_blocking("first", Transcript::raw())
        .unwrap();
    assert!(saved.bytes > 0, "{saved:?}");
    assert_eq!(tokens(&manifest_json(&broken, "first")), log_of(&first, &a));
    service.stop().unwrap();

    // A restart continues "first" from its stored pages (computed in batches shared with
    // "second", so within batch rounding of a run from scratch).
    let service = ServiceHarness::new(broken.path(), &model)
        .with_parallel(1)
        .start()
        .unwrap();
    let more = service.tokenize(" and then");
    let next = second_turn(&first, &a.tokens(), FIRST_REPLY, &more[1..]);
    let c = generate(&service, named("first"), next.clone(), 8);
    service.stop().unwrap();
    let cached = c.usage().cached;
    // (Its own save, to the token: the reply's cells too.)
    assert!(cached.cold >= 512 && cached.hot == 0, "{cached:?}");
    assert_close(&c, &from_scratch(&model, &next, 8), BATCHED);
}
