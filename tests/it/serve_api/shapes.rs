//! Each API's reply and error shapes: whole and streamed, forced tool calls, unknown
//! routes, bad input, and the stop sequence that matched.

use serde_json::{json, Value};

use super::*;
use crate::common::*;

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
