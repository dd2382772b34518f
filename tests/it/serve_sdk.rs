//! The compatibility suite: the official `openai` and `anthropic` Python SDKs (from `.venv`,
//! which `.ci/setup --tests` fills) drive a real `kvrun serve` on the tiny model. Each script
//! in `tests/sdk/` exits non-zero with a `FAILED: …` line when a check fails.

use crate::common::server;

use std::process::Command;
use std::time::Duration;

use crate::common::{project_root, test_python, tiny_model, Home};
use server::Server;

const KEY: &str = "sdk-suite-key";

/// Runs one script against `server`; returns its stdout, failing with everything it said.
fn script(server: &Server, name: &str, args: &[&str]) -> String {
    let mut command = Command::new(test_python("openai anthropic"));
    command
        .arg(project_root().join("tests/sdk").join(name))
        .args(args)
        .env("KVRUN_URL", &server.url)
        .env("KVRUN_KEY", KEY);
    server.run_client(command, &format!("{name} {args:?}"))
}

fn start(home: &Home) -> Server {
    Server::start(home, &tiny_model(), &["--api-key", KEY, "--temp", "0"])
}

#[test]
fn openai_sdk_chat_completions() {
    let home = Home::new();
    let server = start(&home);
    assert!(script(&server, "openai_chat.py", &[]).contains("openai chat: ok"));
}

#[test]
fn anthropic_sdk_messages() {
    let home = Home::new();
    let server = start(&home);
    assert!(script(&server, "anthropic_messages.py", &[]).contains("anthropic messages: ok"));
}

#[test]
fn openai_sdk_responses_continue_across_a_restart() {
    let home = Home::new();
    let server = start(&home);
    let id = script(&server, "openai_responses.py", &["first"])
        .trim()
        .to_string();
    assert!(id.starts_with("resp"), "{id}");
    let status = server.terminate(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0));
    let server = start(&home);
    let out = script(&server, "openai_responses.py", &["second", &id]);
    assert!(out.contains("openai responses: ok"), "{out}");
}

#[test]
fn sdks_list_pick_and_refuse_models_by_name_and_alias() {
    let home = Home::new();
    let models = home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    for name in ["big", "small"] {
        std::os::unix::fs::symlink(tiny_model(), models.join(format!("{name}.gguf"))).unwrap();
    }
    let server = Server::start_folder(
        &home,
        &[
            "--api-key",
            KEY,
            "--default-model",
            "none",
            "--model-alias",
            "claude-haiku-*=small",
            "--model-alias",
            "claude-*=big",
            "--model-alias",
            "local=small",
        ],
    );
    assert!(script(&server, "models.py", &[]).contains("sdk models: ok"));
}
