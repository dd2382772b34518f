//! The requests real agents send, recorded from the clients themselves (Claude Code, Codex
//! and opencode; tests/agents/README.md says how), replayed byte for byte against
//! `kvrun serve`: each is accepted and streamed to its final event. The model is a tiny one
//! with SmolLM2's tokenizer and ChatML template (`agent_shaped_model`), so the 90 KB Claude
//! Code request is about 25,000 tokens, as on a real model, yet prefills in seconds.

use crate::common::server;

use crate::common::*;
use serde_json::Value;
use server::{Reply, Server};

/// A recorded request: its path (with query), the headers worth sending again, the body.
fn recorded(name: &str) -> (String, Vec<(String, String)>, Vec<u8>) {
    let path = project_root().join("tests/agents").join(name);
    let recorded: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    // Transport headers are the HTTP client's to set; the rest (session ids, betas,
    // versions, keys) go as the agent sent them.
    let transport = [
        "host",
        "content-length",
        "content-type",
        "connection",
        "accept-encoding",
        "transfer-encoding",
    ];
    let headers = recorded["headers"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| !transport.contains(&k.to_ascii_lowercase().as_str()))
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    let body = serde_json::to_vec(&recorded["body"]).unwrap();
    (
        recorded["path"].as_str().unwrap().to_string(),
        headers,
        body,
    )
}

fn replay(server: &Server, name: &str) -> Reply {
    let (path, headers, body) = recorded(name);
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let reply = server.post_bytes(&path, body, &headers);
    assert_eq!(
        reply.status,
        200,
        "{name} was refused: {}\n{}",
        reply.body,
        server.log_text()
    );
    assert!(
        reply
            .header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream")),
        "{name}: {:?}",
        reply.headers
    );
    reply
}

/// The `event:` names (Anthropic, Responses) or `data:` payloads of an SSE body, in order.
fn sse(reply: &Reply) -> Vec<(Option<String>, String)> {
    reply
        .body
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .map(|block| {
            let event = block
                .lines()
                .find_map(|l| l.strip_prefix("event:"))
                .map(|e| e.trim().to_string());
            let data = block
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .collect::<Vec<_>>()
                .join("\n");
            (event, data)
        })
        .collect()
}

#[test]
fn recorded_agent_requests_are_served_to_their_final_event() {
    let home = Home::new();
    // Replies are capped: this checks that each request is accepted and finished, not what
    // the model writes.
    let server = Server::start(&home, &agent_shaped_model(), &["--max-tokens", "8"]);

    // Claude Code: 12 tools (about 48 KB of schemas), thinking, context management.
    let claude = replay(&server, "claude-code-messages.json");
    let events = sse(&claude);
    assert_eq!(
        events[0].0.as_deref(),
        Some("message_start"),
        "{}",
        claude.body
    );
    assert_eq!(
        events.last().unwrap().0.as_deref(),
        Some("message_stop"),
        "{}",
        claude.body
    );

    // Codex: the Responses API, 9 tools of several types, `store: false`.
    let codex = replay(&server, "codex-responses.json");
    let last = sse(&codex).pop().unwrap();
    assert_eq!(
        last.0.as_deref(),
        Some("response.completed"),
        "{}",
        codex.body
    );

    // opencode: a title request and the main request (10 tools) under one session id.
    for name in ["opencode-title.json", "opencode-main.json"] {
        let reply = replay(&server, name);
        let events = sse(&reply);
        assert_eq!(events.last().unwrap().1, "[DONE]", "{name}: {}", reply.body);
        let finished = events.iter().any(|(_, data)| {
            serde_json::from_str::<Value>(data)
                .is_ok_and(|chunk| chunk["choices"][0]["finish_reason"].is_string())
        });
        assert!(finished, "{name}: no finish_reason in {}", reply.body);
    }
}

/// The model a streamed Anthropic reply names in its `message_start`.
fn message_start_model(reply: &Reply) -> String {
    let events = sse(reply);
    let start: Value = serde_json::from_str(&events[0].1).unwrap();
    start["message"]["model"]
        .as_str()
        .unwrap_or_default()
        .into()
}

#[test]
fn claude_codes_main_and_small_model_calls_reach_two_models() {
    // The folder holds the agent-shaped model and SmolLM2; Claude Code's names reach them
    // through patterns, as a user's config would map them.
    let home = Home::new();
    let models = home.path().join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::os::unix::fs::symlink(agent_shaped_model(), models.join("agent.gguf")).unwrap();
    std::os::unix::fs::symlink(chat_model(), models.join("small.gguf")).unwrap();
    std::fs::write(
        home.path().join("config.toml"),
        "default-model = \"none\"\n[model-aliases]\n\"claude-haiku-*\" = \"small\"\n\
         \"claude-*\" = \"agent\"\n",
    )
    .unwrap();
    let server = Server::start_folder(&home, &["--max-tokens", "8"]);

    // The main request (claude-sonnet-4-5, 12 tools) goes to the agent model.
    let main = replay(&server, "claude-code-messages.json");
    assert_eq!(message_start_model(&main), "agent", "{}", main.body);

    // A background call of the same Claude Code session (a title, on the small fast model):
    // the recorded request's headers, Claude Code's haiku model name, a short prompt.
    let (path, headers, _) = recorded("claude-code-messages.json");
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let title = serde_json::json!({
        "model": "claude-haiku-4-5-20251001", "max_tokens": 512, "stream": true,
        "system": [{"type": "text", "text": "Summarize this coding conversation in under 50 \
            characters. Capture the main task and key files."}],
        "messages": [{"role": "user", "content": "Fix the failing test in parser.rs"}],
    });
    let small = server.post_bytes(&path, serde_json::to_vec(&title).unwrap(), &headers);
    assert_eq!(small.status, 200, "{}", small.body);
    assert_eq!(message_start_model(&small), "small", "{}", small.body);
    assert_eq!(
        sse(&small).last().unwrap().0.as_deref(),
        Some("message_stop")
    );

    // Both models are loaded side by side, each with its own conversation of the session.
    let stats = server.get("/v1/kvrun/stats", &[]).json();
    for model in stats["models"]["models"].as_array().unwrap() {
        assert_eq!(model["state"], "loaded", "{model}");
    }
    let (a, b) = (
        main.header("x-kvrun-session").unwrap(),
        small.header("x-kvrun-session").unwrap(),
    );
    assert_ne!(a, b);
}
