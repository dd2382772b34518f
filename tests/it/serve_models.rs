//! Many models behind one `kvrun serve` (no MODEL: the models folder): a request's `model`
//! picks one, loaded on demand within one memory budget; models swap without losing a
//! conversation, keep-alive unloads idle ones, a generating model is never unloaded, and a
//! model that cannot fit is refused without harm to the others.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::server::{self, Server};
use crate::common::*;

/// The default models' ids (their files' stems).
const GEMMA: &str = "gemma-3-270m-q4_k_m";
const SMOL: &str = "smollm2-135m-instruct-q4_1";

/// A home whose models folder holds `models` (links to the files, under their own names,
/// or `(name, path)` pairs).
fn home_with(models: &[(&str, &Path)]) -> Home {
    let home = Home::new();
    let dir = home.path().join("models");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, path) in models {
        std::os::unix::fs::symlink(path, dir.join(format!("{name}.gguf"))).unwrap();
    }
    home
}

fn default_models() -> Home {
    home_with(&[(GEMMA, &default_model()), (SMOL, &chat_model())])
}

fn stats(server: &Server) -> Value {
    let r = server.get("/v1/kvrun/stats", &[]);
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()
}

/// The model `id`'s entry in the server's stats.
fn model_status(server: &Server, id: &str) -> Value {
    stats(server)["models"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["id"] == id)
        .unwrap_or_else(|| panic!("no model {id} in the stats"))
        .clone()
}

