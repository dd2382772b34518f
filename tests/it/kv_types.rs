//! The q4_0 precision warning: given once, on stderr, when a session in a q4_0 KV cache
//! grows past `Q4_0_WARN_TOKENS`; never below it, and never for f16 or q8_0.

use crate::common::{path_str, stderr, Home};
use kvrun::settings::Q4_0_WARN_TOKENS;

/// A tiny model whose context holds a session past the threshold.
fn tiny_long_model(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("tiny-long.gguf");
    let spec = kvrun::synth::TinyLlamaSpec {
        context_length: (Q4_0_WARN_TOKENS as u32 + 1024).next_multiple_of(256),
        ..Default::default()
    };
    kvrun::synth::write_tiny_llama(&path, &spec).unwrap();
    path
}

/// One raw turn of `words` words in session `s` with `--kv-type kv_type`; returns the
/// session's length and stderr's warning lines.
fn turn(home: &Home, model: &str, kv_type: &str, words: usize) -> (u64, Vec<String>) {
    let text = "the ".repeat(words);
    let ctx = (Q4_0_WARN_TOKENS + 1024).to_string();
    let out = home.run(&[
        "run",
        "--session",
        "s",
        model,
        "--raw",
        "-p",
        &text,
        "-n",
        "1",
        "--temp",
        "0",
        "-c",
        &ctx,
        "--kv-type",
        kv_type,
        "--json",
    ]);
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tokens = json["session_tokens"].as_u64().unwrap();
    let warnings = err
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .map(str::to_string)
        .collect();
    (tokens, warnings)
}

#[test]
fn a_long_q4_0_session_warns_once_on_stderr() {
    let home = Home::new();
    let model = tiny_long_model(home.path());
    let (tokens, warnings) = turn(&home, path_str(&model), "q4_0", Q4_0_WARN_TOKENS + 64);
    assert!(
        tokens > Q4_0_WARN_TOKENS as u64,
        "the session holds {tokens} tokens"
    );
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let line = &warnings[0];
    assert!(line.starts_with("warning: session 's' holds "), "{line}");
    assert!(line.contains("q4_0"), "{line}");
    assert!(line.contains("--kv-type q8_0"), "{line}");
}

#[test]
fn no_warning_below_the_threshold_or_for_other_types() {
    let model_home = Home::new();
    let model = tiny_long_model(model_home.path());
    let short = Home::new();
    let (tokens, warnings) = turn(&short, path_str(&model), "q4_0", Q4_0_WARN_TOKENS / 2);
    assert!(
        tokens < Q4_0_WARN_TOKENS as u64,
        "the session holds {tokens} tokens"
    );
    assert!(warnings.is_empty(), "{warnings:?}");
    for kv_type in ["f16", "q8_0"] {
        let home = Home::new();
        let (tokens, warnings) = turn(&home, path_str(&model), kv_type, Q4_0_WARN_TOKENS + 64);
        assert!(
            tokens > Q4_0_WARN_TOKENS as u64,
            "{kv_type}: {tokens} tokens"
        );
        assert!(warnings.is_empty(), "{kv_type}: {warnings:?}");
    }
}
