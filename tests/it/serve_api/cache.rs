//! Conversations and the cache: a second call reads what the first left, across restarts
//! (`previous_response_id`, a conversation's partial last page), a Claude-Code-shaped
//! request despite its billing block, divergences counted, and a client key's family of
//! conversations.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::common::*;

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
