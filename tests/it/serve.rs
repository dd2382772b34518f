//! `kvrun serve` over real HTTP on the tiny model: readiness, the loopback rule, the API
//! key, the body limit, SIGTERM (exit 0, everything saved), `kill -9` mid-stream (nothing
//! lost), the queue limit (503 + Retry-After), locks, and the CLI's `--connect`.

use crate::common::server;

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use crate::common::{assert_one_line_error, stdout, tiny_model, Home};
use serde_json::json;
use server::Server;

fn chat(text: &str, max_tokens: u32) -> serde_json::Value {
    json!({
        "model": "anything",
        "messages": [{"role": "user", "content": text}],
        "max_tokens": max_tokens,
        "temperature": 0,
    })
}

fn cached_tokens(reply: &serde_json::Value) -> u64 {
    reply["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap_or_else(|| panic!("no cached_tokens in {reply}"))
}

#[test]
fn a_non_loopback_address_without_a_key_is_refused() {
    let home = Home::new();
    let out = home.run(&["serve", "--host", "0.0.0.0", "--port", "0"]);
    assert_one_line_error(&out, 2, "without an API key");
    let out = home
        .cmd()
        .args(["serve", "--host", "0.0.0.0", "--port", "0"])
        .env("KVRUN_API_KEY", "")
        .output()
        .unwrap();
    assert_one_line_error(&out, 2, "empty");
    let out = home.run(&["serve", "--port", "0", "--max-body-bytes", "lots"]);
    assert_one_line_error(&out, 2, "--max-body-bytes");
}

#[test]
fn a_model_that_fails_to_load_ends_serve_with_one_line_and_exit_1() {
    let home = Home::new();
    let bad = home.path().join("bad.gguf");
    std::fs::write(&bad, b"not a gguf at all").unwrap();
    let out = home.run(&["serve", bad.to_str().unwrap(), "--port", "0"]);
    assert_one_line_error(&out, 1, "bad.gguf");
}

#[test]
fn health_is_never_ok_before_listening_and_always_ok_after() {
    let home = Home::new();
    // A fixed free port: taken from the OS, released, then given to serve.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = home
        .cmd()
        .arg("serve")
        .arg(tiny_model())
        .args(["--port", &port.to_string()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let listening = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    {
        let listening = listening.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.starts_with("listening on http://127.0.0.1:") {
                    listening.store(true, std::sync::atomic::Ordering::SeqCst);
                }
            }
        });
    }
    let agent = server::agent();
    let started = Instant::now();
    let mut answers = 0;
    let mut seen_ok = false;
    loop {
        let printed = listening.load(std::sync::atomic::Ordering::SeqCst);
        if let Ok(mut r) = agent.get(format!("http://127.0.0.1:{port}/health")).call() {
            answers += 1;
            let body = r.body_mut().read_to_string().unwrap();
            match r.status().as_u16() {
                503 => {
                    assert!(!printed && !seen_ok, "503 after ready");
                    assert_eq!(body, r#"{"status":"loading"}"#);
                }
                200 => {
                    // Ready a moment before the line is printed is fine; ok then loading is not.
                    assert_eq!(body, r#"{"status":"ok"}"#);
                    seen_ok = true;
                    if printed {
                        break;
                    }
                }
                other => panic!("/health answered {other}: {body}"),
            }
        }
        assert!(started.elapsed() < Duration::from_secs(120), "never ready");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(answers > 0);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn the_key_guards_every_endpoint_but_health_in_each_apis_shape() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &["--api-key", "sesame"]);
    assert_eq!(server.get("/health", &[]).status, 200);
    for path in ["/v1/models", "/metrics", "/v1/kvrun/sessions"] {
        let r = server.get(path, &[]);
        assert_eq!(r.status, 401, "{path}: {}", r.body);
        assert_eq!(r.json()["error"]["code"], "invalid_api_key", "{path}");
        let wrong = server.get(path, &[("authorization", "Bearer open")]);
        assert_eq!(wrong.status, 401, "{path}");
        let bearer = server.get(path, &[("authorization", "Bearer sesame")]);
        assert_eq!(bearer.status, 200, "{path}: {}", bearer.body);
        let x_api_key = server.get(path, &[("x-api-key", "sesame")]);
        assert_eq!(x_api_key.status, 200, "{path}");
    }
    let body =
        json!({"model": "m", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]});
    let r = server.post("/v1/messages?beta=true", &body, &[("x-api-key", "wrong")]);
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["type"], "error");
    assert_eq!(r.json()["error"]["type"], "authentication_error");
    let r = server.post("/v1/chat/completions", &chat("hi", 2), &[]);
    assert_eq!(r.status, 401);
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
}

