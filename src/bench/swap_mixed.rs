//! `kvrun bench swap`'s mixed load: clients loop on both models at once, each on its own
//! conversation, under a budget that holds one model, so the models take turns
//! (`serve --swap-wait`). Each request's time to first token, per model, and the 503s.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use serde_json::{json, Value};

use super::harness::{bench_text, sse_events, ChildServer};
use crate::cli::BenchSwapArgs;
use crate::settings::LlamaSettings;

/// Runs the mixed load on a server of `budget` and prints its table.
pub(super) fn measure(
    args: &BenchSwapArgs,
    work: &std::path::Path,
    paths: &[std::path::PathBuf],
    llama: &LlamaSettings,
    ids: &[String],
    budget: u64,
) -> Result<()> {
    let budget_arg = budget.to_string();
    let mut server_args = vec!["--memory-budget", &budget_arg, "--default-model", "none"];
    if let Some(wait) = &args.swap_wait {
        server_args.extend(["--swap-wait", wait.as_str()]);
    }
    let home = super::harness::home(work, "mixed", paths)?;
    let server = ChildServer::spawn_serving(&home, None, llama, &server_args)?;
    let window = Duration::from_secs(args.mixed_secs);
    let opening = bench_text(256 * 4);
    let mixed = run(&server, ids, args.clients, window, &opening)?;
    let stats = server.get_json("/v1/kvrun/stats")?;
    server.stop()?;
    println!();
    println!(
        "Mixed load, {} clients per model for {} s (swap wait: {}), time to first token, ms",
        args.clients,
        args.mixed_secs,
        args.swap_wait.as_deref().unwrap_or("serve's default")
    );
    println!(
        "{:<28} {:>8} {:>10} {:>10} {:>10} {:>8} {:>10}",
        "model", "turns", "p50", "p99", "max", "503s", "swaps in"
    );
    for m in &mixed {
        let loads = stats["models"]["models"]
            .as_array()
            .and_then(|all| all.iter().find(|x| x["id"] == m.id.as_str()))
            .map_or(0, |x| x["loads"].as_u64().unwrap_or(0));
        println!(
            "{:<28} {:>8} {:>10.1} {:>10.1} {:>10.1} {:>8} {:>10}",
            m.id,
            m.ttft.len(),
            quantile_ms(&m.ttft, 0.5),
            quantile_ms(&m.ttft, 0.99),
            quantile_ms(&m.ttft, 1.0),
            m.refused,
            loads
        );
    }
    let fewest = mixed.iter().filter_map(|m| m.turns.first()).min();
    println!(
        "fewest turns of any client: {}",
        fewest.copied().unwrap_or(0)
    );
    Ok(())
}

/// One model's requests under the mixed load.
struct MixedModel {
    pub id: String,
    /// Each answered request's time to first token.
    pub ttft: Vec<Duration>,
    /// Answers 503 (each retried after its `Retry-After`).
    pub refused: u32,
    /// Each client's turns answered within the window (fewest first).
    pub turns: Vec<usize>,
}

/// `clients` clients per model loop on `ids` for `window`, each turn `max_tokens` long.
fn run(
    server: &ChildServer,
    ids: &[String],
    clients: usize,
    window: Duration,
    text: &str,
) -> Result<Vec<MixedModel>> {
    let until = Instant::now() + window;
    let results: Vec<Result<(usize, Client)>> = std::thread::scope(|scope| {
        let threads: Vec<_> = (0..ids.len() * clients)
            .map(|c| {
                let (m, id) = (c % ids.len(), &ids[c % ids.len()]);
                let opening = format!("{text} Client {c}.");
                scope.spawn(move || client(server, id, &opening, until).map(|r| (m, r)))
            })
            .collect();
        threads
            .into_iter()
            .map(|t| {
                t.join()
                    .unwrap_or_else(|_| Err(anyhow!("a client panicked")))
            })
            .collect()
    });
    let mut models: Vec<MixedModel> = ids
        .iter()
        .map(|id| MixedModel {
            id: id.clone(),
            ttft: Vec::new(),
            refused: 0,
            turns: Vec::new(),
        })
        .collect();
    for result in results {
        let (m, client) = result?;
        let model = &mut models[m];
        model.turns.push(client.ttft.len());
        model.ttft.extend(client.ttft);
        model.refused += client.refused;
    }
    for model in &mut models {
        model.ttft.sort();
        model.turns.sort();
    }
    Ok(models)
}

struct Client {
    ttft: Vec<Duration>,
    refused: u32,
}

/// One client's loop: a turn of its conversation after another until `until`.
fn client(server: &ChildServer, model: &str, opening: &str, until: Instant) -> Result<Client> {
    let mut messages = vec![json!({"role": "user", "content": opening})];
    let mut done = Client {
        ttft: Vec::new(),
        refused: 0,
    };
    while Instant::now() < until {
        let body = json!({"model": model, "messages": messages, "max_tokens": 8,
            "temperature": 0, "stream": true});
        let sent = Instant::now();
        let mut response = server
            .agent()
            .post(format!("{}/v1/chat/completions", server.url()))
            .send_json(&body)
            .map_err(|e| anyhow!("POST /v1/chat/completions: {e}"))?;
        if response.status() == 503 {
            done.refused += 1;
            let secs = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .unwrap_or(1);
            std::thread::sleep(Duration::from_secs(secs));
            continue;
        }
        if response.status() != 200 {
            let text = response.body_mut().read_to_string().unwrap_or_default();
            return Err(anyhow!("the server answered {}: {text}", response.status()));
        }
        let mut first = None;
        let mut reply = String::new();
        for chunk in sse_events(&mut response) {
            let chunk: Value = chunk?;
            if let Some(t) = chunk["choices"][0]["delta"]["content"].as_str() {
                first.get_or_insert_with(|| sent.elapsed());
                reply.push_str(t);
            }
        }
        if Instant::now() <= until {
            done.ttft.push(first.unwrap_or_else(|| sent.elapsed()));
        }
        messages.push(json!({"role": "assistant", "content": reply}));
        messages.push(json!({"role": "user", "content": "Go on."}));
    }
    Ok(done)
}

/// The `q` quantile (0 to 1) of sorted `values`, in ms.
fn quantile_ms(values: &[Duration], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let i = ((values.len() - 1) as f64 * q).round() as usize;
    values[i].as_secs_f64() * 1e3
}
