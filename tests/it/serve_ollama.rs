//! Ollama's API on `kvrun serve`, over real HTTP on the tiny model: chat and generate
//! whole and as NDJSON, Ollama's counts and durations, the cache on a second turn, greedy
//! text equal to `kvrun run`, load and unload, the model endpoints, and errors in Ollama's
//! shape. `serve_ollama_clients` drives the same API with Ollama's official clients.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::server::Server;
use crate::common::*;

fn start(home: &Home) -> Server {
    Server::start(home, &tiny_model(), &["--temp", "0"])
}

/// A chat turn asking for `n` greedy tokens.
fn chat_body(messages: Value, n: u32, stream: bool) -> Value {
    json!({"model": "tiny", "messages": messages, "stream": stream,
        "options": {"temperature": 0, "num_predict": n}})
}

/// NDJSON lines as JSON values.
fn lines(body: &str) -> Vec<Value> {
    body.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The last chunk's counts and durations are Ollama's, from kvrun's figures.
fn assert_final(last: &Value, generated: u64) {
    assert_eq!(last["done"], true, "{last}");
    assert_eq!(last["done_reason"], "length", "{last}");
    assert_eq!(last["eval_count"], generated, "{last}");
    assert!(last["prompt_eval_count"].as_u64().unwrap() > 0, "{last}");
    for field in ["total_duration", "prompt_eval_duration", "eval_duration"] {
        assert!(last[field].as_u64().unwrap() > 0, "{field}: {last}");
    }
    assert!(last["load_duration"].is_u64(), "{last}");
    assert!(
        last["created_at"].as_str().unwrap().ends_with('Z'),
        "{last}"
    );
    assert!(last["kvrun"]["session"].is_string(), "{last}");
}

#[test]
fn chat_and_generate_whole_and_streamed_with_the_cache_and_greedy_text() {
    let home = Home::new();
    let server = start(&home);
    let rules = "Answer in one word. ".repeat(60);
    let first = json!([{"role": "system", "content": rules}, {"role": "user", "content": "hi"}]);
    let r = server.post("/api/chat", &chat_body(first.clone(), 6, false), &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("x-kvrun-cached-tokens"), Some("0"));
    let whole = r.json();
    assert_final(&whole, 6);
    assert_eq!(whole["model"], "tiny");
    assert_eq!(whole["message"]["role"], "assistant");
    let text = whole["message"]["content"].as_str().unwrap().to_string();
    let prompt_tokens = whole["prompt_eval_count"].as_u64().unwrap();
    assert!(prompt_tokens > 256, "{whole}");

    // The same conversation streamed (the default): found by content, its prompt served
    // from the cache; the same greedy text, a chunk per token.
    let mut streamed = chat_body(first.clone(), 6, true);
    streamed.as_object_mut().unwrap().remove("stream");
    let r = server.post("/api/chat", &streamed, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.header("content-type"), Some("application/x-ndjson"));
    let cached: u64 = r.header("x-kvrun-cached-tokens").unwrap().parse().unwrap();
    assert!(cached >= 256, "cached {cached} of {prompt_tokens}");
    let chunks = lines(&r.body);
    let last = chunks.last().unwrap();
    assert_final(last, 6);
    assert_eq!(last["kvrun"]["cached_tokens"], cached, "{last}");
    let joined: String = chunks[..chunks.len() - 1]
        .iter()
        .map(|c| c["message"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(joined, text);

    // A second turn extends the first: its prompt is restored, not prefilled.
    let mut second = first.as_array().unwrap().clone();
    second.push(json!({"role": "assistant", "content": text}));
    second.push(json!({"role": "user", "content": "and again"}));
    let r = server.post("/api/chat", &chat_body(json!(second), 3, false), &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let turn = r.json();
    let cached = turn["kvrun"]["cached_tokens"].as_u64().unwrap();
    assert!(cached >= prompt_tokens - 16, "cached {cached}: {turn}");
    // Ollama's count is of the tokens evaluated: the new turn's, not the restored ones.
    assert!(turn["prompt_eval_count"].as_u64().unwrap() < 64, "{turn}");

    // Generate with raw: the greedy text `kvrun run --raw` gives on the same model.
    let prompt = "The capital of France is";
    let body = json!({"model": "tiny", "prompt": prompt, "raw": true, "stream": false,
        "options": {"temperature": 0, "num_predict": 8}});
    let r = server.post("/api/generate", &body, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let generated = r.json();
    assert_final(&generated, 8);
    assert!(generated.get("context").is_none(), "raw has no context");
    let model = tiny_model();
    let run = run_json(
        &home,
        &[
            "run",
            path_str(&model),
            "--raw",
            "-p",
            prompt,
            "-n",
            "8",
            "--temp",
            "0",
            "-t",
            "2",
        ],
    );
    assert_eq!(generated["response"], run["text"], "{generated}\n{run}");

    // Templated and streamed: the chat template renders it, `context` holds the tokens.
    let body = json!({"model": "tiny", "prompt": "hello", "system": "be brief",
        "options": {"num_predict": 2}});
    let r = server.post("/api/generate", &body, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    let chunks = lines(&r.body);
    let last = chunks.last().unwrap();
    assert_final(last, 2);
    let context = last["context"].as_array().unwrap();
    let prompt = last["prompt_eval_count"].as_u64().unwrap()
        + last["kvrun"]["cached_tokens"].as_u64().unwrap();
    assert_eq!(context.len() as u64, prompt + 2, "{last}");
    // A plain template of the request's own.
    let body = json!({"model": "tiny", "prompt": "hi", "system": "s", "stream": false,
        "template": "{{ .System }} Q: {{ .Prompt }} A:", "options": {"num_predict": 1}});
    let r = server.post("/api/generate", &body, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn models_load_unload_and_errors_in_ollama_shape() {
    let home = Home::new();
    let server = start(&home);
    let r = server.get("/", &[]);
    assert_eq!((r.status, r.body.as_str()), (200, "Ollama is running"));
    let version = server.get("/api/version", &[]).json();
    assert!(version["version"].is_string(), "{version}");
    let tags = server.get("/api/tags", &[]).json();
    let listed = &tags["models"][0];
    assert_eq!(listed["name"], "tiny-llama:latest", "{tags}");
    assert_eq!(listed["details"]["format"], "gguf", "{tags}");
    assert!(listed["size"].as_u64().unwrap() > 0, "{tags}");
    let show = server.post("/api/show", &json!({"model": "tiny-llama"}), &[]);
    assert_eq!(show.status, 200, "{}", show.body);
    let show = show.json();
    assert_eq!(
        show["model_info"]["general.architecture"], "llama",
        "{show}"
    );
    assert!(show["capabilities"]
        .as_array()
        .unwrap()
        .contains(&json!("completion")));
    let ps = server.get("/api/ps", &[]).json();
    assert_eq!(ps["models"][0]["name"], "tiny-llama:latest", "{ps}");
    assert!(ps["models"][0]["size"].as_u64().unwrap() > 0, "{ps}");

    // An empty prompt with keep_alive 0 unloads (its conversations saved); one without
    // loads again.
    let unload = json!({"model": "tiny-llama", "keep_alive": 0});
    let r = server.post("/api/generate", &unload, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()["done_reason"], "unload");
    let ps = server.get("/api/ps", &[]).json();
    assert_eq!(ps["models"], json!([]), "{ps}");
    let r = server.post(
        "/api/chat",
        &json!({"model": "tiny-llama", "messages": []}),
        &[],
    );
    assert_eq!(r.json()["done_reason"], "load", "{}", r.body);
    let ps = server.get("/api/ps", &[]).json();
    assert_eq!(ps["models"].as_array().unwrap().len(), 1, "{ps}");
    // A chat with keep_alive 0 unloads once its reply is done.
    let body = json!({"model": "tiny", "messages": [{"role": "user", "content": "x"}],
        "stream": false, "keep_alive": 0, "options": {"num_predict": 1}});
    assert_eq!(server.post("/api/chat", &body, &[]).status, 200);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !server.get("/api/ps", &[]).json()["models"]
        .as_array()
        .unwrap()
        .is_empty()
    {
        assert!(std::time::Instant::now() < deadline, "never unloaded");
        std::thread::sleep(Duration::from_millis(100));
    }

    let error = |r: &crate::common::server::Reply, status: u16, needle: &str| {
        assert_eq!(r.status, status, "{}", r.body);
        let body = r.json();
        let message = body["error"].as_str().unwrap_or_else(|| panic!("{body}"));
        assert!(message.contains(needle), "{needle:?} not in {message:?}");
    };
    let image = json!({"model": "tiny", "messages": [
        {"role": "user", "content": "what is it", "images": ["aGk="]}]});
    error(&server.post("/api/chat", &image, &[]), 400, "text only");
    let prompt_image = json!({"model": "tiny", "prompt": "x", "images": ["aGk="]});
    error(
        &server.post("/api/generate", &prompt_image, &[]),
        400,
        "text only",
    );
    error(
        &server.post("/api/chat", &json!({"messages": []}), &[]),
        400,
        "model is required",
    );
    error(
        &server.post_bytes("/api/chat", b"{\"model\": ".to_vec(), &[]),
        400,
        "not valid JSON",
    );
    let bad_option = json!({"model": "tiny", "prompt": "x", "options": {"top_p": 7}});
    error(
        &server.post("/api/generate", &bad_option, &[]),
        400,
        "top_p",
    );
    let bad_format = json!({"model": "tiny", "prompt": "x", "format": "yaml"});
    error(
        &server.post("/api/generate", &bad_format, &[]),
        400,
        "format",
    );
    let suffix = json!({"model": "tiny", "prompt": "x", "suffix": "y"});
    error(
        &server.post("/api/generate", &suffix, &[]),
        400,
        "fill-in-the-middle",
    );
    for path in [
        "/api/embed",
        "/api/embeddings",
        "/api/create",
        "/api/push",
        "/api/copy",
    ] {
        error(
            &server.post(path, &json!({"model": "tiny"}), &[]),
            501,
            "not supported",
        );
    }
    error(&server.delete("/api/delete"), 501, "not supported");
    error(
        &server.post("/api/show", &json!({"model": "nope"}), &[]),
        404,
        "nope",
    );
    error(
        &server.post("/api/pull", &json!({"model": "nope"}), &[]),
        404,
        "kvrun pull",
    );
    let pulled = server.post("/api/pull", &json!({"model": "tiny-llama:latest"}), &[]);
    assert_eq!(pulled.json()["status"], "success", "{}", pulled.body);
    error(&server.get("/api/nothing", &[]), 404, "no route");
    error(&server.get("/api/chat", &[]), 405, "does not take GET");
}
