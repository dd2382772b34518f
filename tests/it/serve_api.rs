//! The server's APIs over real HTTP, against `kvrun serve` on real llama.cpp: the tiny
//! model for shapes, tool calls, errors and the store, the default model (Gemma 3) for a
//! Claude-Code-shaped conversation.

use crate::common::server;

use std::time::Duration;

use crate::common::*;
use serde_json::{json, Value};
use server::{Reply as Answer, Server};

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

#[test]
fn openai_chat_whole_and_streamed() {
    let home = Home::new();
    let server = serve_tiny(&home);
    let whole = server.post("/v1/chat/completions", &chat("hello there", 6), &[]);
    assert_ok(&whole);
    let body = whole.json();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    let usage = &body["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 0, "{usage}");
    assert!(usage["completion_tokens"].as_u64().unwrap() <= 6, "{usage}");
    assert!(
        usage["prompt_tokens_details"]["cached_tokens"].is_u64(),
        "{usage}"
    );
    assert!(whole.header("x-kvrun-session").is_some());

    let mut streamed = chat("hello there", 6);
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let answer = server.post("/v1/chat/completions", &streamed, &[]);
    assert_ok(&answer);
    let events = events(&answer);
    assert_eq!(events.last().unwrap().1, "[DONE]");
    let chunks = event_data(&answer);
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    let finish = chunks
        .iter()
        .find_map(|c| c["choices"][0]["finish_reason"].as_str())
        .expect("a finish_reason");
    assert!(["stop", "length"].contains(&finish), "{finish}");
    let usage = &chunks.last().unwrap()["usage"];
    assert!(usage["completion_tokens"].as_u64().unwrap() <= 6, "{usage}");

    let completion = server.post(
        "/v1/completions",
        &json!({"prompt": "the cache", "max_tokens": 4, "temperature": 0}),
        &[],
    );
    assert_ok(&completion);
    assert_eq!(completion.json()["object"], "text_completion");
    // Completions name their session as every other API does, streamed or not.
    assert!(completion.header("x-kvrun-session").is_some());
    let streamed = server.post(
        "/v1/completions",
        &json!({"prompt": "the cache", "max_tokens": 2, "stream": true}),
        &[],
    );
    assert_ok(&streamed);
    assert!(streamed.header("x-kvrun-session").is_some());
    let ids = server.post(
        "/v1/completions",
        &json!({"prompt": [1, 5, 9], "max_tokens": 2}),
        &[],
    );
    assert_ok(&ids);

    // Ids a client can type: the alias, then the file's stem, with the context's size.
    let models = server.get("/v1/models", &[]);
    assert_ok(&models);
    let data = &models.json()["data"];
    assert_eq!(data[0]["id"], "test-model", "{data}");
    assert_eq!(data[1]["id"], "tiny-llama", "{data}");
    assert!(data[0]["context_length"].as_u64().unwrap() > 0, "{data}");
    let stem = server.get("/v1/models/tiny-llama", &[]);
    assert_ok(&stem);
    assert_eq!(stem.json()["id"], "tiny-llama");
    let unknown = server.get("/v1/models/gpt-4o", &[]);
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json()["error"]["code"], "model_not_found");
}

/// Unknown paths and wrong methods answer in the API's error shape, never an empty body.
#[test]
fn unknown_routes_and_methods_answer_in_the_apis_error_shape() {
    let home = Home::new();
    let server = serve_tiny(&home);
    let embeddings = server.post("/v1/embeddings", &json!({"input": "x"}), &[]);
    assert_eq!(embeddings.status, 404);
    assert!(
        embeddings.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("/v1/embeddings"),
        "{}",
        embeddings.json()
    );
    let get_chat = server.get("/v1/chat/completions", &[]);
    assert_eq!(get_chat.status, 405);
    assert_eq!(get_chat.json()["error"]["code"], "method_not_allowed");
    let get_messages = server.get("/v1/messages", &[]);
    assert_eq!(get_messages.status, 405);
    assert_eq!(
        get_messages.json()["type"],
        "error",
        "{}",
        get_messages.json()
    );
}

