//! The server's APIs over real HTTP, against `kvrun serve` on real llama.cpp: the tiny
//! model for shapes, tool calls, errors, the sessions API and the store, the default model
//! (Gemma 3) for a Claude-Code-shaped conversation. One module per concern; this file holds
//! what they share.

mod cache;
mod cancel;
mod sessions;
mod shapes;

use serde_json::{json, Value};

use crate::common::server::{Reply as Answer, Server};
use crate::common::{tiny_model, Home};

/// `kvrun serve` on `model` with room for the tests' prompts.
fn serve(home: &Home, model: &std::path::Path) -> Server {
    let args = [
        "--alias",
        "test-model",
        "--ctx-size",
        "4096",
        "--parallel",
        "2",
    ];
    Server::start(home, model, &args)
}

fn serve_tiny(home: &Home) -> Server {
    serve(home, &tiny_model())
}

/// A body as SSE events: (event name, data).
fn events(answer: &Answer) -> Vec<(Option<String>, String)> {
    let mut events = Vec::new();
    for block in answer.body.split("\n\n") {
        let mut name = None;
        let mut data = Vec::new();
        for line in block.lines() {
            if let Some(n) = line.strip_prefix("event:") {
                name = Some(n.trim().to_string());
            } else if let Some(d) = line.strip_prefix("data:") {
                data.push(d.strip_prefix(' ').unwrap_or(d).to_string());
            }
        }
        if !data.is_empty() {
            events.push((name, data.join("\n")));
        }
    }
    events
}

/// The JSON data of every event (OpenAI's `[DONE]` left out).
fn event_data(answer: &Answer) -> Vec<Value> {
    events(answer)
        .into_iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(&d).unwrap_or_else(|e| panic!("{e}: {d}")))
        .collect()
}

fn event_names(answer: &Answer) -> Vec<String> {
    events(answer).into_iter().filter_map(|(n, _)| n).collect()
}

fn weather_tool_openai() -> Value {
    json!({"type": "function", "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}},
    }})
}

fn chat(content: &str, max_tokens: u64) -> Value {
    json!({
        "model": "whatever-the-client-says",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "temperature": 0,
        "some_future_field": {"ignored": true},
    })
}

fn assert_ok(answer: &Answer) {
    assert_eq!(answer.status, 200, "{}", answer.body);
}

/// An object schema of 300 integer properties: its grammar allows no end of generation
/// for thousands of tokens, so only a cancel or a shutdown ends such a reply early.
fn long_schema() -> Value {
    let properties: serde_json::Map<String, Value> = (0..300)
        .map(|i| (format!("p{i:03}"), json!({"type": "integer"})))
        .collect();
    json!({"type": "object", "properties": properties})
}
