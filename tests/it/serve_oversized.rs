//! Bodies too large for the context are refused from their size, before the chat template or
//! the tokenizer runs, on every path that renders a prompt: the refusal names the bytes or
//! the messages that cannot fit (the rendered prompt's own check comes later and says so
//! differently).

use serde_json::json;

use crate::common::server::Server;
use crate::common::{chat_model, Home};

/// Words that tokenize to about one token each; megabytes of them are far past any context.
fn words(bytes: usize) -> String {
    "lorem ipsum dolor sit amet ".repeat(bytes / 27)
}

#[test]
fn over_context_bodies_are_refused_before_rendering() {
    let home = Home::new();
    let server = Server::start(&home, &chat_model(), &[]);
    let big = words(8 << 20);
    let anthropic = |text: &str| json!({"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": text}]});
    let cases = [
        (
            "/v1/chat/completions",
            json!({"model": "m", "messages": [{"role": "user", "content": big}]}),
        ),
        (
            "/v1/chat/completions",
            json!({"model": "m", "messages": [{"role": "user", "content": [{"type": "text", "text": big}]}]}),
        ),
        ("/v1/responses", json!({"model": "m", "input": big})),
        (
            "/v1/responses",
            json!({"model": "m", "instructions": big, "input": "hi"}),
        ),
        ("/v1/messages", anthropic(&big)),
        ("/v1/messages/count_tokens", anthropic(&big)),
        (
            "/v1/messages",
            json!({"model": "m", "max_tokens": 4, "system": big, "messages": [{"role": "user", "content": "hi"}]}),
        ),
    ];
    for (path, body) in &cases {
        let reply = server.post(path, body, &[]);
        assert_eq!(reply.status, 400, "{path}: {}", reply.body);
        let body = reply.json();
        let message = if path.starts_with("/v1/messages") {
            assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
            body["error"]["message"].as_str().unwrap().to_string()
        } else {
            assert_eq!(body["error"]["code"], "context_length_exceeded", "{body}");
            assert_eq!(body["error"]["param"], "messages", "{body}");
            body["error"]["message"].as_str().unwrap().to_string()
        };
        assert!(
            message.contains("content is") && message.contains("at least"),
            "{path}: {message}"
        );
    }

    // Many short messages: each is a turn's markup at least.
    let many: Vec<_> = (0..20_000)
        .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": "a"}))
        .collect();
    let reply = server.post(
        "/v1/chat/completions",
        &json!({"model": "m", "messages": many}),
        &[],
    );
    assert_eq!(reply.status, 400, "{}", reply.body);
    let message = reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("20000 messages"), "{message}");

    // Completions: a prompt's length alone refuses it too.
    let reply = server.post(
        "/v1/completions",
        &json!({"model": "m", "prompt": big, "max_tokens": 1}),
        &[],
    );
    assert_eq!(reply.status, 400, "{}", reply.body);
    assert_eq!(reply.json()["error"]["code"], "context_length_exceeded");

    // A request that fits is served as before.
    let reply = server.post(
        "/v1/chat/completions",
        &json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}),
        &[],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
}
