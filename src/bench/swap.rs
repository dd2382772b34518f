//! `kvrun bench swap`: two models behind one `kvrun serve` (the models folder) whose memory
//! budget holds one, so that every request to the other model swaps: the loaded one is
//! unloaded (its engine saves its conversations first) and the other loaded.
//!
//! - Swap cost: the server's own unload and load times, from the page cache and cold
//!   (the page cache dropped before the request), against a fresh `kvrun serve MODEL`
//!   process to `listening` (llama.cpp's load and context in a new process, which is what a
//!   router that restarts a llama.cpp process per model pays).
//! - A returning conversation: time to first token when its model was swapped out and
//!   back (restored from the store), against its first, cold prefill.
//! - Memory: the server's peak resident set against the budget (the warm tier, budgeted
//!   apart, is in it too).
//! - Mixed load: clients on both models at once, so that the models take turns
//!   ([`super::swap_mixed`]): time to first token per model, p50 and p99.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use serde_json::{json, Value};

use super::harness::{
    bench_text, drop_page_cache, home, home_of, median, post_ok, sse_events, stem, ChildServer,
};
use crate::cli::BenchSwapArgs;
use crate::env::Env;
use crate::format::human_bytes;
use crate::settings::LlamaSettings;
use crate::tiers::parse_bytes;

/// About this many characters of the bench text make a token.
const CHARS_PER_TOKEN: usize = 4;

/// One request's figures.
struct Turn {
    ttft: Duration,
    prompt_tokens: u64,
    cached: u64,
    /// The server's load of this request's model and unload of the other (ms; 0 if none).
    load_ms: f64,
    unload_ms: f64,
}

/// What one serving run measured: each model's first call, its returning calls (one per
/// round), and a returning call after the page cache was dropped; the server's memory.
struct Served {
    first: Vec<Turn>,
    warm: Vec<Vec<Turn>>,
    cold: Vec<Turn>,
    /// Whether the page cache could be dropped (root on Linux).
    dropped: bool,
    used: u64,
    warm_tier: u64,
    peak_rss: u64,
    hwm: u64,
}

pub fn run(env: &Env, args: BenchSwapArgs) -> Result<ExitCode> {
    let llama = LlamaSettings::resolve(&args.llama, &env.config);
    let (paths, ids) = two_models(env, &args)?;
    let work = tempfile::Builder::new()
        .prefix("kvrun-bench-swap-")
        .tempdir()?;
    let budget = budget(&args, work.path(), &paths, &llama, &ids)?;
    println!(
        "kvrun bench swap: {} and {} under a {} budget, {} prompt tokens, {} rounds, {} threads",
        ids[0],
        ids[1],
        human_bytes(budget),
        args.prompt_tokens,
        args.rounds,
        llama.threads
    );
    let served = serve_turns(&args, work.path(), &paths, &llama, &ids, budget)?;
    let fresh = fresh_starts(work.path(), &paths, &llama, served.dropped)?;
    print_swap_cost(&ids, &served, &fresh);
    print_time_to_first_token(&ids, &served);
    print_memory(&served, budget);
    super::swap_mixed::measure(&args, work.path(), &paths, &llama, &ids, budget)?;
    Ok(ExitCode::SUCCESS)
}

/// The two models of `--models`: their files and their ids (the files' stems).
fn two_models(env: &Env, args: &BenchSwapArgs) -> Result<(Vec<PathBuf>, Vec<String>)> {
    let [a, b] = args.models.as_slice() else {
        bail!("--models takes two models, e.g. --models gemma3,smollm2");
    };
    let mut paths = Vec::new();
    for name in [a, b] {
        let choice = crate::models::choose(
            Some(name),
            &env.config,
            &env.paths,
            crate::models::Purpose::Serve,
        );
        crate::models::validate(&choice)?;
        paths.push(choice.path);
    }
    let ids: Vec<String> = paths.iter().map(|p| stem(p)).collect();
    if ids[0] == ids[1] {
        bail!("--models names one model twice");
    }
    Ok((paths, ids))
}

/// `--budget`, or what the larger model holds once loaded, measured, plus 5%.
fn budget(
    args: &BenchSwapArgs,
    work: &Path,
    paths: &[PathBuf],
    llama: &LlamaSettings,
    ids: &[String],
) -> Result<u64> {
    Ok(match &args.budget {
        Some(text) => parse_bytes(text).map_err(|e| anyhow!("--budget: {e}"))?,
        None => {
            let charges = probe_charges(&home(work, "probe", paths)?, llama, ids)?;
            charges.iter().copied().max().unwrap_or(0) / 100 * 105
        }
    })
}

