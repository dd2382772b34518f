//! Malformed fields are refused with a 400 naming the field, in the API's error shape, as
//! the official APIs do; what real clients send (unknown fields, a field's type checked only
//! where it is given) is still served. One table per API: the probe's cases, each against a
//! well-formed request that is served.

use serde_json::{json, Value};

use crate::common::server::Server;
use crate::common::{tiny_model, Home};

/// `base` with `change` applied (a `null` in `change` removes the key).
fn with(base: &Value, change: Value) -> Value {
    let mut out = base.clone();
    for (key, value) in change.as_object().unwrap() {
        if value.is_null() && key.starts_with('-') {
            out.as_object_mut().unwrap().remove(&key[1..]);
        } else {
            out[key] = value.clone();
        }
    }
    out
}

/// Each case's body gets a 400 whose error names `field`; OpenAI's shape carries it as
/// `param` too.
fn assert_refusals(server: &Server, path: &str, cases: &[(&str, Value, &str)]) {
    for (what, body, field) in cases {
        let reply = server.post(path, body, &[]);
        assert_eq!(reply.status, 400, "{what} on {path}: {}", reply.body);
        let error = reply.json();
        let message = if path.starts_with("/v1/messages") {
            assert_eq!(error["type"], "error", "{what}: {error}");
            assert_eq!(
                error["error"]["type"], "invalid_request_error",
                "{what}: {error}"
            );
            error["error"]["message"].as_str().unwrap().to_string()
        } else {
            assert_eq!(
                error["error"]["type"], "invalid_request_error",
                "{what}: {error}"
            );
            assert_eq!(error["error"]["param"], *field, "{what}: {error}");
            error["error"]["message"].as_str().unwrap().to_string()
        };
        assert!(
            message.contains(field),
            "{what}: {field:?} not in {message:?}"
        );
    }
}

fn assert_served(server: &Server, path: &str, what: &str, body: &Value) {
    let reply = server.post(path, body, &[]);
    assert_eq!(reply.status, 200, "{what} on {path}: {}", reply.body);
}

