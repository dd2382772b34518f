//! `serve --durability`: with `before` (the default) a reply's final event is sent once its
//! save is on disk, so a `kill -9` the instant the client reads it loses nothing; with
//! `after` the save lands shortly after. A save that fails (the store's objects folder made a
//! regular file, for real) is told to the client in a header or the final event, counted in
//! /metrics, and named without the server's folders.

use crate::common::server;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use crate::common::{tiny_model, Home};
use serde_json::{json, Value};
use server::Server;

fn chat(text: &str, max_tokens: u32, stream: bool) -> Value {
    json!({
        "model": "anything",
        "messages": [{"role": "user", "content": text}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "stream": stream,
        "stream_options": {"include_usage": true},
    })
}

/// The session's tokens as `kvrun session ls` reads them from disk (0: not saved).
fn saved_tokens(home: &Home, name: &str) -> u64 {
    let listed = crate::common::run_json(home, &["session", "ls"]);
    listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .and_then(|s| s["tokens"].as_u64())
        .unwrap_or(0)
}

/// Streams `body` to the chat API and returns the data events up to and including the
/// final one (the usage chunk), leaving the connection open: the caller acts before any
/// later byte is read.
fn stream_to_final_event(server: &Server, session: &str, body: &Value) -> (Vec<Value>, impl Sized) {
    let response = server::agent()
        .post(format!("{}/v1/chat/completions", server.url))
        .header("x-session-id", session)
        .send_json(body)
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut reader = BufReader::new(response.into_body().into_reader());
    let mut events = Vec::new();
    loop {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the stream ended early"
        );
        let Some(data) = line.trim_end().strip_prefix("data: ") else {
            continue;
        };
        assert_ne!(data, "[DONE]", "no usage chunk before [DONE]: {events:?}");
        let event: Value = serde_json::from_str(data).unwrap();
        let last = !event["usage"].is_null();
        events.push(event);
        if last {
            return (events, reader);
        }
    }
}

#[test]
fn with_durability_before_a_kill_9_at_the_final_event_keeps_the_turn() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &["--durability", "before"]);
    let body = chat("name three colours of the sea", 6, true);
    let (events, connection) = stream_to_final_event(&server, "durable", &body);
    server.kill9();
    drop(connection);
    let usage = &events.last().unwrap()["usage"];
    let prompt = usage["prompt_tokens"].as_u64().unwrap();
    let generated = usage["completion_tokens"].as_u64().unwrap();
    assert!(generated > 0, "{usage}");
    // The reply's tokens are in the log on disk, not only the prompt's.
    let tokens = saved_tokens(&home, "durable");
    assert!(
        tokens >= prompt + generated - 1 && tokens > prompt,
        "the turn was lost: {tokens} tokens saved for a {prompt}-token prompt and {generated} \
         generated"
    );
    let finish = events
        .iter()
        .find(|e| e["choices"][0]["finish_reason"].is_string())
        .expect("no finish chunk");
    assert_eq!(finish["kvrun"]["saved"], json!(true), "{finish}");
    assert_eq!(finish["kvrun"]["session"], json!("durable"), "{finish}");
}

#[test]
fn with_durability_after_the_turn_is_saved_shortly_after() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &["--durability", "after"]);
    let body = chat("name three colours of the sea", 6, true);
    let (events, connection) = stream_to_final_event(&server, "later", &body);
    drop(connection);
    let usage = &events.last().unwrap()["usage"];
    let prompt = usage["prompt_tokens"].as_u64().unwrap();
    assert!(
        events.iter().all(|e| e.get("kvrun").is_none()),
        "an after-mode stream said what it could not know: {events:?}"
    );
    let whole = server.post(
        "/v1/chat/completions",
        &chat("and of the sky", 4, false),
        &[("x-session-id", "later-2")],
    );
    assert_eq!(whole.status, 200, "{}", whole.body);
    assert_eq!(whole.header("x-kvrun-save"), None);
    let deadline = Instant::now() + Duration::from_secs(60);
    while saved_tokens(&home, "later") <= prompt {
        assert!(
            Instant::now() < deadline,
            "the turn was not saved in a minute"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server.terminate(Duration::from_secs(60));
}

#[test]
fn a_failed_save_is_told_to_the_client_counted_and_names_no_server_folder() {
    let home = Home::new();
    // The default durability, `before`.
    let server = Server::start(&home, &tiny_model(), &[]);
    let first = chat("a short question about rivers", 3, false);
    let r = server.post("/v1/chat/completions", &first, &[("x-session-id", "full")]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("x-kvrun-save"), Some("ok"), "{:?}", r.headers);
    // The store's objects folder becomes a regular file: every object write fails, as on
    // a full or broken disk.
    let objects = home.path().join("kv").join("objects");
    std::fs::rename(&objects, home.path().join("objects-away")).unwrap();
    std::fs::write(&objects, b"not a folder").unwrap();
    let home_text = home.path().to_str().unwrap().to_string();

    // Non-streamed: the headers say so.
    let mut second = first.clone();
    second["messages"] = json!([
        first["messages"][0],
        {"role": "assistant", "content": r.json()["choices"][0]["message"]["content"]},
        {"role": "user", "content": "and of lakes?"},
    ]);
    let r = server.post("/v1/chat/completions", &second, &[("x-session-id", "full")]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("x-kvrun-save"), Some("failed"), "{:?}", r.headers);
    let reason = r
        .header("x-kvrun-save-error")
        .expect("no x-kvrun-save-error");
    assert!(reason.contains("'full'"), "{reason}");
    assert!(!reason.contains(&home_text), "{reason}");
    assert!(!r.body.contains(&home_text), "{}", r.body);

    // Streamed, on each API: the final event carries `kvrun.saved: false`.
    let streamed = [
        ("/v1/chat/completions", {
            let mut b = chat("a third question", 3, true);
            b["messages"][0]["content"] = json!("one more about oceans");
            b
        }),
        (
            "/v1/messages",
            json!({"model": "x", "max_tokens": 3, "stream": true,
                   "messages": [{"role": "user", "content": "tell me of clouds"}]}),
        ),
        (
            "/v1/responses",
            json!({"model": "x", "max_output_tokens": 3, "stream": true,
                   "input": "tell me of rain"}),
        ),
    ];
    for (path, body) in streamed {
        let r = server.post(path, &body, &[]);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert!(!r.body.contains(&home_text), "{path}: {}", r.body);
        let finals: Vec<Value> = r
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter_map(|d| serde_json::from_str::<Value>(d).ok())
            .filter_map(|e| {
                let ext = e.get("kvrun").or_else(|| e["response"].get("kvrun"));
                ext.cloned()
            })
            .collect();
        assert_eq!(finals.len(), 1, "{path}: one final event says: {}", r.body);
        assert_eq!(finals[0]["saved"], json!(false), "{path}: {}", finals[0]);
        let error = finals[0]["save_error"].as_str().unwrap_or_default();
        assert!(error.contains("failed"), "{path}: {}", finals[0]);
    }

    // The writer thread tells the client before the engine counts the outcome, so the
    // count may trail the reply by a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = server.get("/metrics", &[]).body;
        let failures: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("kvrun_save_failures_total "))
            .unwrap_or_else(|| panic!("no kvrun_save_failures_total:\n{metrics}"))
            .parse()
            .unwrap();
        if failures >= 4 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{failures} failures counted, not 4"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server.kill9();
}
