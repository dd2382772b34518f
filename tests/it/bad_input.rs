//! Bad input gets a one-line error and a non-zero exit (1 runtime, 2 usage); never a
//! panic, hang or abort.

use crate::common::*;

#[test]
fn missing_model_file() {
    let home = Home::new();
    let out = home.run(&["run", "/nonexistent/model.gguf", "-p", "hi"]);
    assert_one_line_error(&out, 1, "does not exist");
}

#[test]
fn default_model_not_pulled_says_what_to_run() {
    let home = Home::new();
    let out = home.run(&["run", "-p", "hi"]);
    assert_one_line_error(&out, 1, "kvrun pull");
}

#[test]
fn not_a_gguf_file() {
    let home = Home::new();
    let path = home.path().join("fake.gguf");
    std::fs::write(&path, b"this is not a model at all, just text").unwrap();
    let out = home.run(&["run", path_str(&path), "-p", "hi"]);
    assert_one_line_error(&out, 1, "not a usable GGUF model");
}

#[test]
fn truncated_and_corrupted_gguf_files_never_reach_llama_cpp() {
    let home = Home::new();
    let bytes = std::fs::read(tiny_model()).unwrap();
    // Truncations through the header, the tensor table and the tensor data.
    for cut in [3, 20, 100, 1000, 20_000, bytes.len() / 2, bytes.len() - 1] {
        let path = home.path().join(format!("cut-{cut}.gguf"));
        std::fs::write(&path, &bytes[..cut]).unwrap();
        let out = home.run(&["run", path_str(&path), "-p", "hi", "-n", "1"]);
        assert_one_line_error(&out, 1, "GGUF");
    }
    // A huge metadata count.
    let mut bad = bytes.clone();
    bad[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    let path = home.path().join("bad-count.gguf");
    std::fs::write(&path, &bad).unwrap();
    let out = home.run(&["run", path_str(&path), "-p", "hi", "-n", "1"]);
    assert_one_line_error(&out, 1, "GGUF");
}

#[test]
fn prompt_longer_than_the_context() {
    let home = Home::new();
    let long = "word ".repeat(400);
    let out = home.run(&["run", path_str(&tiny_model()), "-c", "64", "-p", &long]);
    assert_one_line_error(&out, 1, "raise --ctx-size");
}

#[test]
fn empty_prompt_is_a_usage_error() {
    let home = Home::new();
    let out = home.run(&["run", path_str(&tiny_model()), "-p", "   "]);
    assert_one_line_error(&out, 2, "the prompt is empty");
    let out = home.run_with_stdin(&["run", path_str(&tiny_model())], "");
    assert_one_line_error(&out, 2, "the prompt is empty");
}

#[test]
fn invalid_config_file_names_the_key() {
    let home = Home::new();
    std::fs::write(
        home.path().join("config.toml"),
        "ctx-size = 512\nbatch-sise = 3\n",
    )
    .unwrap();
    let out = home.run(&["run", path_str(&tiny_model()), "-p", "hi"]);
    assert_one_line_error(&out, 2, "batch-sise");
    std::fs::write(home.path().join("config.toml"), "threads = \"lots\"\n").unwrap();
    let out = home.run(&["models"]);
    assert_one_line_error(&out, 2, "`threads`");
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let home = Home::new();
    let out = home.run(&["run", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--no-such-flag"));
}

#[test]
fn quantized_v_without_flash_attention_is_refused() {
    let home = Home::new();
    let out = home.run(&[
        "run",
        path_str(&tiny_model()),
        "-p",
        "hi",
        "--kv-type",
        "q8_0",
        "--flash-attn",
        "off",
    ]);
    assert_one_line_error(&out, 1, "flash attention");
}

#[test]
fn closed_stdout_exits_zero_quietly() {
    use std::io::Read;
    use std::process::Stdio;
    let home = Home::new();
    let mut child = home
        .cmd()
        .args([
            "run",
            path_str(&tiny_model()),
            "-p",
            "go",
            "--temp",
            "0",
            "-n",
            "400",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read a few bytes, then close the pipe, as `| head -c 10` does.
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = [0u8; 10];
    stdout.read_exact(&mut buf).unwrap();
    drop(stdout);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "stderr: {}", stderr(&out));
    assert!(stderr(&out).trim().is_empty(), "stderr: {}", stderr(&out));
}

/// Prose of about `bytes` bytes, many distinct words so no tokenizer shortcut applies.
fn big_text(bytes: usize) -> String {
    let base = long_text(1);
    base.repeat(bytes / base.len() + 1)[..bytes].to_string()
}

#[test]
fn a_huge_prompt_is_refused_before_it_is_tokenized() {
    // 10 MB into a 512-token context took over a minute to tokenize before being refused;
    // the length alone proves it cannot fit.
    let home = Home::new();
    let file = home.path().join("huge.txt");
    std::fs::write(&file, big_text(10 << 20)).unwrap();
    for model in [default_model(), tiny_model()] {
        let out = home.run(&[
            "run",
            path_str(&model),
            "--prompt-file",
            path_str(&file),
            "-c",
            "512",
            "-n",
            "1",
        ]);
        assert_one_line_error(&out, 1, "and the context holds 512");
        assert!(stderr(&out).contains("raise --ctx-size"));
    }
    // The same for a session's turn and a saved document, through stdin too.
    let text = big_text(2 << 20);
    let m = tiny_model();
    let out = home.run_with_stdin(&["run", path_str(&m), "--session", "s", "-c", "512"], &text);
    assert_one_line_error(&out, 1, "session 's'");
    assert!(stderr(&out).contains("are at least"));
    let out = home.run_with_stdin(
        &[
            "session",
            "save",
            "d",
            path_str(&m),
            "--file",
            "-",
            "-c",
            "512",
        ],
        &text,
    );
    assert_one_line_error(&out, 1, "are at least");
}

#[test]
fn input_over_the_byte_limit_is_a_usage_error() {
    let home = Home::new();
    let file = home.path().join("too-big.txt");
    std::fs::write(&file, big_text((32 << 20) + 1)).unwrap();
    let out = home.run(&[
        "run",
        path_str(&tiny_model()),
        "--prompt-file",
        path_str(&file),
    ]);
    assert_one_line_error(&out, 2, "input limit of 32 MiB");
    let out = home.run(&[
        "session",
        "save",
        "s",
        path_str(&tiny_model()),
        "--file",
        path_str(&file),
    ]);
    assert_one_line_error(&out, 2, "input limit of 32 MiB");
}

#[test]
fn a_session_whose_model_is_gone_names_the_session_and_the_model() {
    let home = Home::new();
    let model = home.path().join("mine.gguf");
    std::fs::copy(tiny_model(), &model).unwrap();
    let out = home.run(&[
        "run",
        path_str(&model),
        "--session",
        "s",
        "--raw",
        "-p",
        "hello",
        "-n",
        "2",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    std::fs::remove_file(&model).unwrap();
    let out = home.run(&["run", "--session", "s", "--continue", "-n", "2"]);
    assert_one_line_error(
        &out,
        2,
        "session 's' was saved with model 'kvrun-tiny-llama'",
    );
    let err = stderr(&out);
    assert!(
        err.contains("mine.gguf") && !err.contains("not downloaded"),
        "{err}"
    );
}

#[test]
fn a_new_session_without_the_default_model_says_to_pull_it() {
    // An empty home has no default model: a session run must say so (the engine's own
    // error), as a plain run does, not only that the engine stopped.
    let home = Home::new();
    for args in [
        &["run", "-p", "hello", "-n", "2"][..],
        &["run", "--session", "s", "-p", "hello", "-n", "2"][..],
    ] {
        let out = home.run(args);
        assert_one_line_error(&out, 1, "the default model is not downloaded yet");
        assert!(stderr(&out).contains("kvrun pull"), "{}", stderr(&out));
    }
}
