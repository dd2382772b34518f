//! Persistent sessions on the real default model (iSWA cache) and the tiny llama model
//! (unified cache): restores compute what the uninterrupted run computed.

use crate::common::inproc::{uninterrupted, uninterrupted_with, THREADS};
use crate::common::*;
use kvrun::settings::{FlashAttn, KvType};

/// Runs a [`turn_args`] turn; its JSON.
fn session_turn(
    home: &Home,
    model: &str,
    name: &str,
    raw: bool,
    text: &str,
    n: &str,
) -> serde_json::Value {
    run_json(home, &greedy_turn_args(model, name, raw, text, n))
}

fn check_split_turns(model_path: &std::path::Path, ctx: u32, raw: bool, turns: &[&str]) {
    check_split_turns_with(Home::new(), model_path, ctx, FlashAttn::Auto, raw, turns);
}

fn check_split_turns_with(
    home: Home,
    model_path: &std::path::Path,
    ctx: u32,
    flash_attn: FlashAttn,
    raw: bool,
    turns: &[&str],
) {
    let m = path_str(model_path);
    let settings = (KvType::F16, flash_attn);
    let expected = uninterrupted_with(model_path, ctx, settings, raw, turns, 16);
    for (i, turn) in turns.iter().enumerate() {
        let mut args = greedy_turn_args(m, "split", raw, turn, "16");
        args.extend(["--flash-attn", flash_attn.as_str()]);
        let v = run_json(&home, &args);
        if i > 0 {
            assert!(
                v["restored_tokens"].as_u64().unwrap() > 0,
                "turn {i} restored nothing: {v}"
            );
        }
        assert_eq!(
            tokens(&v),
            expected[i].0.iter().map(|&t| t as i64).collect::<Vec<_>>(),
            "turn {i}"
        );
        let diff = max_diff(&logprobs(&v), &expected[i].1);
        assert_eq!(diff, 0.0, "turn {i}: log-probabilities differ");
    }
}

#[test]
fn raw_session_split_across_processes_matches_uninterrupted_tiny() {
    let doc = long_text(1);
    check_split_turns(&tiny_model(), 4096, true, &[&doc, " and then", " more"]);
}

#[test]
fn restore_in_many_pipelined_chunks_matches_uninterrupted_tiny() {
    // A one-byte chunk size restores one page per chunk: each later chunk is read on a
    // thread of its own while the one before it loads, and lands next to it.
    let doc = long_text(2);
    check_split_turns_with(
        Home::new().with_env("KVRUN_RESTORE_CHUNK_BYTES", "1"),
        &tiny_model(),
        4096,
        FlashAttn::Auto,
        true,
        &[&doc, " and then", " more"],
    );
}

#[test]
fn raw_session_without_flash_attention_matches_uninterrupted_tiny() {
    // Without flash attention llama.cpp keeps V transposed, so a capture's rows are copied
    // into page order rather than sliced where they lie.
    let doc = long_text(1);
    check_split_turns_with(
        Home::new(),
        &tiny_model(),
        4096,
        FlashAttn::Off,
        true,
        &[&doc, " and then", " more"],
    );
}

#[test]
fn chat_session_split_across_processes_matches_uninterrupted_tiny() {
    check_split_turns(
        &tiny_model(),
        4096,
        false,
        &["Hello there", "What is the time", "Thanks"],
    );
}

#[test]
fn raw_session_split_across_processes_matches_uninterrupted_default_model() {
    // Long enough that the sliding window (512) wraps several times.
    let doc = long_text(2);
    check_split_turns(&default_model(), 8192, true, &[&doc, " To sum up,"]);
}

#[test]
fn chat_session_split_across_processes_matches_uninterrupted_default_model() {
    let doc = format!("Read this and remember it.\n{}", long_text(1));
    check_split_turns(
        &default_model(),
        8192,
        false,
        &[&doc, "What is the text about?", "Say it shorter."],
    );
}