/// Polls until model `id` is in `state` (a minute at most).
fn wait_for_state(server: &Server, id: &str, state: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = model_status(server, id);
        if status["state"] == state {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "model {id} is {} after a minute, not {state}:\n{}",
            status["state"],
            server.log_text()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// One chat turn: the request body for `model` with the conversation so far.
fn turn(model: &str, messages: &[Value], max_tokens: u32) -> Value {
    json!({"model": model, "messages": messages, "max_tokens": max_tokens,
           "temperature": 0, "logprobs": true})
}

/// The reply's text, its tokens' log-probabilities, and its cached prompt tokens.
fn answer(server: &Server, body: &Value) -> (String, Vec<f32>, u64, String) {
    let r = server.post("/v1/chat/completions", body, &[]);
    assert_eq!(r.status, 200, "{}\n{}", r.body, server.log_text());
    let v = r.json();
    let text = v["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    let logprobs = v["choices"][0]["logprobs"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["logprob"].as_f64().unwrap() as f32)
        .collect();
    let cached = v["usage"]["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    (text, logprobs, cached, v["model"].as_str().unwrap().into())
}

const QUESTIONS: [&str; 3] = [
    "Name three colours of the sea, and say why it changes colour.",
    "Now tell me which of those is most common near a sandy beach.",
    "Finally, write one short sentence about the tide.",
];

/// One conversation with one model, a turn at a time.
struct Chat {
    model: String,
    messages: Vec<Value>,
}

impl Chat {
    fn with(model: &str) -> Self {
        Self {
            model: model.into(),
            messages: Vec::new(),
        }
    }

    /// Turn `i`: its text, log-probabilities, and cached prompt tokens.
    fn turn(&mut self, server: &Server, i: usize) -> (String, Vec<f32>, u64) {
        self.messages
            .push(json!({"role": "user", "content": QUESTIONS[i]}));
        let (text, logprobs, cached, served_by) =
            answer(server, &turn(&self.model, &self.messages, 12));
        assert_eq!(served_by, self.model);
        self.messages
            .push(json!({"role": "assistant", "content": text.clone()}));
        (text, logprobs, cached)
    }
}

#[test]
fn every_request_swaps_under_a_budget_for_one_and_each_conversation_stays_exact() {
    // Uninterrupted runs: one server per model, nothing ever unloaded.
    let mut expected = Vec::new();
    for (id, path) in [(GEMMA, default_model()), (SMOL, chat_model())] {
        let home = Home::new();
        let server = Server::start(&home, &path, &["--temp", "0"]);
        let mut chat = Chat::with(id);
        expected.push((0..3).map(|i| chat.turn(&server, i)).collect::<Vec<_>>());
    }

    // Both models in one server whose budget holds either but not both: every request
    // after the first unloads one model (saving its conversation) and loads the other.
    let home = default_models();
    let server = Server::start_folder(&home, &["--memory-budget", "700MiB", "--temp", "0"]);
    let gemma_charge = wait_for_state(&server, GEMMA, "loaded")["charge"].clone();
    let total = |c: &Value| {
        ["weights", "kv", "compute"]
            .map(|k| c[k].as_u64().unwrap())
            .iter()
            .sum::<u64>()
    };
    let smol_estimate = total(&model_status(&server, SMOL)["charge"]);
    assert!(total(&gemma_charge) <= 700 << 20, "{gemma_charge}");
    assert!(
        total(&gemma_charge) + smol_estimate > 700 << 20,
        "the budget must not hold both: {gemma_charge} + {smol_estimate}"
    );
    let mut chats = [Chat::with(GEMMA), Chat::with(SMOL)];
    for i in 0..3 {
        for (m, chat) in chats.iter_mut().enumerate() {
            let (text, logprobs, cached) = chat.turn(&server, i);
            let (want_text, want_logprobs, _) = expected[m].get(i).unwrap();
            assert_eq!(&text, want_text, "model {m}, turn {i}");
            assert!(
                max_diff(&logprobs, want_logprobs) <= 1e-4,
                "model {m}, turn {i}: {logprobs:?} vs {want_logprobs:?}"
            );
            if i > 0 {
                // Reloaded, and served from the store: the earlier turns were not prefilled.
                assert!(
                    cached > 0,
                    "model {m}, turn {i}: nothing cached after the reload"
                );
            }
        }
    }
    let gemma_status = model_status(&server, GEMMA);
    let smol_status = model_status(&server, SMOL);
    assert!(
        gemma_status["unloads"].as_u64().unwrap() >= 2,
        "{gemma_status}"
    );
    assert!(smol_status["loads"].as_u64().unwrap() >= 3, "{smol_status}");
    let s = stats(&server);
    assert!(s["models"]["used"].as_u64().unwrap() <= 700 << 20, "{s}");
    // Each model's state and bytes in /metrics and `kvrun stats --connect`.
    let metrics = server.get("/metrics", &[]).body;
    assert!(
        metrics.contains(&format!(
            "kvrun_model_loaded{{model=\"{SMOL}\",state=\"loaded\"}} 1"
        )),
        "{metrics}"
    );
    assert!(metrics.contains(&format!("kvrun_model_loads_total{{model=\"{SMOL}\"}} 3")));
    assert!(
        metrics.contains("kvrun_memory_budget_bytes 734003200"),
        "{metrics}"
    );
    let out = home.run(&["stats", "--connect", &server.url]);
    let text = stdout(&out);
    assert!(text.contains("of the 700.0 MiB budget in use"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.contains(GEMMA) && l.contains("unloaded")),
        "{text}"
    );
    assert_eq!(server.terminate(Duration::from_secs(30)).code(), Some(0));
}

/// A streamed chat reply: when its first token came and when it ended.
fn stream_times(url: &str, model: &str, started: Instant) -> (Duration, Duration, String) {
    let agent = server::agent();
    let body = json!({"model": model, "stream": true, "max_tokens": 48, "temperature": 0,
        "messages": [{"role": "user", "content": "Write a long story about a lighthouse."}]});
    let mut response = agent
        .post(format!("{url}/v1/chat/completions"))
        .send_json(&body)
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut first = None;
    let mut served_by = String::new();
    for line in BufReader::new(response.body_mut().as_reader()).lines() {
        let line = line.unwrap();
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        if data == "[DONE]" {
            break;
        }
        let chunk: Value = serde_json::from_str(data).unwrap();
        served_by = chunk["model"].as_str().unwrap_or_default().into();
        let has_text = chunk["choices"][0]["delta"]["content"]
            .as_str()
            .is_some_and(|t| !t.is_empty());
        if has_text && first.is_none() {
            first = Some(started.elapsed());
        }
    }
    (
        first.expect("no token streamed"),
        started.elapsed(),
        served_by,
    )
}

#[test]
fn two_models_that_fit_answer_at_the_same_time() {
    let home = default_models();
    let server = Server::start_folder(&home, &["--temp", "0"]);
    // Both loaded first, so that the streams race each other and not a load.
    for id in [GEMMA, SMOL] {
        answer(
            &server,
            &turn(id, &[json!({"role": "user", "content": "hi"})], 1),
        );
    }
    let started = Instant::now();
    let url = server.url.clone();
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| stream_times(&url, GEMMA, started));
        let b = scope.spawn(|| stream_times(&url, SMOL, started));
        (a.join().unwrap(), b.join().unwrap())
    });
    assert_eq!((a.2.as_str(), b.2.as_str()), (GEMMA, SMOL));
    // Each model's engine decodes on its own: each stream's first token came before the
    // other stream ended (one waiting for the other would start after it).
    assert!(a.0 < b.1 && b.0 < a.1, "{a:?} {b:?}");
    for id in [GEMMA, SMOL] {
        let status = model_status(&server, id);
        assert_eq!(
            (status["loads"].as_u64(), status["unloads"].as_u64()),
            (Some(1), Some(0))
        );
    }
}

#[test]
fn keep_alive_unloads_idle_models_and_never_a_generating_one() {
    let home = default_models();
    let server = Server::start_folder(
        &home,
        &[
            "--keep-alive",
            "3s",
            "--memory-budget",
            "700MiB",
            "--temp",
            "0",
        ],
    );
    let hi = [json!({"role": "user", "content": "hi"})];

    // keep_alive 0: unloaded as soon as its reply ends.
    let mut body = turn(SMOL, &hi, 2);
    body["keep_alive"] = json!(0);
    answer(&server, &body);
    wait_for_state(&server, SMOL, "unloaded");

    // The server's --keep-alive: unloaded after 3 s idle, not before.
    answer(&server, &turn(SMOL, &hi, 2));
    assert_eq!(model_status(&server, SMOL)["state"], "loaded");
    let idle = Instant::now();
    wait_for_state(&server, SMOL, "unloaded");
    assert!(
        idle.elapsed() >= Duration::from_secs(2),
        "{:?}",
        idle.elapsed()
    );

    // -1: never for idling.
    let mut body = turn(GEMMA, &hi, 2);
    body["keep_alive"] = json!("-1");
    answer(&server, &body);
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(model_status(&server, GEMMA)["state"], "loaded");

    // A model that is generating is not unloaded to make room: the other model's request
    // waits for it, and the long reply ends whole.
    let url = server.url.clone();
    let long = std::thread::spawn(move || {
        let agent = server::agent();
        let body = json!({"model": GEMMA, "max_tokens": 96, "temperature": 0,
            "messages": [{"role": "user", "content": "Write a long story about a lighthouse."}]});
        let mut r = agent
            .post(format!("{url}/v1/chat/completions"))
            .send_json(&body)
            .unwrap();
        assert_eq!(r.status(), 200);
        r.body_mut().read_json::<Value>().unwrap()
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while model_status(&server, GEMMA)["in_use"] == 0 {
        assert!(Instant::now() < deadline, "the long request never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (_, _, _, served_by) = answer(&server, &turn(SMOL, &hi, 2));
    assert_eq!(served_by, SMOL);
    let long = long.join().unwrap();
    assert_eq!(long["usage"]["completion_tokens"], 96, "{long}");
    assert_eq!(long["choices"][0]["finish_reason"], "length", "{long}");
    assert_eq!(model_status(&server, GEMMA)["state"], "unloaded");
}

#[test]
fn a_model_that_cannot_fit_or_load_is_refused_and_the_others_go_on() {
    let home = default_models();
    std::fs::write(
        home.path().join("models/broken.gguf"),
        b"GGUF but not really",
    )
    .unwrap();
    let server = Server::start_folder(
        &home,
        &[
            "--memory-budget",
            "400MiB",
            "--default-model",
            SMOL,
            "--temp",
            "0",
        ],
    );
    let hi = [json!({"role": "user", "content": "hi"})];
    // Gemma's weights, context and compute are more than the whole budget.
    let r = server.post("/v1/chat/completions", &turn(GEMMA, &hi, 2), &[]);
    assert_eq!(r.status, 400, "{}", r.body);
    let error = &r.json()["error"];
    assert_eq!(error["code"], "model_too_large", "{}", r.body);
    let message = error["message"].as_str().unwrap();
    assert!(
        message.contains("weights") && message.contains("budget of 400.0 MiB"),
        "{message}"
    );
    // A file that is not a model: its one-line error, in the API's shape (Anthropic's here).
    let body = json!({"model": "broken", "max_tokens": 2, "messages": hi});
    let r = server.post("/v1/messages", &body, &[]);
    assert_eq!(r.status, 500, "{}", r.body);
    let v = r.json();
    assert_eq!(v["type"], "error", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("broken") && !message.contains('\n'),
        "{message}"
    );
    assert!(model_status(&server, "broken")["last_error"].is_string());
    // The server and its loaded model are unharmed.
    let (_, _, _, served_by) = answer(&server, &turn(SMOL, &hi, 2));
    assert_eq!(served_by, SMOL);
    assert_eq!(model_status(&server, SMOL)["unloads"], 0);
    assert_eq!(server.get("/health", &[]).status, 200);
}

#[test]
fn unknown_names_get_404_without_a_default_and_the_default_with_one() {
    let home = home_with(&[(SMOL, &chat_model()), ("tiny", &tiny_model())]);
    let server = Server::start_folder(&home, &["--default-model", "none", "--temp", "0"]);
    let hi = [json!({"role": "user", "content": "hi"})];
    let r = server.post("/v1/chat/completions", &turn("gpt-4o", &hi, 2), &[]);
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.json()["error"]["code"], "model_not_found");
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains(SMOL));
    let body = json!({"model": "claude-sonnet-4-5", "max_tokens": 2, "messages": hi});
    let r = server.post("/v1/messages", &body, &[]);
    assert_eq!(r.status, 404, "{}", r.body);
    assert_eq!(r.json()["error"]["type"], "not_found_error", "{}", r.body);
    // Nothing was loaded at start, and nothing for the refusals.
    for id in [SMOL, "tiny"] {
        assert_eq!(model_status(&server, id)["loads"], 0);
    }
    drop(server);

    let server = Server::start_folder(&home, &["--default-model", "tiny", "--temp", "0"]);
    let (_, _, _, served_by) = answer(&server, &turn("gpt-4o", &hi, 2));
    assert_eq!(served_by, "tiny");
}

/// One client's turns: their prompt tokens and cached prompt tokens.
type Turns = Vec<(u64, u64)>;

/// Turns each client must complete while the others keep their models busy.
const TURNS_EACH: usize = 2;
/// Three clients on SmolLM2, two on Gemma.
const CLIENTS: [&str; 5] = [SMOL, SMOL, SMOL, GEMMA, GEMMA];

/// A client that loops on one conversation with `model` until every client has had
/// [`TURNS_EACH`] turns (`done` counts the clients that have) or `limit` passes,
/// honouring 503s' `Retry-After`.
fn loop_turns(
    server: &Server,
    model: &str,
    client: usize,
    done: &AtomicUsize,
    limit: Instant,
) -> Turns {
    let mut messages = vec![json!({"role": "user",
        "content": format!("Client {client} here. Count from {client} to {}.", client + 9)})];
    let mut turns = Vec::new();
    while done.load(Ordering::SeqCst) < CLIENTS.len() && Instant::now() < limit {
        let r = server.post("/v1/chat/completions", &turn(model, &messages, 6), &[]);
        if r.status == 503 {
            let secs: u64 = r.header("retry-after").unwrap().parse().unwrap();
            assert!((1..=30).contains(&secs), "{secs}: {}", r.body);
            std::thread::sleep(Duration::from_secs(secs));
            continue;
        }
        assert_eq!(r.status, 200, "{}\n{}", r.body, server.log_text());
        if Instant::now() >= limit {
            break;
        }
        let v = r.json();
        let usage = &v["usage"];
        turns.push((
            usage["prompt_tokens"].as_u64().unwrap(),
            usage["prompt_tokens_details"]["cached_tokens"]
                .as_u64()
                .unwrap(),
        ));
        if turns.len() == TURNS_EACH {
            done.fetch_add(1, Ordering::SeqCst);
        }
        let text = v["choices"][0]["message"]["content"].as_str().unwrap();
        messages.push(json!({"role": "assistant", "content": text}));
        messages.push(json!({"role": "user", "content": "Go on."}));
    }
    turns
}

#[test]
fn busy_models_take_turns_and_every_returning_conversation_is_restored() {
    // A budget for one model at a time; three clients keep SmolLM2 busy without a pause
    // until every client has had its turns, two start on Gemma a moment later. Without
    // turns, Gemma's requests wait for SmolLM2's traffic to stop, which never comes.
    let home = default_models();
    let bad = home.run(&["serve", "--port", "0", "--swap-wait", "soon"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    assert!(stderr(&bad).contains("--swap-wait"), "{}", stderr(&bad));
    let server = Server::start_folder(
        &home,
        &[
            "--memory-budget",
            "700MiB",
            "--swap-wait",
            "1s",
            "--temp",
            "0",
        ],
    );
    let done = AtomicUsize::new(0);
    // Far more than the turns take (seconds on an idle machine): only a server that never
    // swaps a busy model reaches it.
    let limit = Instant::now() + Duration::from_secs(240);
    let turns: Vec<Turns> = std::thread::scope(|scope| {
        let threads: Vec<_> = CLIENTS
            .iter()
            .enumerate()
            .map(|(client, &model)| {
                let (server, done) = (&server, &done);
                scope.spawn(move || {
                    if model == GEMMA {
                        std::thread::sleep(Duration::from_secs(2));
                    }
                    loop_turns(server, model, client, done, limit)
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let log = server.log_text();
    for (client, turns) in turns.iter().enumerate() {
        assert!(
            turns.len() >= TURNS_EACH,
            "client {client} ({}) completed {} turns while the others went on: {turns:?}\n{log}",
            CLIENTS[client],
            turns.len(),
        );
        // A returning conversation is served from the store: the whole earlier prompt
        // is cached, whichever models ran between its turns.
        for pair in turns.windows(2) {
            assert!(
                pair[1].1 >= pair[0].0,
                "client {client}: {} of the earlier {} prompt tokens cached\n{log}",
                pair[1].1,
                pair[0].0
            );
        }
    }
    for id in [GEMMA, SMOL] {
        let status = model_status(&server, id);
        assert!(status["unloads"].as_u64().unwrap() >= 1, "{status}");
    }
    let metrics = server.get("/metrics", &[]).body;
    let restored: u64 = ["warm", "cold"]
        .iter()
        .filter_map(|tier| {
            let key = format!("kvrun_restored_tokens_total{{tier=\"{tier}\"}} ");
            metrics
                .lines()
                .find_map(|l| l.strip_prefix(&key)?.parse::<u64>().ok())
        })
        .sum();
    assert!(restored > 0, "{metrics}");
}
