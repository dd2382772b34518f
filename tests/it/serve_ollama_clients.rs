//! Ollama's official clients against a real `kvrun serve` of a models folder holding
//! SmolLM2 (asked for as `smollm2:latest`): Python's `ollama`, `langchain-ollama` and
//! `llm` with `llm-ollama` (from `.venv`), and the npm `ollama` package (from
//! tests/ollama-js/node_modules; both filled by `.ci/setup --tests`). Each client's
//! script runs `first`, the server restarts on the same home, then `second`; a failed
//! check exits non-zero with a `FAILED: …` line. The greedy replies the scripts print
//! must be `kvrun run`'s on the same model.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use crate::common::server::Server;
use crate::common::*;

/// The client's program and its script.
fn client(name: &str) -> (PathBuf, PathBuf) {
    if name == "client.mjs" {
        let dir = project_root().join("tests/ollama-js");
        assert!(
            dir.join("node_modules/ollama").exists(),
            "this test needs the npm `ollama` package in {}: run `.ci/setup --tests`",
            dir.display()
        );
        return (PathBuf::from("node"), dir.join(name));
    }
    let python = test_python("ollama langchain-ollama llm llm-ollama");
    (python, project_root().join("tests/sdk").join(name))
}

/// Runs `script`'s `phase` against `server`; returns its stdout.
fn run_phase(server: &Server, home: &Home, script: &str, phase: &str) -> String {
    let (program, path) = client(script);
    let mut command = Command::new(program);
    command
        .arg(&path)
        .arg(phase)
        .current_dir(path.parent().unwrap())
        .env("OLLAMA_HOST", &server.url)
        .env("KVRUN_STATE", home.path().join("client-state.json"));
    server.run_client(command, &format!("{script} {phase}"))
}

/// A home whose models folder holds SmolLM2 under its own file name.
fn home() -> Home {
    let home = Home::new();
    let models = home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    let file = kvrun::pull::SMOLLM2.descriptor.file_name;
    std::os::unix::fs::symlink(chat_model(), models.join(file)).unwrap();
    home
}

fn start(home: &Home) -> Server {
    // No default model: an unknown name is a 404, and `smollm2:latest` must resolve.
    Server::start_folder(home, &["--default-model", "none"])
}

/// `kvrun run`'s greedy reply of 8 tokens to `prompt` (`--raw`: as plain text).
fn kvrun_run(home: &Home, prompt: &str, raw: bool) -> String {
    let model = chat_model();
    let mut args = vec![
        "run",
        path_str(&model),
        "-p",
        prompt,
        "-n",
        "8",
        "--temp",
        "0",
        "-t",
        "2",
    ];
    if raw {
        args.push("--raw");
    }
    run_json(home, &args)["text"].as_str().unwrap().to_string()
}

/// The client's first run, a restart, its second run; the greedy texts checked.
fn first_restart_second(script: &str, done: &str) {
    let home = home();
    let server = start(&home);
    let first = run_phase(&server, &home, script, "first");
    assert!(first.contains(&format!("{done}: first ok")), "{first}");
    let status = server.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{status}");
    let server = start(&home);
    let second = run_phase(&server, &home, script, "second");
    assert!(second.contains(&format!("{done}: second ok")), "{second}");
    drop(server);
    let greedy = first
        .lines()
        .find_map(|l| l.strip_prefix("GREEDY "))
        .unwrap_or_else(|| panic!("no GREEDY line: {first}"));
    let greedy: serde_json::Value = serde_json::from_str(greedy).unwrap();
    // llm's CLI prints the reply without its surrounding whitespace.
    let chat = greedy["chat"].as_str().unwrap().trim();
    assert_eq!(chat, kvrun_run(&home, "Say hello.", false).trim());
    if !greedy["raw"].is_null() {
        assert_eq!(
            greedy["raw"],
            kvrun_run(&home, "The capital of France is", true)
        );
    }
}

#[test]
fn ollama_python_client() {
    first_restart_second("ollama_python.py", "ollama python");
}

#[test]
fn ollama_js_client() {
    first_restart_second("client.mjs", "ollama js");
}

#[test]
fn langchain_ollama() {
    first_restart_second("ollama_langchain.py", "ollama langchain");
}

#[test]
fn llm_ollama_plugin() {
    first_restart_second("ollama_llm.py", "ollama llm");
}