#[test]
fn forced_tool_calls_in_every_api() {
    let home = Home::new();
    let server = serve_tiny(&home);
    let mut request = chat("weather in Oslo?", 200);
    request["tools"] = json!([weather_tool_openai(), {"type": "web_search"}]);
    request["tool_choice"] = json!({"type": "function", "function": {"name": "get_weather"}});
    let answer = server.post("/v1/chat/completions", &request, &[]);
    assert_ok(&answer);
    let choice = &answer.json()["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls", "{choice}");
    let call = &choice["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "get_weather");
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    assert!(args["city"].is_string(), "{args}");

    request["stream"] = json!(true);
    let streamed = server.post("/v1/chat/completions", &request, &[]);
    assert_ok(&streamed);
    let delta_call = event_data(&streamed)
        .into_iter()
        .find_map(|c| {
            c["choices"][0]["delta"]["tool_calls"][0]
                .as_object()
                .cloned()
        })
        .expect("a tool_calls delta");
    assert_eq!(delta_call["function"]["name"], "get_weather");

    let anthropic_tool = json!({"name": "get_weather", "description": "The weather",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}}});
    let mut message = json!({
        "model": "claude-x", "max_tokens": 200, "temperature": 0,
        "messages": [{"role": "user", "content": "weather in Oslo?"}],
        "tools": [anthropic_tool, {"type": "web_search_20250305", "name": "web_search"}],
        "tool_choice": {"type": "tool", "name": "get_weather"},
    });
    let answer = server.post("/v1/messages", &message, &[]);
    assert_ok(&answer);
    let body = answer.json();
    assert_eq!(body["stop_reason"], "tool_use", "{body}");
    let tool_use = body["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .expect("a tool_use block")
        .clone();
    assert_eq!(tool_use["name"], "get_weather");
    assert!(tool_use["input"]["city"].is_string(), "{tool_use}");
    assert!(tool_use["id"].as_str().unwrap().starts_with("toolu_"));

    message["stream"] = json!(true);
    let streamed = server.post("/v1/messages?beta=true", &message, &[]);
    assert_ok(&streamed);
    let partial = event_data(&streamed)
        .into_iter()
        .find(|e| e["delta"]["type"] == "input_json_delta")
        .expect("an input_json_delta");
    let input: Value =
        serde_json::from_str(partial["delta"]["partial_json"].as_str().unwrap()).unwrap();
    assert!(input["city"].is_string(), "{input}");

    let mut response = json!({
        "model": "codex", "input": "weather in Oslo?", "max_output_tokens": 200, "temperature": 0,
        "tools": [{"type": "function", "name": "get_weather", "description": "The weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}}},
            {"type": "web_search"}],
        "tool_choice": {"type": "function", "name": "get_weather"},
        "store": false,
    });
    let answer = server.post("/v1/responses", &response, &[]);
    assert_ok(&answer);
    let body = answer.json();
    let call = body["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .expect("a function_call item")
        .clone();
    assert_eq!(call["name"], "get_weather");
    let args: Value = serde_json::from_str(call["arguments"].as_str().unwrap()).unwrap();
    assert!(args["city"].is_string(), "{args}");

    response["stream"] = json!(true);
    let streamed = server.post("/v1/responses", &response, &[]);
    assert_ok(&streamed);
    let names = event_names(&streamed);
    assert_eq!(names.first().map(String::as_str), Some("response.created"));
    assert_eq!(names.last().map(String::as_str), Some("response.completed"));
    for expected in [
        "response.in_progress",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} missing from {names:?}"
        );
    }
}

