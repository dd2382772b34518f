//! Sliding-window caches restored bit for bit: a session saved at lengths across the
//! window's phases (inside the first ring, just past the first point where the window is
//! laid out afresh, at a ring's end, far on) continues exactly as the uninterrupted run,
//! tokens and log-probabilities, on the default model (Gemma 3, a 512-token window) and on
//! a tiny LFM2 hybrid with a 128-token window.

use std::path::Path;

use crate::common::inproc::{uninterrupted, THREADS};
use crate::common::*;
use kvrun::dialogue::Dialogue;
use kvrun::llama::Model;

/// The context every run below uses: the longest document and its reply fit.
const CTX: u32 = 8192;

/// A prefix of the tests' prose that a raw turn of `model` tokenizes to `tokens` tokens,
/// or the first that does to more (a word can be two tokens).
fn document_of(model: &Model, tokens: usize) -> (String, usize) {
    let text = long_text(16);
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    let count = |n: usize| {
        let doc: String = words[..n].concat();
        let n_tokens = Dialogue::new(model, true, None)
            .user_turn_tokens(&doc)
            .unwrap()
            .len();
        (doc, n_tokens)
    };
    let (mut lo, mut hi) = (1, words.len());
    assert!(
        count(hi).1 >= tokens,
        "the prose is too short for {tokens} tokens"
    );
    while lo < hi {
        let mid = (lo + hi) / 2;
        match count(mid).1 >= tokens {
            true => hi = mid,
            false => lo = mid + 1,
        }
    }
    count(lo)
}

/// Per length: `session save` of a raw document, then `run --session --continue` in a new
/// process, against one process that decoded the document and generated on.
fn check_restores_at(model_path: &Path, lengths: &[usize]) {
    let model = Model::load(model_path, 0).unwrap();
    let m = path_str(model_path);
    let ctx = CTX.to_string();
    for &length in lengths {
        let (doc, n_tokens) = document_of(&model, length);
        let home = Home::new();
        let file = home.path().join("doc.txt");
        std::fs::write(&file, &doc).unwrap();
        let saved = home.run(&[
            "session",
            "save",
            "w",
            m,
            "--raw",
            "--file",
            path_str(&file),
            "-c",
            &ctx,
            "-t",
            THREADS,
        ]);
        assert!(saved.status.success(), "{length}: {}", stderr(&saved));
        let v = run_json(
            &home,
            &[
                "run",
                "--session",
                "w",
                "--continue",
                "-n",
                "12",
                "--temp",
                "0",
                "-c",
                &ctx,
                "-t",
                THREADS,
                "--logprobs",
            ],
        );
        assert!(
            v["restored_tokens"].as_u64().unwrap() + 1 >= n_tokens as u64,
            "{n_tokens} tokens: the session was not restored whole: {v}"
        );
        let expected = uninterrupted(model_path, CTX, true, &[&doc], 12);
        let want: Vec<i64> = expected[0].0.iter().map(|&t| t as i64).collect();
        assert_eq!(tokens(&v), want, "{n_tokens} tokens");
        let diff = max_diff(&logprobs(&v), &expected[0].1);
        assert_eq!(diff, 0.0, "{n_tokens} tokens: log-probabilities differ");
    }
}

#[test]
fn sliding_window_restores_are_exact_at_every_length_default_model() {
    // Gemma 3 lays its window out afresh at 768, 1024, 1280, ...: lengths inside the first
    // ring, just past its end, at the end of the next, and far on.
    check_restores_at(&default_model(), &[300, 782, 1024, 1300, 2021, 4000]);
}

#[test]
fn sliding_window_restores_are_exact_at_every_length_windowed_hybrid() {
    // A 128-token window is laid out afresh from 512 on, every page.
    let model = crate::memory_kinds::tiny_memory_model(kvrun::synth::TinyRecurrentArch::Lfm2Swa);
    check_restores_at(&model, &[100, 300, 513, 700, 1024, 1500]);
}