/// Both models behind one server under `budget`: each one's first call, `args.rounds`
/// rounds of returning calls, and a returning call from a cold page cache.
fn serve_turns(
    args: &BenchSwapArgs,
    work: &Path,
    paths: &[PathBuf],
    llama: &LlamaSettings,
    ids: &[String],
    budget: u64,
) -> Result<Served> {
    let home = home(work, "swap", paths)?;
    let budget_arg = budget.to_string();
    let server = ChildServer::spawn_serving(
        &home,
        None,
        llama,
        &[
            "--memory-budget",
            &budget_arg,
            "--default-model",
            "none",
            "--keep-alive",
            "-1",
        ],
    )?;
    let peak = RssSampler::start(server.pid());
    let text = bench_text(args.prompt_tokens as usize * CHARS_PER_TOKEN);
    let mut first = Vec::new();
    let mut warm: Vec<Vec<Turn>> = vec![Vec::new(), Vec::new()];
    let mut cold = Vec::new();
    for (m, id) in ids.iter().enumerate() {
        first.push(turn(&server, ids, m, &format!("{text} {id}"), 0)?);
    }
    for round in 1..=args.rounds {
        for (m, id) in ids.iter().enumerate() {
            let prompt = format!("{text} {id} round {round}.");
            warm[m].push(turn(&server, ids, m, &prompt, round)?);
        }
    }
    let dropped = drop_page_cache();
    for (m, id) in ids.iter().enumerate() {
        if dropped {
            drop_page_cache();
        }
        let prompt = format!("{text} {id} cold.");
        cold.push(turn(&server, ids, m, &prompt, args.rounds + 1)?);
    }
    let stats = server.get_json("/v1/kvrun/stats")?;
    let (peak_rss, hwm) = peak.stop();
    server.stop()?;
    Ok(Served {
        first,
        warm,
        cold,
        dropped,
        used: stats["models"]["used"].as_u64().unwrap_or(0),
        warm_tier: stats["stats"]["warm"]["used"].as_u64().unwrap_or(0),
        peak_rss,
        hwm,
    })
}

/// Each model's fresh `kvrun serve MODEL` process to `listening`, from the page cache and
/// cold (ms): what a router that restarts llama.cpp per model pays.
fn fresh_starts(
    work: &Path,
    paths: &[PathBuf],
    llama: &LlamaSettings,
    dropped: bool,
) -> Result<Vec<[f64; 2]>> {
    let mut fresh = Vec::new();
    for (m, path) in paths.iter().enumerate() {
        let mut times = [0.0; 2];
        for (i, cold_start) in [false, true].into_iter().enumerate() {
            let dir = home_of(work, &format!("fresh-{m}-{cold_start}"))?;
            if cold_start && dropped {
                drop_page_cache();
            }
            let started = Instant::now();
            let child = ChildServer::spawn_serving(&dir, Some(path), llama, &[])?;
            times[i] = started.elapsed().as_secs_f64() * 1e3;
            child.stop()?;
        }
        fresh.push(times);
    }
    Ok(fresh)
}

fn ms_median(turns: &[Turn], f: impl Fn(&Turn) -> f64) -> f64 {
    median(&turns.iter().map(f).collect::<Vec<_>>())
}

fn print_swap_cost(ids: &[String], served: &Served, fresh: &[[f64; 2]]) {
    println!();
    println!(
        "Swap cost, ms: the loaded model unloaded (its conversations saved), the other loaded"
    );
    println!(
        "{:<40} {:>12} {:>10} {:>10} {:>22}",
        "swap to", "unload+save", "load", "swap", "fresh process (serve)"
    );
    let cold = match served.dropped {
        true => "cold",
        false => "page cache (no root: not dropped)",
    };
    for (m, id) in ids.iter().enumerate() {
        let unload = ms_median(&served.warm[m], |t| t.unload_ms);
        let load = ms_median(&served.warm[m], |t| t.load_ms);
        let c = &served.cold[m];
        for (label, unload, load, fresh) in [
            ("page cache", unload, load, fresh[m][0]),
            (cold, c.unload_ms, c.load_ms, fresh[m][1]),
        ] {
            println!(
                "{:<40} {:>12.1} {:>10.1} {:>10.1} {:>22.1}",
                format!("{id}, {label}"),
                unload,
                load,
                unload + load,
                fresh
            );
        }
    }
}