#[test]
fn second_call_of_a_conversation_reads_the_cache() {
    let home = Home::new();
    let server = serve_tiny(&home);
    let long_system = "the model will answer the question. ".repeat(80);
    let request = |user: &str| {
        json!({"messages": [{"role": "system", "content": long_system},
            {"role": "user", "content": user}], "max_tokens": 2, "temperature": 0})
    };
    let header = [("X-Session-Id", "cache-test")];
    let first = server.post("/v1/chat/completions", &request("hello"), &header);
    assert_ok(&first);
    assert_eq!(first.header("x-kvrun-session").unwrap(), "cache-test");
    let second = server.post("/v1/chat/completions", &request("thanks"), &header);
    let cached = second.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(cached > 200, "cached {cached}: {}", second.body);

    // The same prefix through Anthropic, anonymous: found by content.
    let message = json!({"max_tokens": 2, "temperature": 0, "system": long_system,
        "messages": [{"role": "user", "content": "ok"}]});
    server.post("/v1/messages", &message, &[]);
    let again = server.post("/v1/messages", &message, &[]).json();
    let usage = &again["usage"];
    let read = usage["cache_read_input_tokens"].as_u64().unwrap();
    assert!(read > 200, "{usage}");
    let counted = server
        .post("/v1/messages/count_tokens", &message, &[])
        .json()["input_tokens"]
        .as_u64()
        .unwrap();
    assert_eq!(
        counted,
        read + usage["input_tokens"].as_u64().unwrap(),
        "{usage}"
    );
}

#[test]
fn previous_response_id_survives_a_restart() {
    let home = Home::new();
    let server = serve_tiny(&home);
    let first = server.post(
        "/v1/responses",
        &json!({"input": "the model will answer the question. ".repeat(40), "instructions": "be brief",
            "max_output_tokens": 3, "temperature": 0}),
        &[],
    );
    assert_ok(&first);
    let first = first.json();
    let id = first["id"].as_str().unwrap().to_string();
    assert_eq!(
        first["status"]
            .as_str()
            .map(|s| s == "completed" || s == "incomplete"),
        Some(true)
    );
    assert!(server.terminate(Duration::from_secs(30)).success());

    let server = serve_tiny(&home);
    let fetched = server.get(&format!("/v1/responses/{id}"), &[]);
    assert_ok(&fetched);
    assert_eq!(fetched.json()["id"], id);
    let next = server.post(
        "/v1/responses",
        &json!({"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "and then?"}]}],
            "instructions": "be brief", "previous_response_id": id, "max_output_tokens": 3, "stream": true}),
        &[],
    );
    assert_ok(&next);
    let events = event_data(&next);
    let completed = events.last().unwrap();
    assert_eq!(completed["type"], "response.completed", "{}", next.body);
    let usage = &completed["response"]["usage"];
    let cached = usage["input_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    assert!(
        cached > 100,
        "after a restart the prefix comes from the store: {usage}"
    );
    assert_eq!(completed["response"]["previous_response_id"], id);

    let deleted = server::agent()
        .delete(format!("{}/v1/responses/{id}", server.url))
        .call()
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 200);
    assert_eq!(server.get(&format!("/v1/responses/{id}"), &[]).status, 404);
}

/// Status, and whether the body is in the API's error shape.
fn error_of(answer: &Answer, anthropic: bool) -> (u16, String) {
    let body = answer.json();
    let message = if anthropic {
        assert_eq!(body["type"], "error", "{body}");
        assert!(body["error"]["type"].is_string(), "{body}");
        body["error"]["message"].as_str().unwrap().to_string()
    } else {
        assert!(body["error"]["type"].is_string(), "{body}");
        assert!(
            body["error"].get("param").is_some() && body["error"].get("code").is_some(),
            "{body}"
        );
        body["error"]["message"].as_str().unwrap().to_string()
    };
    (answer.status, message)
}