fn check_prefix_reuse(model_path: &std::path::Path, exact: bool) {
    let m = path_str(model_path);
    let doc = long_text(2);
    let extended = format!("{doc} A new question follows the same document.");
    // Home 1: a session holding the document, then a new one that starts the same way.
    let shared = Home::new();
    let file = shared.path().join("doc.txt");
    std::fs::write(&file, &doc).unwrap();
    let out = shared.run(&[
        "session",
        "save",
        "base",
        m,
        "--raw",
        "--file",
        path_str(&file),
        "-t",
        THREADS,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let reused = session_turn(&shared, m, "second", true, &extended, "16");
    assert!(reused["reused_tokens"].as_u64().unwrap() >= 256, "{reused}");
    assert!(reused["prefilled_tokens"].as_u64() < reused["prompt_tokens"].as_u64());
    // Home 2: the same session prefilled from scratch.
    let scratch = Home::new();
    let fresh = session_turn(&scratch, m, "second", true, &extended, "16");
    assert_eq!(fresh["reused_tokens"], 0);
    assert_eq!(tokens(&reused), tokens(&fresh));
    let diff = max_diff(&logprobs(&reused), &logprobs(&fresh));
    if exact {
        assert_eq!(diff, 0.0);
    } else {
        // The prefix comes back to the token, so the rest prefills from inside a page: other
        // batch shapes than from scratch (measured 0.10).
        assert!(diff < crate::common::service::SWA_BATCH_SHAPES, "{diff}");
    }
}

#[test]
fn prefix_reuse_matches_prefill_from_scratch_tiny() {
    check_prefix_reuse(&tiny_model(), true);
}

#[test]
fn prefix_reuse_matches_prefill_from_scratch_default_model() {
    check_prefix_reuse(&default_model(), false);
}

#[test]
fn continue_generates_on_from_the_session() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    let first = session_turn(&home, m, "c", true, "once upon a time", "8");
    let out = home.run(&[
        "run",
        "--session",
        "c",
        "--continue",
        "-n",
        "8",
        "--temp",
        "0",
        "--json",
        "-t",
        THREADS,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["prompt_tokens"], 0);
    assert_eq!(
        v["session_tokens"].as_u64().unwrap(),
        first["session_tokens"].as_u64().unwrap() + 8
    );
    // The same 16 tokens as one uninterrupted 16-token generation.
    let once = uninterrupted(&model, 4096, true, &["once upon a time"], 16);
    let mut both = tokens(&first);
    both.extend(tokens(&v));
    assert_eq!(
        both,
        once[0].0.iter().map(|&t| t as i64).collect::<Vec<_>>()
    );
}

#[test]
fn fork_is_independent_and_copies_no_page() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    session_turn(&home, m, "a", true, &long_text(1), "4");
    let objects = |h: &Home| object_files(h).len();
    let before = objects(&home);
    let out = home.run(&["session", "fork", "a", "b"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(objects(&home), before, "fork copied objects");
    let a_before = session_json(&home, "a");
    session_turn(&home, m, "b", true, " diverging text for b", "4");
    let a_after = session_json(&home, "a");
    let b = session_json(&home, "b");
    assert_eq!(
        a_before["tokens"], a_after["tokens"],
        "a changed when b did"
    );
    assert!(b["tokens"].as_u64() > a_after["tokens"].as_u64());
    // Removing a keeps b whole.
    let out = home.run(&["session", "rm", "a"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = home.run(&[
        "session", "restore", "b", "--check", "--json", "-t", THREADS,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
}

fn session_json(home: &Home, name: &str) -> serde_json::Value {
    let out = home.run(&["session", "show", name, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn sessions_sharing_a_prefix_store_it_once() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    let doc = long_text(2);
    session_turn(&home, m, "s0", true, &format!("{doc} Task 0."), "1");
    let one = object_bytes(&home);
    for i in 1..5 {
        let v = session_turn(
            &home,
            m,
            &format!("s{i}"),
            true,
            &format!("{doc} Task {i}."),
            "1",
        );
        assert!(v["reused_tokens"].as_u64().unwrap() > 0);
    }
    let all = object_bytes(&home);
    assert!(
        (all as f64) < 1.5 * one as f64,
        "5 sessions use {all} bytes, one uses {one}"
    );
}

#[test]
fn save_writes_only_new_pages() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    session_turn(&home, m, "inc", true, &long_text(2), "1");
    let before = object_files(&home);
    session_turn(&home, m, "inc", true, " a short turn", "4");
    let after = object_files(&home);
    // Old page files are untouched (same modification time), and at most one page plus the
    // new tail were added.
    let new: Vec<_> = after.iter().filter(|p| !before.contains(p)).collect();
    assert!(new.len() <= 2, "a short turn wrote {} objects", new.len());
}

#[test]
fn sessions_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let home = Home::new();
    session_turn(
        &home,
        path_str(&tiny_model()),
        "p",
        true,
        "private words",
        "2",
    );
    for dir in ["sessions", "sessions/p", "kv", "kv/objects"] {
        let mode = std::fs::metadata(home.path().join(dir))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o700, "{dir}");
    }
    for file in walk_files(&home.path().join("sessions"))
        .into_iter()
        .chain(walk_files(&home.path().join("kv")))
    {
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
}