fn print_time_to_first_token(ids: &[String], served: &Served) {
    println!();
    println!("Time to first token, ms: a conversation's first call, and after its model was swapped out and back");
    println!(
        "{:<28} {:>8} {:>14} {:>16} {:>8} {:>14}",
        "model", "prompt", "first call", "returning", "cached", "returning cold"
    );
    let ms = |t: &Turn| t.ttft.as_secs_f64() * 1e3;
    for (m, id) in ids.iter().enumerate() {
        let warm = &served.warm[m];
        println!(
            "{:<28} {:>8} {:>14.1} {:>16.1} {:>8} {:>14.1}",
            id,
            warm.first().map_or(0, |t| t.prompt_tokens),
            ms(&served.first[m]),
            ms_median(warm, ms),
            warm.iter().map(|t| t.cached).min().unwrap_or(0),
            ms(&served.cold[m])
        );
    }
}

fn print_memory(served: &Served, budget: u64) {
    println!();
    println!("Memory");
    for (what, bytes) in [
        ("budget", budget),
        ("charged at the end (one model loaded)", served.used),
        ("peak resident set, sampled every 20 ms", served.peak_rss),
        ("peak resident set, VmHWM", served.hwm),
        (
            "of which may be the warm tier (budgeted apart)",
            served.warm_tier,
        ),
    ] {
        println!("{what:<44} {:>12}", human_bytes(bytes));
    }
}

/// Each model's charge once loaded, from a server with the default budget.
fn probe_charges(home: &Path, llama: &LlamaSettings, ids: &[String]) -> Result<Vec<u64>> {
    let server = ChildServer::spawn_serving(home, None, llama, &["--default-model", "none"])?;
    for id in ids {
        let body = json!({"model": id, "prompt": "Hello", "max_tokens": 1, "temperature": 0});
        post_ok(server.agent(), server.url(), "/v1/completions", &body)?;
    }
    let stats = server.get_json("/v1/kvrun/stats")?;
    server.stop()?;
    Ok(ids
        .iter()
        .map(|id| {
            let m = stats["models"]["models"]
                .as_array()
                .and_then(|all| all.iter().find(|m| m["id"] == id.as_str()))
                .cloned()
                .unwrap_or(Value::Null);
            ["weights", "kv", "compute"]
                .iter()
                .map(|k| m["charge"][k].as_u64().unwrap_or(0))
                .sum()
        })
        .collect())
}

/// A streamed completion of `prompt` by model `m`, with the server's swap figures.
fn turn(server: &ChildServer, ids: &[String], m: usize, prompt: &str, round: u32) -> Result<Turn> {
    let body = json!({"model": ids[m], "prompt": prompt, "max_tokens": 4, "temperature": 0,
        "stream": true, "stream_options": {"include_usage": true}, "user": format!("bench-{m}")});
    let sent = Instant::now();
    let mut response = post_ok(server.agent(), server.url(), "/v1/completions", &body)?;
    let mut ttft = None;
    let mut usage = Value::Null;
    for chunk in sse_events(&mut response) {
        let chunk = chunk?;
        if ttft.is_none() && chunk["choices"][0]["text"].is_string() {
            ttft = Some(sent.elapsed());
        }
        if chunk["usage"].is_object() {
            usage = chunk["usage"].clone();
        }
    }
    let stats = server.get_json("/v1/kvrun/stats")?;
    let model = |id: &str| {
        stats["models"]["models"]
            .as_array()
            .and_then(|all| all.iter().find(|x| x["id"] == id))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let this = model(&ids[m]);
    let other = model(&ids[1 - m]);
    // The other model was unloaded for this request only after the first round.
    let unloaded = round > 0 || m > 0;
    Ok(Turn {
        ttft: ttft.ok_or_else(|| anyhow!("no token streamed"))?,
        prompt_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
        cached: usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        load_ms: this["last_load_ms"].as_f64().unwrap_or(0.0),
        unload_ms: if unloaded {
            other["last_unload_ms"].as_f64().unwrap_or(0.0)
        } else {
            0.0
        },
    })
}

/// Samples a process's resident set every 20 ms until stopped; also reads its VmHWM.
struct RssSampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    pid: u32,
    thread: std::thread::JoinHandle<()>,
}

impl RssSampler {
    fn start(pid: u32) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let thread = {
            let (stop, peak) = (stop.clone(), peak.clone());
            std::thread::spawn(move || {
                let dir = PathBuf::from(format!("/proc/{pid}"));
                while !stop.load(Ordering::Relaxed) {
                    peak.fetch_max(crate::tiers::resident_bytes(&dir), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        Self {
            stop,
            peak,
            pid,
            thread,
        }
    }

    /// The sampled peak and VmHWM, in bytes.
    fn stop(self) -> (u64, u64) {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        let hwm = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024);
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.thread.join();
        (self.peak.load(Ordering::Relaxed), hwm)
    }
}