#[test]
fn bad_input_gets_each_apis_error_shape() {
    let home = Home::new();
    let server = serve_tiny(&home);
    let too_long = "hello ".repeat(6000);
    let cases: Vec<(&str, String, u16, &str)> = vec![
        ("/v1/chat/completions", "{\"messages\": [".into(), 400, "not valid JSON"),
        ("/v1/chat/completions", json!({"messages": "hi"}).to_string(), 400, "wrong type"),
        ("/v1/chat/completions", json!({"messages": [{"role": "wizard", "content": "x"}]}).to_string(), 400, "unknown role"),
        ("/v1/chat/completions", json!({"messages": []}).to_string(), 400, "no messages"),
        ("/v1/chat/completions", json!({"messages": [{"role": "user", "content": "x"}], "n": 2}).to_string(), 400, "n must be 1"),
        ("/v1/chat/completions", json!({"messages": [{"role": "user", "content": too_long}]}).to_string(), 400, "tokens"),
        ("/v1/chat/completions", json!({"messages": [{"role": "user", "content": "x"}], "temperature": "hot"}).to_string(), 400, "wrong type"),
        ("/v1/chat/completions", json!({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}).to_string(), 400, "text only"),
        ("/v1/completions", json!({"prompt": [1, 99999999]}).to_string(), 400, "vocabulary"),
        ("/v1/responses", "not json".into(), 400, "not valid JSON"),
        ("/v1/responses", json!({"input": "x", "previous_response_id": "resp_000000000000000000000000"}).to_string(), 400, "not found"),
        ("/v1/responses", json!({"input": "x", "previous_response_id": "../../etc/passwd"}).to_string(), 400, "not found"),
        ("/v1/messages", "{".into(), 400, "not valid JSON"),
        ("/v1/messages", json!({"messages": [{"role": "user", "content": "x"}]}).to_string(), 400, "max_tokens"),
        ("/v1/messages", json!({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}).to_string(), 400, "text only"),
        ("/v1/messages", json!({"max_tokens": 5, "messages": [{"role": "user", "content": too_long}]}).to_string(), 400, "tokens"),
        ("/v1/messages", json!({"max_tokens": 5, "messages": []}).to_string(), 400, "no messages"),
    ];
    for (path, body, status, needle) in cases {
        let answer = server.post_bytes(path, body.clone().into_bytes(), &[]);
        let (got, message) = error_of(&answer, path.starts_with("/v1/messages"));
        assert_eq!(got, status, "{path} {body:.80}: {}", answer.body);
        assert!(message.contains(needle), "{path} {body:.80}: {message}");
    }
    let missing = server.get("/v1/responses/resp_000000000000000000000000", &[]);
    assert_eq!(error_of(&missing, false).0, 404);
}