#[test]
fn a_body_over_the_limit_gets_413_and_a_slow_request_408_in_the_apis_shape() {
    let home = Home::new();
    let server = Server::start(
        &home,
        &tiny_model(),
        // Greedy: a sampled reply on the tiny model may end (an end token) within a second.
        &[
            "--max-body-bytes",
            "4KiB",
            "--request-timeout",
            "3s",
            "--temp",
            "0",
        ],
    );
    let big = chat(&"word ".repeat(2000), 4);
    let r = server.post("/v1/chat/completions", &big, &[]);
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--max-body-bytes"));
    let r = server.post("/v1/messages", &big, &[]);
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["error"]["type"], "request_too_large");
    // Under the limit, the same server answers.
    let r = server.post("/v1/chat/completions", &chat("hi", 2), &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    // A greedy reply of 3,500 tokens takes several seconds (about 300 tokens/s on the tiny
    // model here), well past the limit; the short replies above stay far under it.
    let slow =
        json!({"model": "m", "max_tokens": 3500, "messages": [{"role": "user", "content": "go"}]});
    let r = server.post("/v1/messages", &slow, &[]);
    assert_eq!(r.status, 408, "{}", r.body);
    assert_eq!(r.json()["error"]["type"], "timeout_error", "{}", r.body);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--request-timeout"));
    // The timed-out request was cancelled: the engine is free for the next one.
    let r = server.post("/v1/chat/completions", &chat("hi", 2), &[]);
    assert_eq!(r.status, 200, "{}", r.body);
}

#[test]
fn sigterm_exits_0_having_saved_and_the_cli_sees_the_server_meanwhile() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &[]);
    let r = server.post(
        "/v1/chat/completions",
        &chat("remember this", 6),
        &[("x-session-id", "kept")],
    );
    assert_eq!(r.status, 200, "{}", r.body);
    // The server holds the session: another process is told who has it.
    let out = home.run(&[
        "run",
        tiny_model().to_str().unwrap(),
        "--session",
        "kept",
        "-p",
        "hi",
    ]);
    let err = crate::common::stderr(&out);
    assert!(
        err.contains(&format!("held by kvrun serve (pid {})", server.pid())),
        "{err}"
    );
    // The CLI against the running server.
    let out = home.run(&["session", "ls", "--connect", &server.url]);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    let listing = stdout(&out);
    let row = listing
        .lines()
        .find(|l| l.starts_with("kept "))
        .unwrap_or_else(|| panic!("{listing}"));
    assert!(row.contains("served"), "{row}");
    let out = home.run(&["stats", "--connect", &server.url, "--json"]);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        stats["stats"]["generated_tokens"].as_u64().unwrap() > 0,
        "{stats}"
    );
    let metrics = server.get("/metrics", &[]).body;
    assert!(
        metrics.contains(
            "kvrun_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 1"
        ),
        "{metrics}"
    );
    assert!(
        metrics.contains("kvrun_time_to_first_token_seconds_count 1\n"),
        "{metrics}"
    );
    let status = server.terminate(Duration::from_secs(15));
    assert_eq!(status.code(), Some(0), "{status}");
    let listed = crate::common::run_json(&home, &["session", "ls"]);
    let kept = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "kept")
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(kept["tokens"].as_u64().unwrap() > 0, "{kept}");
    // The lock went with the server.
    let out = home.run(&[
        "run",
        tiny_model().to_str().unwrap(),
        "--session",
        "kept",
        "-p",
        "hi",
        "-n",
        "1",
    ]);
    assert!(out.status.success(), "{}", crate::common::stderr(&out));
}

