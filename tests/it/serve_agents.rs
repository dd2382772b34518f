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

/// The recorded Codex request as a JSON body, with its headers.
fn codex_request() -> (Value, Vec<(String, String)>) {
    let (_, headers, body) = recorded("codex-responses.json");
    (serde_json::from_slice(&body).unwrap(), headers)
}

/// The prompt size of a Responses request, from a one-token, unstreamed reply.
fn input_tokens(server: &Server, body: &Value) -> u64 {
    let mut body = body.clone();
    body["stream"] = Value::Bool(false);
    body["max_output_tokens"] = 1.into();
    let reply = server.post("/v1/responses", &body, &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()["usage"]["input_tokens"].as_u64().unwrap()
}

#[test]
fn codex_namespace_tools_reach_the_prompt_and_come_back_namespaced() {
    use serde_json::json;
    let home = Home::new();
    let server = Server::start(&home, &agent_shaped_model(), &[]);
    let (codex, headers) = codex_request();
    let headers: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();

    // Codex's `multi_agent_v1` namespace is rendered exactly as its five functions would be
    // if they were given flat under `multi_agent_v1__<name>`; without it the prompt is
    // shorter.
    let tools = codex["tools"].as_array().unwrap();
    let at = tools.iter().position(|t| t["type"] == "namespace").unwrap();
    let namespace = tools[at]["name"].as_str().unwrap();
    let mut flattened = codex.clone();
    let inner: Vec<Value> = tools[at]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let mut t = t.clone();
            t["name"] = format!("{namespace}__{}", t["name"].as_str().unwrap()).into();
            t
        })
        .collect();
    let flat_tools = flattened["tools"].as_array_mut().unwrap();
    flat_tools.splice(at..=at, inner);
    let mut without = codex.clone();
    without["tools"].as_array_mut().unwrap().remove(at);
    let (given, flat, none) = (
        input_tokens(&server, &codex),
        input_tokens(&server, &flattened),
        input_tokens(&server, &without),
    );
    assert_eq!(given, flat, "the namespace's tools are not in the prompt");
    assert!(
        given > none + 500,
        "{given} vs {none} without the namespace"
    );

    // A call forced onto a namespaced tool (an MCP server's, whose namespace ends in `__`)
    // comes back with its name and namespace apart, streamed and whole.
    let mut forced = codex.clone();
    forced["tools"].as_array_mut().unwrap().push(json!({
        "type": "namespace", "name": "mcp__files__", "description": "Files.",
        "tools": [{"type": "function", "name": "read", "description": "Read a file.",
            "parameters": {"type": "object", "required": ["path"],
                "properties": {"path": {"type": "string", "maxLength": 8}}}}]}));
    forced["tool_choice"] =
        json!({"type": "function", "name": "read", "namespace": "mcp__files__"});
    forced["max_output_tokens"] = 200.into();
    let streamed = server.post("/v1/responses", &forced, &headers);
    assert_eq!(streamed.status, 200, "{}", streamed.body);
    let events = sse(&streamed);
    assert_eq!(
        events.last().unwrap().0.as_deref(),
        Some("response.completed")
    );
    for kind in ["response.output_item.added", "response.output_item.done"] {
        let (_, data) = events
            .iter()
            .find(|(e, d)| e.as_deref() == Some(kind) && d.contains("function_call"))
            .unwrap_or_else(|| panic!("no function_call in {kind}: {}", streamed.body));
        let item = &serde_json::from_str::<Value>(data).unwrap()["item"];
        assert_eq!(
            (&item["name"], &item["namespace"]),
            (&json!("read"), &json!("mcp__files__")),
            "{item}"
        );
    }
    forced["stream"] = Value::Bool(false);
    forced["store"] = Value::Bool(true);
    let whole = server.post("/v1/responses", &forced, &headers);
    assert_eq!(whole.status, 200, "{}", whole.body);
    let whole = whole.json();
    let call = whole["output"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .unwrap_or_else(|| panic!("no function_call in {whole}"))
        .clone();
    assert_eq!(
        (&call["name"], &call["namespace"]),
        (&json!("read"), &json!("mcp__files__"))
    );
    let stored = server.get(
        &format!("/v1/responses/{}", whole["id"].as_str().unwrap()),
        &[],
    );
    assert_eq!(stored.json()["output"], whole["output"]);

    // Sent back as history (as Codex does, the call item as it came, then its output), the
    // call is rendered under the flat name the tools gave the model.
    let mut next = codex.clone();
    next["tools"] = forced["tools"].clone();
    next["max_output_tokens"] = 8.into();
    let input = next["input"].as_array_mut().unwrap();
    input.push(call.clone());
    input.push(
        json!({"type": "function_call_output", "call_id": call["call_id"], "output": "hello"}),
    );
    let answered = server.post("/v1/responses", &next, &headers);
    assert_eq!(answered.status, 200, "{}", answered.body);
    assert_eq!(
        sse(&answered).last().unwrap().0.as_deref(),
        Some("response.completed"),
        "{}",
        answered.body
    );
    let mut joined = next.clone();
    let last_call = joined["input"].as_array().unwrap().len() - 2;
    let item = &mut joined["input"][last_call];
    item.as_object_mut().unwrap().remove("namespace");
    item["name"] = json!("mcp__files__read");
    assert_eq!(input_tokens(&server, &next), input_tokens(&server, &joined));
}