#[test]
fn chat_completions_refuse_malformed_fields() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &[]);
    let ok = json!({"model": "m", "max_tokens": 2, "temperature": 0,
        "messages": [{"role": "user", "content": "hi"}]});
    let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1",
        "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]});
    let messages = |extra: Vec<Value>| {
        let mut all = vec![json!({"role": "user", "content": "hi"})];
        all.extend(extra);
        with(&ok, json!({"messages": all}))
    };
    let undeclared = json!({"type": "json_schema", "json_schema": {"name": "x",
        "schema": {"type": "object", "required": ["answer"]}}});
    let cases = [
        (
            "response_format: \"x\"",
            with(&ok, json!({"response_format": "x"})),
            "response_format",
        ),
        (
            "required names an undeclared property",
            with(&ok, json!({"response_format": undeclared})),
            "response_format",
        ),
        ("model: null", with(&ok, json!({"model": null})), "model"),
        (
            "a user message without content",
            with(&ok, json!({"messages": [{"role": "user"}]})),
            "messages[0].content",
        ),
        (
            "a user message with content: null",
            with(
                &ok,
                json!({"messages": [{"role": "user", "content": null}]}),
            ),
            "messages[0].content",
        ),
        (
            "a tool message without tool_call_id",
            messages(vec![call.clone(), json!({"role": "tool", "content": "42"})]),
            "messages[2].tool_call_id",
        ),
        (
            "tool-call arguments that are not JSON",
            messages(vec![
                json!({"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "f", "arguments": "{not json"}}]}),
            ]),
            "messages[1].tool_calls[0].function.arguments",
        ),
        ("stop: [\"\"]", with(&ok, json!({"stop": [""]})), "stop"),
        (
            "max_tokens of the wrong type",
            with(&ok, json!({"max_tokens": "two"})),
            "max_tokens",
        ),
    ];
    assert_refusals(&server, "/v1/chat/completions", &cases);
    // What real clients send is served: unknown fields, no model, an assistant turn of
    // calls alone answered by its tool message, empty arguments, a text response format.
    let lenient = with(
        &ok,
        json!({"-model": null, "unknown_field": {"x": 1},
        "response_format": {"type": "text"}, "stop": ["\n\n"]}),
    );
    assert_served(&server, "/v1/chat/completions", "lenient", &lenient);
    let answered = messages(vec![
        call,
        json!({"role": "tool", "tool_call_id": "c1", "content": "42"}),
        json!({"role": "assistant", "tool_calls": [{"id": "c2", "type": "function",
            "function": {"name": "g", "arguments": ""}}]}),
        json!({"role": "tool", "tool_call_id": "c2", "content": "ok"}),
    ]);
    assert_served(
        &server,
        "/v1/chat/completions",
        "calls and results",
        &answered,
    );
}

#[test]
fn anthropic_messages_refuse_malformed_fields() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &[]);
    let ok = json!({"model": "m", "max_tokens": 2, "temperature": 0,
        "messages": [{"role": "user", "content": "hi"}]});
    let result_without_id = json!({"messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "42"}]},
    ]});
    let cases = [
        (
            "tool_result without tool_use_id",
            with(&ok, result_without_id),
            "messages[2].content[0].tool_use_id",
        ),
        (
            "metadata: \"x\"",
            with(&ok, json!({"metadata": "x"})),
            "metadata",
        ),
        (
            "metadata.user_id: 5",
            with(&ok, json!({"metadata": {"user_id": 5}})),
            "metadata.user_id",
        ),
        (
            "tools: [{\"name\": 5}]",
            with(&ok, json!({"tools": [{"name": 5}]})),
            "tools[0].name",
        ),
        ("model: null", with(&ok, json!({"model": null})), "model"),
    ];
    for path in ["/v1/messages", "/v1/messages/count_tokens"] {
        assert_refusals(&server, path, &cases);
    }
    // Claude Code (2.1.197) sends a system message among the turns: served, unlike on
    // Anthropic's own API, since the client that sends it must work.
    let system_turn = with(
        &ok,
        json!({"messages": [
            {"role": "user", "content": "hi"},
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "again"},
        ]}),
    );
    assert_served(&server, "/v1/messages", "a system turn", &system_turn);
    let lenient = with(
        &ok,
        json!({"metadata": {"user_id": "u1"}, "unknown_field": 1,
        "tools": [{"name": "f", "input_schema": {"type": "object"}}]}),
    );
    assert_served(&server, "/v1/messages", "lenient", &lenient);
}

#[test]
fn responses_and_completions_refuse_malformed_fields() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &[]);
    let ok = json!({"model": "m", "max_output_tokens": 2, "temperature": 0, "input": "hi"});
    let output_without_call = json!({"input": [
        {"type": "message", "role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "output": "42"},
    ]});
    let cases = [
        ("text: \"x\"", with(&ok, json!({"text": "x"})), "text"),
        (
            "function_call_output without call_id",
            with(&ok, output_without_call),
            "input[2].call_id",
        ),
        (
            "function_call arguments that are not JSON",
            with(
                &ok,
                json!({"input": [{"type": "function_call", "call_id": "c1", "name": "f",
                "arguments": "{not json"}]}),
            ),
            "input[0].arguments",
        ),
        ("model: null", with(&ok, json!({"model": null})), "model"),
    ];
    assert_refusals(&server, "/v1/responses", &cases);
    let lenient = with(
        &ok,
        json!({"text": {"format": {"type": "text"}}, "unknown_field": 1}),
    );
    assert_served(&server, "/v1/responses", "lenient", &lenient);

    let ok = json!({"model": "m", "max_tokens": 2, "temperature": 0, "prompt": "hi"});
    let cases = [
        ("suffix: 5", with(&ok, json!({"suffix": 5})), "suffix"),
        ("stop: [\"\"]", with(&ok, json!({"stop": [""]})), "stop"),
    ];
    assert_refusals(&server, "/v1/completions", &cases);
    assert_served(
        &server,
        "/v1/completions",
        "a string suffix",
        &with(&ok, json!({"suffix": "end"})),
    );
}