#[test]
fn kill_9_mid_stream_loses_no_session_and_the_restart_serves_from_the_store() {
    let home = Home::new();
    let model = tiny_model();
    let session = [("x-session-id", "agent")];
    let first = chat(&"a long system of rules. ".repeat(60), 4);
    let server = Server::start(&home, &model, &[]);
    let r = server.post("/v1/chat/completions", &first, &session);
    assert_eq!(r.status, 200, "{}", r.body);
    let prompt_tokens = r.json()["usage"]["prompt_tokens"].as_u64().unwrap();
    // A reply's save lands in the background, after its response: what this test asks is
    // that a kill mid-way through the next turn spoils nothing the store already holds.
    wait_until_saved(&home, "agent", prompt_tokens);
    // A second turn, streamed; killed after its first chunks.
    let mut second = first.clone();
    second["messages"] = json!([
        {"role": "user", "content": first["messages"][0]["content"]},
        {"role": "assistant", "content": r.json()["choices"][0]["message"]["content"]},
        {"role": "user", "content": "and now go on for a long while"},
    ]);
    second["max_tokens"] = json!(4000);
    second["stream"] = json!(true);
    let mut response = server::agent()
        .post(format!("{}/v1/chat/completions", server.url))
        .header("x-session-id", "agent")
        .send_json(&second)
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut lines = BufReader::new(response.body_mut().as_reader()).lines();
    let mut chunks = 0;
    while chunks < 3 {
        let line = lines.next().expect("the stream ended early").unwrap();
        chunks += usize::from(line.starts_with("data: {"));
    }
    server.kill9();
    drop(lines);

    let listed = crate::common::run_json(&home, &["session", "ls"]);
    let agent = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "agent")
        .unwrap_or_else(|| panic!("the session was lost: {listed}"));
    assert!(agent["error"].is_null(), "{agent}");
    assert!(
        agent["tokens"].as_u64().unwrap() >= prompt_tokens,
        "{agent}"
    );

    let server = Server::start(&home, &model, &[]);
    second["stream"] = json!(false);
    second["max_tokens"] = json!(4);
    let r = server.post("/v1/chat/completions", &second, &session);
    assert_eq!(r.status, 200, "{}", r.body);
    let cached = cached_tokens(&r.json());
    assert!(
        cached >= 256,
        "served {cached} tokens from the store: {}",
        r.body
    );
}

#[test]
fn past_the_queue_requests_get_503_with_retry_after() {
    let home = Home::new();
    let server = Server::start(
        &home,
        &tiny_model(),
        &["--parallel", "1", "--max-queue", "1"],
    );
    // Long generations, each from its own thread: a queued request gets no answer until
    // its turn, a refused one gets its 503 at once.
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..6 {
        let (tx, url) = (tx.clone(), server.url.clone());
        std::thread::spawn(move || {
            let mut body = chat(&format!("story number {i}"), 4000);
            body["stream"] = json!(true);
            let response = server::agent()
                .post(format!("{url}/v1/chat/completions"))
                .send_json(&body);
            let _ = tx.send(response);
        });
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut refused = loop {
        let response = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("6 requests against --parallel 1 --max-queue 1: none was refused")
            .expect("a request got no response");
        if response.status() == 503 {
            break response;
        }
        assert_eq!(response.status(), 200);
    };
    let retry_after = refused
        .headers()
        .get("retry-after")
        .expect("503 without Retry-After")
        .to_str()
        .unwrap()
        .to_string();
    assert!(retry_after.parse::<u64>().is_ok(), "{retry_after}");
    let body: serde_json::Value = refused.body_mut().read_json().unwrap();
    assert!(body["error"]["message"].is_string(), "{body}");
    let metrics = server.get("/metrics", &[]).body;
    assert!(
        metrics.contains("endpoint=\"/v1/chat/completions\",status=\"503\"}"),
        "{metrics}"
    );
}

/// The HTTP side of a server whose engine has not finished loading: the real router and a
/// real handle, with the engine's side of the channel held by the test. Every API answers
/// 503 in its own shape with `Retry-After`, `/health` says `loading`, and once the model is
/// ready (set here as the engine thread sets it) `/health` answers 200.
#[test]
fn every_endpoint_answers_503_while_the_model_loads() {
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, OnceLock};

    use kvrun::server::{app, AppState, Guard};
    use kvrun::service::{ServiceHandle, ServiceInfo};

    let home = Home::new();
    let (commands, _engine_side) = std::sync::mpsc::channel();
    let ready = Arc::new(OnceLock::new());
    let handle = ServiceHandle::new(commands, Arc::new(AtomicUsize::new(0)), 4, ready.clone());
    let fleet = kvrun::service::Fleet::attach(handle, None);
    let state = AppState::new(fleet, Arc::new(kvrun::paths::Paths::under(home.path())));
    let guard = Guard {
        api_key: None,
        max_body_bytes: 1 << 20,
        request_timeout: None,
        body_timeout: Duration::from_secs(60),
        cors_origins: Vec::new(),
    };
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    runtime.spawn(async move { axum::serve(listener, app(state, &guard)).await });
    let agent = server::agent();
    let get = |path: &str| agent.get(format!("{url}{path}")).call().unwrap();
    let post = |path: &str, body: &serde_json::Value| {
        agent.post(format!("{url}{path}")).send_json(body).unwrap()
    };

    let mut health = get("/health");
    assert_eq!(health.status(), 503);
    let body: serde_json::Value = health.body_mut().read_json().unwrap();
    assert_eq!(body["status"], "loading");

    let mut openai = post("/v1/chat/completions", &chat("hi", 2));
    assert_eq!(openai.status(), 503);
    assert_eq!(openai.headers()["retry-after"], "1");
    let body: serde_json::Value = openai.body_mut().read_json().unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("loading"),
        "{body}"
    );
    let anthropic_body =
        json!({"model": "m", "max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]});
    let mut anthropic = post("/v1/messages", &anthropic_body);
    assert_eq!(anthropic.status(), 503);
    let body: serde_json::Value = anthropic.body_mut().read_json().unwrap();
    assert_eq!(body["type"], "error", "{body}");
    assert_eq!(body["error"]["type"], "overloaded_error", "{body}");
    let completion = json!({"model": "m", "prompt": "hi", "max_tokens": 2});
    assert_eq!(post("/v1/completions", &completion).status(), 503);
    let responses = json!({"model": "m", "input": "hi", "max_output_tokens": 2});
    assert_eq!(post("/v1/responses", &responses).status(), 503);

    let model = kvrun::llama::Model::load(&tiny_model(), 0).unwrap();
    let info = ServiceInfo {
        model_name: "tiny".into(),
        model_ids: vec!["tiny".into()],
        n_ctx_train: 512,
        n_ctx: 512,
        parallel: 1,
        page_tokens: 256,
        ..Default::default()
    };
    assert!(ready.set((Arc::new(model), info)).is_ok());
    let mut health = get("/health");
    assert_eq!(health.status(), 200);
    let body: serde_json::Value = health.body_mut().read_json().unwrap();
    assert_eq!(body["status"], "ok");
}

/// `serve --max-tokens N` caps every reply: one that asks for more, and one that sets no
/// limit (as Codex sends), which would otherwise run until the context fills.
#[test]
fn max_tokens_caps_replies_that_ask_for_more_or_for_no_limit() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &["--max-tokens", "3", "--temp", "0"]);
    let mut unbounded = chat("count to a hundred", 2);
    unbounded.as_object_mut().unwrap().remove("max_tokens");
    for body in [chat("count to a hundred", 50), unbounded] {
        let r = server.post("/v1/chat/completions", &body, &[]);
        assert_eq!(r.status, 200, "{}", r.body);
        let reply = r.json();
        let generated = reply["usage"]["completion_tokens"].as_u64().unwrap();
        assert!(generated <= 3, "{reply}");
    }
    let responses = json!({"model": "m", "input": "count to a hundred", "store": false});
    let r = server.post("/v1/responses", &responses, &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.json()["usage"]["output_tokens"].as_u64().unwrap() <= 3,
        "{}",
        r.body
    );
    // A smaller request limit still wins.
    let r = server.post("/v1/chat/completions", &chat("count", 1), &[]);
    assert!(
        r.json()["usage"]["completion_tokens"].as_u64().unwrap() <= 1,
        "{}",
        r.body
    );
    let out = home.run(&["serve", "--max-tokens", "0", "--port", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        crate::common::stderr(&out).contains("'--max-tokens <N>'"),
        "{}",
        crate::common::stderr(&out)
    );
}

