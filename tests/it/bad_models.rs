//! Malformed models that pass a structural GGUF check but abort llama.cpp (exit 134) or
//! panic kvrun (exit 101) are refused up front with a one-line error; a model path that is
//! not a regular file is refused instead of blocking; and if llama.cpp does abort, its gdb
//! backtrace stays off stdout.

use std::path::{Path, PathBuf};

use crate::common::*;
use kvrun::gguf::{GgufArray, GgufValue};
use kvrun::synth::{tiny_llama_writer, TinyLlamaSpec};

fn write_patched(
    dir: &Path,
    name: &str,
    patch: impl FnOnce(&mut kvrun::synth::GgufWriter),
) -> PathBuf {
    let mut w = tiny_llama_writer(&TinyLlamaSpec::default()).unwrap();
    patch(&mut w);
    let path = dir.join(format!("{name}.gguf"));
    w.write_file(&path).unwrap();
    path
}

fn token_list() -> Vec<String> {
    let f = kvrun::gguf::read_header(&tiny_model()).unwrap();
    let list = f.get_array("tokenizer.ggml.tokens").unwrap();
    list.as_strings()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect()
}

fn set_tokens(w: &mut kvrun::synth::GgufWriter, tokens: &[String]) {
    w.set_value(
        "tokenizer.ggml.tokens",
        GgufValue::Array(GgufArray::String(tokens.iter().collect())),
    );
}

fn assert_refused(home: &Home, model: &Path, needle: &str) {
    let out = home.run(&[
        "run",
        path_str(model),
        "--raw",
        "-p",
        "hi",
        "-n",
        "4",
        "--json",
    ]);
    assert!(out.stdout.is_empty(), "stdout: {}", stdout(&out));
    assert_one_line_error(&out, 1, needle);
}

#[test]
fn hyperparameters_llama_cpp_asserts_on_are_refused() {
    let home = Home::new();
    let dir = home.path();
    let cases: Vec<(&str, &str, GgufValue, &str)> = vec![
        (
            "layers-0",
            "llama.block_count",
            GgufValue::U32(0),
            "llama.block_count",
        ),
        (
            "layers-1000",
            "llama.block_count",
            GgufValue::U32(1000),
            "outside 1..=512",
        ),
        (
            "layers-2-31",
            "llama.block_count",
            GgufValue::U64(1 << 31),
            "llama.block_count",
        ),
        (
            "ctx-2-31",
            "llama.context_length",
            GgufValue::U64(1 << 31),
            "llama.context_length",
        ),
        (
            "ctx-u32-max",
            "llama.context_length",
            GgufValue::U32(u32::MAX),
            "llama.context_length",
        ),
        (
            "eps-nan",
            "llama.attention.layer_norm_rms_epsilon",
            GgufValue::F32(f32::NAN),
            "layer_norm_rms_epsilon",
        ),
        (
            "align-1",
            "general.alignment",
            GgufValue::U32(1),
            "general.alignment",
        ),
    ];
    for (name, key, value, needle) in cases {
        let model = write_patched(dir, name, |w| {
            w.set_value(key, value);
        });
        assert_refused(&home, &model, needle);
    }
}

#[test]
fn vocabularies_llama_cpp_aborts_on_are_refused() {
    let home = Home::new();
    let dir = home.path();
    let good = token_list();

    let mut dup = good.clone();
    dup[300] = dup[301].clone();
    let model = write_patched(dir, "dup", |w| set_tokens(w, &dup));
    assert_refused(&home, &model, "tokens 300 and 301 are both");

    let empty = vec![String::new(); good.len()];
    let model = write_patched(dir, "empty", |w| set_tokens(w, &empty));
    assert_refused(&home, &model, "every token string is empty");

    // Invalid UTF-8 cannot come from the writer (it takes &str): patch the file's bytes.
    let model = dir.join("bad-utf8.gguf");
    let mut bytes = std::fs::read(tiny_model()).unwrap();
    let at = bytes
        .windows(12)
        .position(|w| w == b"<|im_start|>")
        .unwrap();
    bytes[at + 1] = 0xFF;
    std::fs::write(&model, &bytes).unwrap();
    assert_refused(&home, &model, "is not valid UTF-8");
}

#[test]
fn a_fifo_as_the_model_is_refused_without_blocking() {
    let home = Home::new();
    let fifo = home.path().join("model.gguf");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(status.success());
    // No writer ever opens the FIFO: a blocking open would hang this test.
    assert_refused(&home, &fifo, "not a regular file");
}

/// Set in the child run of the test below: the model to load, bypassing validation.
const ABORT_CHILD: &str = "KVRUN_TEST_ABORT_CHILD";

#[test]
fn llama_cpp_abort_backtrace_stays_off_stdout() {
    if let Some(model) = std::env::var_os(ABORT_CHILD) {
        if std::env::var_os("KVRUN_TEST_KEEP_BACKTRACE").is_none() {
            kvrun::llama::keep_abort_reports_off_stdout();
        }
        // block_count 0 trips GGML_ASSERT(hparams.n_layer_all > 0): the process aborts.
        let _ = kvrun::llama::Model::load(Path::new(&model), 0);
        unreachable!("llama.cpp was expected to abort on this model");
    }
    let home = Home::new();
    let model = write_patched(home.path(), "layers-0", |w| {
        w.set_value("llama.block_count", GgufValue::U32(0));
    });
    let child = |keep_backtrace: bool| {
        let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "bad_models::llama_cpp_abort_backtrace_stays_off_stdout",
            "--nocapture",
        ])
        .env(ABORT_CHILD, &model)
        .env_remove("GGML_NO_BACKTRACE");
        if keep_backtrace {
            cmd.env("KVRUN_TEST_KEEP_BACKTRACE", "1");
        }
        cmd.output().unwrap()
    };
    let out = child(false);
    let (out_text, err_text) = (stdout(&out), stderr(&out));
    assert_eq!(
        out.status.code(),
        None,
        "the child must die of SIGABRT: {err_text}"
    );
    assert!(err_text.contains("GGML_ASSERT"), "stderr: {err_text}");
    // The test harness prints its own "running 1 test" lines; gdb's would follow.
    assert!(
        !out_text.contains("#0") && !out_text.contains("gdb"),
        "stdout: {out_text}"
    );
    // The control: without the setting, this machine's gdb does print to stdout, which is
    // what makes the check above meaningful; skipped, with a note, where gdb is missing.
    let gdb = std::process::Command::new("gdb").arg("--version").output();
    if gdb.is_ok_and(|o| o.status.success()) {
        let control = child(true);
        let text = stdout(&control);
        assert!(
            text.contains("#0") || text.contains("ptrace"),
            "control stdout: {text}"
        );
    } else {
        eprintln!("note: gdb is not installed, so the control run (backtrace on) was skipped");
    }
}
