//! Shared helpers for the integration tests: run the real `kvrun` binary against the real
//! default model and a tiny generated llama model, each test in its own KVRUN_HOME.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// Gemma 3 270M, serve's default model and the sliding-window path. `KVRUN_TEST_MODEL`
/// overrides; otherwise the place `kvrun pull` puts it (the README's test command pulls it
/// first).
pub fn default_model() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| pulled("KVRUN_TEST_MODEL", &kvrun::pull::GEMMA3))
        .clone()
}

/// SmolLM2 135M Instruct, chat and run's default model (an instruct model with a ChatML
/// template). `KVRUN_TEST_CHAT_MODEL` overrides.
pub fn chat_model() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| pulled("KVRUN_TEST_CHAT_MODEL", &kvrun::pull::SMOLLM2))
        .clone()
}

fn pulled(variable: &str, model: &kvrun::pull::KnownModel) -> PathBuf {
    let path = match std::env::var_os(variable) {
        Some(p) => PathBuf::from(p),
        None => kvrun::paths::Paths::resolve()
            .expect("paths")
            .models
            .join(model.descriptor.file_name),
    };
    assert!(
        path.exists(),
        "{} is missing at {}; run `cargo run --release -- pull` first",
        model.title,
        path.display()
    );
    path
}

/// A tiny random-weight llama-architecture model (full attention, grouped-query heads),
/// written once per test binary.
pub fn tiny_model() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kvrun-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tiny-llama.gguf");
        kvrun::synth::write_tiny_llama(&path, &kvrun::synth::TinyLlamaSpec::default()).unwrap();
        path
    })
    .clone()
}

/// A tiny random-weight llama that tokenizes like SmolLM2 (its whole tokenizer and ChatML
/// template, borrowed from the chat model's GGUF) with a 32k context: a real agent's
/// 90 KB request is about as many tokens as on a real model, and prefills in seconds.
pub fn agent_shaped_model() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kvrun-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tiny-smollm2-vocab.gguf");
        let spec = kvrun::synth::TinyLlamaSpec {
            n_layer: 2,
            n_embd: 64,
            n_head: 4,
            n_head_kv: 2,
            n_ff: 128,
            context_length: 32768,
            tokenizer_from: Some(chat_model()),
            name: "kvrun-tiny-agent".into(),
            ..Default::default()
        };
        kvrun::synth::write_tiny_llama(&path, &spec).unwrap();
        path
    })
    .clone()
}

/// A fresh KVRUN_HOME for one test.
pub struct Home {
    pub dir: tempfile::TempDir,
    /// Variables every `kvrun` of this home runs with (after the KVRUN_* ones are removed).
    env: Vec<(&'static str, String)>,
}

impl Home {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            env: Vec::new(),
        }
    }

    /// Every `kvrun` of this home runs with `key` set to `value`.
    pub fn with_env(mut self, key: &'static str, value: &str) -> Self {
        self.env.push((key, value.to_string()));
        self
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// `kvrun` with this home and no inherited KVRUN_* variables.
    pub fn cmd(&self) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kvrun"));
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("KVRUN_") {
                cmd.env_remove(&key);
            }
        }
        cmd.env("KVRUN_HOME", self.path());
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.stdin(Stdio::null());
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd().args(args).output().unwrap()
    }

    pub fn run_with_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use std::io::Write;
        let mut child = self
            .cmd()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs and parses `--json` output, asserting success.
pub fn run_json(home: &Home, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.push("--json");
    let out = home.run(&all);
    assert!(
        out.status.success(),
        "kvrun {args:?} failed: {}",
        stderr(&out)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad JSON from kvrun {args:?}: {e}: {}", stdout(&out)))
}

pub fn tokens(v: &serde_json::Value) -> Vec<i64> {
    v["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect()
}

pub fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Asserts a failure with the given exit code and a one-line error on stderr.
pub fn assert_one_line_error(out: &Output, code: i32, needle: &str) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "stderr: {err}");
    let lines: Vec<_> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "expected one line, got: {err}");
    assert!(
        lines[0].contains(needle),
        "expected {needle:?} in: {}",
        lines[0]
    );
}