/// A client that trickles its headers, or idles on a keep-alive connection, is cut off after
/// `--header-timeout`; the server answers everyone else meanwhile.
#[test]
fn slow_headers_and_idle_connections_are_closed() {
    use std::io::{Read, Write};
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &["--header-timeout", "1s"]);
    let address = server.url.trim_start_matches("http://").to_string();
    let closed_within = |stream: &mut std::net::TcpStream| {
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let started = std::time::Instant::now();
        let mut rest = Vec::new();
        // EOF (or a reset) ends the read: the server closed the connection.
        let _ = stream.read_to_end(&mut rest);
        (
            started.elapsed(),
            String::from_utf8_lossy(&rest).into_owned(),
        )
    };
    // Headers that never end.
    let mut slow = std::net::TcpStream::connect(&address).unwrap();
    slow.write_all(b"GET /health HTTP/1.1\r\nHost: kvrun\r\nX-Slow: ")
        .unwrap();
    // An idle keep-alive connection, after one answered request.
    let mut idle = std::net::TcpStream::connect(&address).unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: kvrun\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    // Others are served meanwhile.
    assert_eq!(server.get("/health", &[]).status, 200);
    let (waited, _) = closed_within(&mut slow);
    assert!(
        waited < Duration::from_secs(5),
        "slow headers held {waited:?}"
    );
    let (waited, _) = closed_within(&mut idle);
    assert!(
        waited < Duration::from_secs(5),
        "an idle connection held {waited:?}"
    );
    assert_eq!(server.get("/health", &[]).status, 200);
}

/// Waits (a minute at most) until `kvrun session ls` lists `name` with `tokens` or more.
fn wait_until_saved(home: &Home, name: &str, tokens: u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let listed = crate::common::run_json(home, &["session", "ls"]);
        let saved = listed
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == name && s["tokens"].as_u64().is_some_and(|n| n >= tokens));
        if saved {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "session '{name}' was not saved within a minute: {listed}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
