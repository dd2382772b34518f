//! Replies cut short: a client that disconnects cancels its generation, and SIGTERM ends a
//! reply as an error in each API's own shape.

use std::time::Duration;

use serde_json::{json, Value};

use super::*;
use crate::common::*;

#[test]
fn a_client_that_disconnects_cancels_its_generation() {
    use std::io::Read;
    let home = Home::new();
    let server = serve_tiny(&home);
    // Read to the end, this reply is about 2,700 tokens: only a cancel stops it early.
    let mut request = chat("hello", 3900);
    request["stream"] = json!(true);
    request["response_format"] =
        json!({"type": "json_schema", "json_schema": {"name": "long", "schema": long_schema()}});
    let mut response = server::agent()
        .post(format!("{}/v1/chat/completions", server.url))
        .header("content-type", "application/json")
        .send(request.to_string())
        .unwrap();
    if response.status().as_u16() != 200 {
        panic!("{}", response.body_mut().read_to_string().unwrap());
    }
    let mut reader = response.body_mut().as_reader();
    let mut first = [0u8; 64];
    reader.read_exact(&mut first).unwrap();
    assert!(
        first.starts_with(b"data: {"),
        "{}",
        String::from_utf8_lossy(&first)
    );
    drop(reader);
    drop(response);
    let stats = || server.get("/v1/kvrun/stats", &[]).json()["stats"].clone();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while stats()["active"] != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "still generating: {}",
            stats()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let generated = stats()["generated_tokens"].as_u64().unwrap();
    assert!(
        generated < 1000,
        "the generation ran on after the disconnect: {generated}"
    );
}

/// Opens a streamed request and reads its first bytes (so it is decoding), then hands back
/// a thread that reads the rest.
fn open_stream(server: &Server, path: &str, body: &Value) -> std::thread::JoinHandle<String> {
    use std::io::Read;
    let mut response = server::agent()
        .post(format!("{}{path}", server.url))
        .header("content-type", "application/json")
        .send(body.to_string())
        .unwrap();
    if response.status().as_u16() != 200 {
        panic!("{path}: {}", response.body_mut().read_to_string().unwrap());
    }
    let mut reader = response.body_mut().as_reader();
    let mut first = [0u8; 32];
    reader.read_exact(&mut first).unwrap();
    drop(reader);
    std::thread::spawn(move || {
        let mut rest = String::from_utf8_lossy(&first).into_owned();
        let _ = response.body_mut().as_reader().read_to_string(&mut rest);
        rest
    })
}

/// A reply cut short by SIGTERM ends as an error in each API's own shape, never with
/// `finish_reason: "stop"` or `stop_reason: "end_turn"` as if the model had finished.
#[test]
fn replies_cut_short_by_sigterm_say_so_in_each_api() {
    let home = Home::new();
    // Two replies of up to 1,800 tokens fit the context side by side.
    let server = Server::start(
        &home,
        &tiny_model(),
        &["--ctx-size", "4096", "--parallel", "2"],
    );
    let mut chat_request = chat("hello", 1800);
    chat_request["stream"] = json!(true);
    chat_request["response_format"] =
        json!({"type": "json_schema", "json_schema": {"name": "long", "schema": long_schema()}});
    let openai = open_stream(&server, "/v1/chat/completions", &chat_request);
    // The tool's schema is in the prompt: 60 properties keep it short, and the forced call
    // still runs to hundreds of tokens.
    let properties: serde_json::Map<String, Value> = (0..60)
        .map(|i| (format!("p{i:02}"), json!({"type": "integer"})))
        .collect();
    let anthropic_request = json!({
        "model": "m", "max_tokens": 1800, "stream": true,
        "messages": [{"role": "user", "content": "hello"}],
        "tools": [{"name": "long", "input_schema": {"type": "object", "properties": properties}}],
        "tool_choice": {"type": "tool", "name": "long"},
    });
    let anthropic = open_stream(&server, "/v1/messages", &anthropic_request);
    let status = server.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0), "{status}");
    let openai = openai.join().unwrap();
    assert!(openai.contains("\"reply_interrupted\""), "{openai}");
    assert!(!openai.contains("\"finish_reason\":\"stop\""), "{openai}");
    let anthropic = anthropic.join().unwrap();
    assert!(anthropic.contains("event: error"), "{anthropic}");
    assert!(!anthropic.contains("end_turn"), "{anthropic}");
    // The cut reply is kept, and marked so.
    let listed = crate::common::run_json(&home, &["session", "ls"]);
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["tokens"].as_u64() > Some(0)),
        "{listed}"
    );
}