pub mod chat_child;
pub mod inproc;
pub mod server;
pub mod service;
pub mod tmux;
pub mod ways_out;

/// Log-probabilities from a `--json --logprobs` report.
pub fn logprobs(v: &serde_json::Value) -> Vec<f32> {
    v["logprobs"]
        .as_array()
        .expect("logprobs")
        .iter()
        .map(|l| l["logprob"].as_f64().unwrap() as f32)
        .collect()
}

/// Largest absolute difference between two log-probability lists of equal length.
pub fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// A few thousand characters of prose for long prompts.
pub fn long_text(copies: usize) -> String {
    let text = include_str!("../../../assets/bench-prompt.txt");
    text.repeat(copies)
}

/// Every file under `dir`, recursively, except dot-files (locks), sorted.
pub fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk_files(&p));
        } else if !e.file_name().to_string_lossy().starts_with('.') {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The KV object files of a home's store (not the live sessions' leases beside them).
pub fn object_files(home: &Home) -> Vec<PathBuf> {
    let root = home.path().join("kv/objects");
    let mut files = walk_files(&root);
    files.retain(|f| !f.starts_with(root.join("leases")));
    files
}

/// Bytes of a home's KV object files.
pub fn object_bytes(home: &Home) -> u64 {
    object_files(home)
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum()
}

/// A session's manifest as JSON (the file is a header line, then JSON).
pub fn manifest_json(home: &Home, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(home.path().join(format!("sessions/{name}/session.kvrun")))
        .unwrap();
    serde_json::from_str(text.split_once('\n').unwrap().1).unwrap()
}

/// The arguments of a greedy `run --session` turn that prints log-probabilities, on the
/// tests' thread count.
pub fn greedy_turn_args<'a>(
    model: &'a str,
    session: &'a str,
    raw: bool,
    text: &'a str,
    n: &'a str,
) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "--session",
        session,
        model,
        "-p",
        text,
        "-n",
        n,
        "--temp",
        "0",
        "-t",
        inproc::THREADS,
        "--logprobs",
    ];
    if raw {
        args.push("--raw");
    }
    args
}

/// A raw [`greedy_turn_args`] turn with `--json` and `extra` arguments.
pub fn greedy_session_turn(
    home: &Home,
    model: &Path,
    session: &str,
    text: &str,
    n: &str,
    extra: &[&str],
) -> Output {
    let mut args = greedy_turn_args(path_str(model), session, true, text, n);
    args.push("--json");
    args.extend_from_slice(extra);
    home.run(&args)
}

/// Where the store keeps object `id` (hex) of `home`.
pub fn object_path(home: &Home, id: &str) -> PathBuf {
    home.path().join("kv/objects").join(&id[..2]).join(&id[2..])
}

/// Damages a file: its last byte, one bit.
pub fn flip_last_byte(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    std::fs::write(path, bytes).unwrap();
}

/// The project's root (where `.venv`, `tests/sdk` and `tests/templates` are).
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The Python the cross-checks run: KVRUN_TEST_PYTHON, else `.venv/bin/python` (which
/// `.ci/setup --tests` creates). Missing is a failure naming `needs`, never a skip.
pub fn test_python(needs: &str) -> PathBuf {
    let path = match std::env::var_os("KVRUN_TEST_PYTHON") {
        Some(p) => PathBuf::from(p),
        None => project_root().join(".venv/bin/python"),
    };
    assert!(
        path.exists(),
        "this test needs Python with {needs} at {}: run `.ci/setup --tests` (or `python3 -m \
         venv .venv && .venv/bin/pip install {needs}`), or set KVRUN_TEST_PYTHON",
        path.display()
    );
    path
}

/// Python jinja2's renderings of every corpus template over every conversation
/// (tests/templates/render.py: "template|conversation|agp" -> {"ok": text} or {"error": ...}).
pub fn jinja2_renderings(corpus: &Path, conversations: &Path) -> serde_json::Value {
    let out = Command::new(test_python("jinja2"))
        .arg(project_root().join("tests/templates/render.py"))
        .arg(corpus)
        .arg(conversations)
        .arg(project_root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the jinja2 reference renderer failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}