#[test]
fn claude_code_shaped_request_reads_the_cache_despite_its_billing_block() {
    let home = Home::new();
    let server = serve(&home, &default_model());
    let rules: String = (1..=40)
        .map(|i| format!("Rule {i}: read the file before editing it, and keep changes small.\n"))
        .collect();
    let request = |version: &str, user: &str| {
        json!({
            "model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
            "metadata": {"user_id": "{\"device_id\":\"d\",\"account_uuid\":\"\",\"session_id\":\"0b9c6f52-1a2b-4c3d-9e8f-0123456789ab\"}"},
            "system": [
                {"type": "text", "text": format!("x-anthropic-billing-header: cc_version=2.1.328.{version}; cc_entrypoint=sdk-cli;")},
                {"type": "text", "text": format!("You are Claude Code.\n{rules}"), "cache_control": {"type": "ephemeral"}},
            ],
            "tools": [{"name": "Read", "description": "Read a file", "input_schema": {"type": "object",
                "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}}],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>be careful</system-reminder>"},
                {"type": "text", "text": user}]}],
            "temperature": 0, "top_k": 1,
        })
    };
    let headers = [
        ("anthropic-version", "2023-06-01"),
        ("anthropic-beta", "claude-code-20250219,some-future-beta"),
        ("x-api-key", "anything"),
    ];
    let mut first_request = request("8a1", "hi");
    first_request["max_tokens"] = json!(4);
    let first = server.post("/v1/messages?beta=true", &first_request, &headers);
    assert_ok(&first);
    let names = event_names(&first);
    assert_eq!(names.first().map(String::as_str), Some("message_start"));
    assert_eq!(names.get(1).map(String::as_str), Some("ping"));
    assert_eq!(names.last().map(String::as_str), Some("message_stop"));
    assert!(names.iter().any(|n| n == "message_delta"), "{names:?}");
    assert_eq!(
        first.header("x-kvrun-session").unwrap(),
        "0b9c6f52-1a2b-4c3d-9e8f-0123456789ab"
    );

    let mut second_request = request("ccf", "and now?");
    second_request["max_tokens"] = json!(4);
    let second = server.post("/v1/messages?beta=true", &second_request, &headers);
    assert_ok(&second);
    let start = &event_data(&second)[0];
    let usage = &start["message"]["usage"];
    let read = usage["cache_read_input_tokens"].as_u64().unwrap();
    // The rules alone are ~600 tokens; with the billing block rendered, the prompts would
    // differ after ~15 tokens.
    assert!(read > 500, "{usage}");
    let delta = event_data(&second)
        .into_iter()
        .find(|e| e["type"] == "message_delta")
        .unwrap();
    assert!(
        delta["usage"]["output_tokens"].as_u64().unwrap() <= 4,
        "{delta}"
    );

    // What the agents also send: a system message among Claude Code's turns, and Codex's
    // two developer and two user messages (rendered for Gemma's alternating template).
    let mut with_system = request("ccf", "and now?");
    with_system["messages"] = json!([
        {"role": "user", "content": "hi"},
        {"role": "system", "content": "Available agent types: general."},
        {"role": "user", "content": "go"},
    ]);
    with_system["stream"] = json!(false);
    with_system["max_tokens"] = json!(2);
    assert_ok(&server.post("/v1/messages", &with_system, &headers));
    let codex = json!({"model": "codex", "instructions": "", "store": false, "max_output_tokens": 2,
    "input": [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are Codex."}]},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Sandbox: none."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context/>"}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
    ]});
    assert_ok(&server.post("/v1/responses", &codex, &[("session-id", "codex-run")]));
}

/// The value of a counter in `/metrics`.
fn metric(server: &Server, name: &str) -> u64 {
    let text = server.get("/metrics", &[]).body;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{text}"))
}

#[test]
fn an_early_divergence_is_logged_and_counted() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &["--ctx-size", "4096", "-v"]);
    let body = |date: &str| {
        json!({"messages": [
            {"role": "system", "content": format!("Today is {date}. {}", "the model will answer. ".repeat(80))},
            {"role": "user", "content": "hello"}], "max_tokens": 2})
    };
    let header = [("X-Session-Id", "volatile")];
    assert_ok(&server.post("/v1/chat/completions", &body("Monday"), &header));
    assert_eq!(metric(&server, "kvrun_early_prefix_misses_total"), 0);
    assert_ok(&server.post("/v1/chat/completions", &body("Tuesday"), &header));
    assert_eq!(metric(&server, "kvrun_early_prefix_misses_total"), 1);
    let log = server.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("prompt diverged"))
        .unwrap_or_else(|| panic!("no divergence logged:\n{log}"));
    assert!(
        line.contains("Tuesday") && line.contains("Monday"),
        "{line}"
    );
    assert_eq!(metric(&server, "kvrun_volatile_prefix_misses_total"), 0);

    // A new conversation with the same long system prompt but another date: nothing is
    // cached past the date, and the diagnostic names the conversation it nearly matched.
    let other = [("X-Session-Id", "volatile-2")];
    assert_ok(&server.post("/v1/chat/completions", &body("Wednesday"), &other));
    assert_eq!(metric(&server, "kvrun_volatile_prefix_misses_total"), 1);
    assert!(metric(&server, "kvrun_volatile_prefix_tokens_total") >= 256);
    let log = server.log_text();
    let line = log
        .lines()
        .find(|l| l.contains("volatile span"))
        .unwrap_or_else(|| panic!("no volatile span logged:\n{log}"));
    assert!(
        line.contains("Wednesday") && line.contains("Monday") && line.contains("\"volatile\""),
        "{line}"
    );
    // A new conversation that shares nothing long is not reported.
    let unrelated = json!({"messages": [{"role": "user", "content": "something else entirely"}],
        "max_tokens": 2});
    assert_ok(&server.post(
        "/v1/chat/completions",
        &unrelated,
        &[("X-Session-Id", "other")],
    ));
    assert_eq!(metric(&server, "kvrun_volatile_prefix_misses_total"), 1);
}

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

