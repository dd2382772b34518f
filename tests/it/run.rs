//! `kvrun run` on the real default model and the tiny llama model.

use crate::common::*;

#[test]
fn greedy_runs_are_deterministic_on_both_models() {
    let home = Home::new();
    for model in [default_model(), tiny_model()] {
        let m = path_str(&model);
        let args = [
            "run",
            m,
            "-p",
            "Name three colors.",
            "--temp",
            "0",
            "-n",
            "24",
        ];
        let a = run_json(&home, &args);
        let b = run_json(&home, &args);
        assert_eq!(tokens(&a), tokens(&b), "model {m}");
        assert_eq!(a["text"], b["text"]);
        assert_eq!(tokens(&a).len(), 24);
    }
}

#[test]
fn json_report_has_every_field() {
    let home = Home::new();
    let v = run_json(
        &home,
        &[
            "run",
            path_str(&default_model()),
            "-p",
            "Hi",
            "--temp",
            "0",
            "-n",
            "5",
        ],
    );
    for key in [
        "text",
        "tokens",
        "prompt_tokens",
        "prefilled_tokens",
        "generated_tokens",
        "load_ms",
        "prefill_ms",
        "decode_ms",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    assert_eq!(
        v["generated_tokens"].as_u64().unwrap(),
        tokens(&v).len() as u64
    );
    assert_eq!(v["prefilled_tokens"], v["prompt_tokens"]);
}

#[test]
fn a_session_run_reports_its_restore_and_its_choice() {
    let home = Home::new();
    let m = tiny_model();
    let m = path_str(&m);
    let turn = |text: &str| {
        run_json(
            &home,
            &[
                "run",
                m,
                "--session",
                "s",
                "--raw",
                "-p",
                text,
                "--temp",
                "0",
                "-n",
                "4",
            ],
        )
    };
    let first = turn(&long_text(1));
    assert_eq!(first["restored_tokens"], 0, "{first}");
    assert!(first.get("restore_decision").is_none(), "{first}");
    let v = turn(" and then");
    for key in [
        "session",
        "session_tokens",
        "restored_tokens",
        "reused_tokens",
        "restore_ms",
        "restore_phases",
        "save_ms",
    ] {
        assert!(v.get(key).is_some(), "missing {key} in {v}");
    }
    // Restored whole (all but the last token, decoded again for logits), and the
    // restore-or-recompute choice says so: on a CPU, loading pages always wins.
    let restored = v["restored_tokens"].as_u64().unwrap();
    assert_eq!(
        restored + 1,
        first["session_tokens"].as_u64().unwrap(),
        "{v}"
    );
    assert_eq!(v["restore_decision"]["load_tokens"], restored, "{v}");
    assert_eq!(v["restore_decision"]["prefill_tokens"], 0, "{v}");
    assert!(v["restore_phases"]["read_ms"].as_f64().unwrap() >= 0.0);
}

#[test]
fn chat_template_changes_the_tokens() {
    let home = Home::new();
    for model in [default_model(), tiny_model()] {
        let m = path_str(&model);
        let chat = run_json(&home, &["run", m, "-p", "Hello there", "-n", "0"]);
        let raw = run_json(&home, &["run", m, "--raw", "-p", "Hello there", "-n", "0"]);
        assert!(
            chat["prompt_tokens"].as_u64() > raw["prompt_tokens"].as_u64(),
            "chat {chat} raw {raw}"
        );
    }
}

#[test]
fn plain_output_is_only_the_text() {
    let home = Home::new();
    let model = default_model();
    let m = path_str(&model);
    let json = run_json(
        &home,
        &["run", m, "-p", "Count to five.", "--temp", "0", "-n", "12"],
    );
    let out = home.run(&["run", m, "-p", "Count to five.", "--temp", "0", "-n", "12"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim_end(),
        json["text"].as_str().unwrap().trim_end()
    );
}

#[test]
fn prefill_only_generates_nothing() {
    let home = Home::new();
    let v = run_json(
        &home,
        &["run", path_str(&tiny_model()), "-p", "abc", "-n", "0"],
    );
    assert_eq!(v["generated_tokens"], 0);
    assert_eq!(v["text"], "");
}

#[test]
fn prompt_from_stdin_and_file() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    let file = home.path().join("prompt.txt");
    std::fs::write(&file, "the same words").unwrap();
    let a = run_json(
        &home,
        &[
            "run",
            m,
            "--prompt-file",
            path_str(&file),
            "--temp",
            "0",
            "-n",
            "6",
        ],
    );
    let out = home.run_with_stdin(
        &["run", m, "--temp", "0", "-n", "6", "--json"],
        "the same words",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let b: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(tokens(&a), tokens(&b));
}

#[test]
fn config_file_and_environment_precedence() {
    let home = Home::new();
    let tiny = tiny_model();
    std::fs::write(
        home.path().join("config.toml"),
        format!("ctx-size = 512\nmodel = \"{}\"\n", path_str(&tiny)),
    )
    .unwrap();
    // The config supplies both the model and the context size.
    let v = run_json(&home, &["run", "-p", "x", "-n", "1"]);
    assert_eq!(v["n_ctx"], 512);
    // A flag beats the config file.
    let v = run_json(&home, &["run", "-p", "x", "-n", "1", "-c", "1024"]);
    assert_eq!(v["n_ctx"], 1024);
    // KVRUN_MODEL beats the config file's model; the argument beats both.
    let out = home
        .cmd()
        .env("KVRUN_MODEL", "/nonexistent/env-model.gguf")
        .args(["run", "-p", "x", "-n", "1"])
        .output()
        .unwrap();
    assert_one_line_error(&out, 1, "env-model.gguf");
    let out = home
        .cmd()
        .env("KVRUN_MODEL", "/nonexistent/env-model.gguf")
        .args(["run", path_str(&tiny), "-p", "x", "-n", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn model_names_resolve_in_the_models_folder() {
    let home = Home::new();
    std::fs::create_dir_all(home.path().join("models")).unwrap();
    std::fs::copy(tiny_model(), home.path().join("models/little.gguf")).unwrap();
    let v = run_json(&home, &["run", "little", "-p", "x", "-n", "1"]);
    assert_eq!(v["generated_tokens"], 1);
    let out = home.run(&["models", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["name"], "little");
    assert_eq!(list[0]["architecture"], "llama");
    assert_eq!(list[0]["context_length"], 4096);
}

/// Default models linked under their short names (`smollm2.gguf`) are the defaults: listed
/// as such, not reported missing, and what `run` without MODEL uses.
#[test]
fn default_models_linked_under_their_short_names_are_found() {
    let home = Home::new();
    let models = home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(chat_model(), models.join("smollm2.gguf")).unwrap();
    std::os::unix::fs::symlink(default_model(), models.join("gemma3.gguf")).unwrap();
    let out = home.run(&["models"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("not pulled yet"), "{}", stderr(&out));
    let list = run_json(&home, &["models"]);
    for row in list.as_array().unwrap() {
        assert!(!row["default_for"].as_array().unwrap().is_empty(), "{row}");
    }
    let v = run_json(&home, &["run", "-p", "x", "-n", "1"]);
    assert_eq!(v["generated_tokens"], 1, "{v}");
}

#[test]
fn llama_cpp_log_is_silent_by_default_and_shown_with_v() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    let quiet = home.run(&["run", m, "-p", "hi", "-n", "1"]);
    assert!(quiet.status.success());
    assert!(stderr(&quiet).trim().is_empty(), "{}", stderr(&quiet));
    let verbose = home.run(&["-v", "run", m, "-p", "hi", "-n", "1"]);
    assert!(verbose.status.success());
    assert!(
        stderr(&verbose).contains("llama_model_loader"),
        "{}",
        stderr(&verbose)
    );
}

#[test]
fn an_interrupted_session_run_keeps_the_prompt_and_the_partial_reply() {
    use crate::common::ways_out::*;

    let home = Home::new();
    let model = default_model();
    let args = [
        "run",
        "--session",
        "agent",
        path_str(&model),
        "-p",
        LONG_REPLY_PROMPT,
        "--temp",
        "0",
        "-n",
        ENDLESS,
    ];
    let out = signal_while_streaming(&home, &args, None, "INT");
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("interrupted (SIGINT)"),
        "{}",
        stderr(&out)
    );
    // What was printed is what the session kept.
    let manifest = manifest_json(&home, "agent");
    let reply = manifest["messages"][1]["content"].as_str().unwrap();
    assert!(
        !reply.is_empty() && stdout(&out).contains(reply.trim()),
        "{manifest}"
    );
    // The prompt's prefill is kept as pages or a tail, not thrown away.
    assert!(
        manifest["snapshot"]["kv_len"].as_u64().unwrap() > 8,
        "{manifest}"
    );
    assert_kept_and_free(&home, "agent", LONG_REPLY_PROMPT);
}

/// `chat` and `run` default to the instruct model, `serve` and the benchmarks to Gemma;
/// `kvrun models` says which is which, and a short name finds a pulled default model.
#[test]
fn each_command_has_its_default_model_and_models_says_which() {
    let home = Home::new();
    let models = home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for (source, known) in [
        (chat_model(), kvrun::pull::SMOLLM2),
        (default_model(), kvrun::pull::GEMMA3),
    ] {
        let dest = models.join(known.descriptor.file_name);
        if std::fs::hard_link(&source, &dest).is_err() {
            std::fs::copy(&source, &dest).unwrap();
        }
    }
    let out = home.run(&["models", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let default_for = |stem: &str| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == stem)
            .unwrap_or_else(|| panic!("{stem} not listed: {list}"))["default_for"]
            .clone()
    };
    assert_eq!(
        default_for("smollm2-135m-instruct-q4_1"),
        serde_json::json!(["chat", "run"])
    );
    assert_eq!(
        default_for("gemma-3-270m-q4_k_m"),
        serde_json::json!(["serve"])
    );
    // No MODEL: run takes the instruct model, whose ChatML template is in its prompt.
    let v = run_json(&home, &["run", "-p", "Hi", "-n", "2", "--temp", "0"]);
    assert_eq!(v["generated_tokens"], 2, "{v}");
    let by_name = run_json(
        &home,
        &["run", "smollm2", "-p", "Hi", "-n", "2", "--temp", "0"],
    );
    assert_eq!(
        by_name["tokens"], v["tokens"],
        "a short name is the same model"
    );
    let gemma = run_json(
        &home,
        &["run", "gemma3", "-p", "Hi", "-n", "2", "--temp", "0"],
    );
    assert_ne!(gemma["prompt_tokens"], serde_json::Value::Null);
    // A default model that is not pulled says what to pull.
    let empty = Home::new();
    let out = empty.run(&["run", "gemma3", "-p", "Hi"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("kvrun pull gemma3"),
        "{}",
        stderr(&out)
    );
}