/// An object schema of 300 integer properties: its grammar allows no end of generation
/// for thousands of tokens, so only a cancel or a shutdown ends such a reply early.
fn long_schema() -> Value {
    let properties: serde_json::Map<String, Value> = (0..300)
        .map(|i| (format!("p{i:03}"), json!({"type": "integer"})))
        .collect();
    json!({"type": "object", "properties": properties})
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

#[test]
fn anthropic_names_the_stop_sequence_that_matched() {
    let home = Home::new();
    let server = serve_tiny(&home);
    let body = |stops: Value, stream: bool| {
        json!({"model": "m", "max_tokens": 12, "temperature": 0, "stream": stream,
            "stop_sequences": stops, "messages": [{"role": "user", "content": "count"}]})
    };
    let text_of = |answer: &Answer| {
        answer.json()["content"][0]["text"]
            .as_str()
            .map(String::from)
    };
    let free = server.post("/v1/messages", &body(json!([]), false), &[]);
    assert_ok(&free);
    let text = text_of(&free).unwrap_or_default();
    let chars: Vec<char> = text.chars().collect();
    assert!(
        chars.len() >= 4,
        "the greedy reply is too short to cut: {text:?}"
    );
    // A stop taken from the middle of the greedy reply, listed after one that never occurs.
    let stop: String = chars[2..4].iter().collect();
    let before = &text[..text.find(&stop).unwrap()];
    let stops = json!(["\u{1}never", stop]);

    let cut = server.post("/v1/messages", &body(stops.clone(), false), &[]);
    assert_ok(&cut);
    let reply = cut.json();
    assert_eq!(reply["stop_reason"], "stop_sequence", "{reply}");
    assert_eq!(reply["stop_sequence"], stop.as_str(), "{reply}");
    assert_eq!(text_of(&cut).unwrap_or_default(), before, "{reply}");

    let streamed = server.post("/v1/messages", &body(stops, true), &[]);
    assert_ok(&streamed);
    let delta = event_data(&streamed)
        .into_iter()
        .find(|e| e["type"] == "message_delta")
        .unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "stop_sequence", "{delta}");
    assert_eq!(delta["delta"]["stop_sequence"], stop.as_str(), "{delta}");
}

/// One client key, several conversations (opencode's title and main requests): each
/// request goes to the member whose log its prompt extends, a prompt that extends none
/// starts a new member instead of overwriting one, and members decode side by side.
#[test]
fn a_client_key_names_a_family_of_conversations() {
    let home = Home::new();
    let server = Server::start(
        &home,
        &tiny_model(),
        &["--ctx-size", "4096", "--parallel", "2"],
    );
    let key = [("x-session-id", "ses_family")];
    let cached = |a: &Answer| a.json()["usage"]["prompt_tokens_details"]["cached_tokens"].clone();
    // The main conversation decodes a long reply...
    let mut main = chat("write the plan", 2000);
    main["stream"] = json!(true);
    main["response_format"] =
        json!({"type": "json_schema", "json_schema": {"name": "long", "schema": long_schema()}});
    let body = main.to_string();
    let streaming = server::agent()
        .post(format!("{}/v1/chat/completions", server.url))
        .header("content-type", "application/json")
        .header("x-session-id", "ses_family")
        .send(body)
        .unwrap();
    assert_eq!(streaming.status().as_u16(), 200);
    assert_eq!(
        streaming.headers().get("x-kvrun-session").unwrap(),
        "ses_family"
    );
    // ...while a title request under the same key, sharing nothing, is answered beside it.
    let title = |content: &str| {
        json!({"model": "m", "max_tokens": 4, "temperature": 0, "messages": [
            {"role": "system", "content": "You are a title generator. Reply with a title."},
            {"role": "user", "content": content}]})
    };
    let first = server.post("/v1/chat/completions", &title("a plan for the week"), &key);
    assert_ok(&first);
    assert_eq!(first.header("x-kvrun-session"), Some("ses_family.2"));
    let stats = server.get("/v1/kvrun/stats", &[]).json();
    assert_eq!(
        stats["stats"]["active"], 1,
        "the main reply still decodes: {stats}"
    );
    drop(streaming);
    // A turn that extends the title conversation continues it, from its cells.
    let mut next = title("a plan for the week");
    next["messages"].as_array_mut().unwrap().extend([
        json!({"role": "assistant", "content": first.json()["choices"][0]["message"]["content"]}),
        json!({"role": "user", "content": "shorter"}),
    ]);
    let second = server.post("/v1/chat/completions", &next, &key);
    assert_ok(&second);
    assert_eq!(second.header("x-kvrun-session"), Some("ses_family.2"));
    assert!(cached(&second).as_u64().unwrap() > 0, "{}", second.body);
    // A request that extends neither starts a third member; the others are kept.
    let other = server.post("/v1/chat/completions", &chat("something else", 2), &key);
    assert_ok(&other);
    assert_eq!(other.header("x-kvrun-session"), Some("ses_family.3"));
    let status = server.terminate(Duration::from_secs(30));
    assert_eq!(status.code(), Some(0));
    let listed = crate::common::run_json(&home, &["session", "ls"]);
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    for member in ["ses_family", "ses_family.2", "ses_family.3"] {
        assert!(names.contains(&member), "{member} missing: {names:?}");
    }
    // After a restart, the title conversation's next turn finds its member on disk.
    let server = Server::start(&home, &tiny_model(), &["--ctx-size", "4096"]);
    let again = server.post("/v1/chat/completions", &next, &key);
    assert_ok(&again);
    assert_eq!(again.header("x-kvrun-session"), Some("ses_family.2"));
    assert!(cached(&again).as_u64().unwrap() > 0, "{}", again.body);
}

/// A conversation that returns after a restart is served from its own save to the token:
/// its whole pages and its tail (the partial last page, which no other session can name by
/// content), not just the whole pages.
#[test]
fn a_returning_conversation_restores_its_partial_last_page_too() {
    let home = Home::new();
    let key = [("x-session-id", "returning")];
    // Token ids, so the next turn extends the log exactly: two whole pages and a tail.
    let prompt: Vec<u32> = (0..700).map(|i| 3 + (i * 7) % 250).collect();
    let server = serve_tiny(&home);
    let first = server.post(
        "/v1/completions",
        &json!({"prompt": prompt, "max_tokens": 8, "temperature": 0}),
        &key,
    );
    assert_ok(&first);
    assert_eq!(server.terminate(Duration::from_secs(30)).code(), Some(0));
    // The log as saved: the prompt and the reply; the next turn extends it.
    let catalog =
        kvrun::session::SessionCatalog::open(&kvrun::paths::Paths::under(home.path())).unwrap();
    let saved = catalog.read_manifest("returning").unwrap();
    let kv_len = saved.snapshot.as_ref().unwrap().kv_len;
    assert!(
        kv_len > 700 && !kv_len.is_multiple_of(256),
        "{kv_len} tokens of KV"
    );
    let mut next: Vec<i32> = saved.tokens.clone();
    next.extend([40, 41, 42]);

    let server = serve_tiny(&home);
    let again = server.post(
        "/v1/completions",
        &json!({"prompt": next, "max_tokens": 2, "temperature": 0}),
        &key,
    );
    assert_ok(&again);
    assert_eq!(again.header("x-kvrun-session"), Some("returning"));
    let cached = again.json()["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(cached, kv_len, "{}", again.body);
}
