//! `kvrun bench switch`: an agent and its sub-agents. N sessions of T tokens each, a chat
//! engine whose hot tier and warm budget hold about a third of them, and a round-robin of
//! switches, each followed by one generated token. Reports time-to-first-token per switch
//! against prefilling the same context, each tier's high-water mark, what prefetch does to a
//! cold restore, and f16 against q8_0.

use std::process::ExitCode;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::bench::harness::bench_tokens;
use crate::bench::harness::{child_json, drop_page_cache, median, prefill_session};
use crate::chat::protocol::{ChatEvent, UserCommand};
use crate::chat::{self, ChatOptions};
use crate::cli::BenchSwitchArgs;
use crate::env::SESSION_SEQS;
use crate::env::{load_model, Env};
use crate::format::human_bytes;
use crate::llama::Context;
use crate::models::ModelChoice;
use crate::paths::Paths;
use crate::session::catalog::SessionCatalog;
use crate::settings::{
    ContextOverflow, KvType, LlamaSettings, SamplingSettings, TierSettings, DEFAULT_PAGE_TOKENS,
};

pub fn run(env: &Env, args: BenchSwitchArgs) -> Result<ExitCode> {
    let mut llama = LlamaSettings::resolve(&args.llama, &env.config);
    let choice = crate::models::choose(
        args.model.model.as_deref(),
        &env.config,
        &env.paths,
        crate::models::Purpose::Serve,
    );
    let (model, _) = load_model(&choice, llama.gpu_layers)?;
    let n = args.sessions.max(2) as usize;
    let t = args.tokens as usize;
    if t + 512 > model.facts().n_ctx_train as usize {
        bail!("{t} tokens do not fit the model's context");
    }
    let work = tempfile::Builder::new().prefix("kvrun-bench-").tempdir()?;
    let mut kv_rows = Vec::new();
    for kv_type in [KvType::F16, KvType::Q8_0] {
        llama.kv_type = kv_type;
        llama.ctx_size = (t + 512) as u32;
        let home = work.path().join(kv_type.as_str());
        let paths = Paths::under(&home);
        let catalog = SessionCatalog::open(&paths)?;
        env.ui.note(format!(
            "{}: prefilling {n} sessions of {t} tokens ...",
            kv_type.as_str()
        ));
        let mut prefill_s = Vec::new();
        for i in 0..n {
            // A distinct first page per session, so no two share pages.
            let mut tokens = model.tokenize_prompt(&format!("Sub-agent {i} notes.\n"));
            tokens.extend(bench_tokens(&model, t - tokens.len()));
            let mut ctx = Context::new(&model, &llama, DEFAULT_PAGE_TOKENS, SESSION_SEQS)?;
            let (s, _) = prefill_session(
                &model,
                &choice.path,
                &mut ctx,
                &catalog,
                &format!("agent{i}"),
                &llama,
                &tokens,
            )?;
            prefill_s.push(s);
        }
        let session_bytes = catalog.list()?.first().map_or(0, |s| s.bytes);
        let check = child_json(
            &home,
            &["session", "restore", "agent0", "--check", "--json"],
            &llama,
        )?;
        kv_rows.push((
            kv_type,
            session_bytes as f64 / t as f64,
            check["restore_ms"].as_f64().unwrap_or(f64::NAN),
        ));
        if kv_type == KvType::F16 {
            let third = n.div_ceil(3);
            let tiers = TierSettings {
                hot_sessions: third as u32,
                warm_budget: session_bytes * third as u64,
                cold_budget: None,
                hot_idle: None,
                warm_idle: None,
            };
            env.ui.note("switching ...");
            // The hot tier is the context's cell pool: size it for a third of the sessions.
            let mut hot_engine = llama.clone();
            hot_engine.ctx_size =
                (third * (t + 256) + 512).min(model.facts().n_ctx_train as usize) as u32;
            let stats = switch_rounds(&paths, &choice, &hot_engine, tiers, n, args.rounds)?;
            let prefill = median(&prefill_s);
            println!("| switches | median TTFT ms | worst TTFT ms | prefill of one session s | hot high-water | warm high-water (budget) | cold |");
            println!("|---:|---:|---:|---:|---:|---:|---:|");
            println!(
                "| {} | {:.0} | {:.0} | {:.1} | {} | {} ({}) | {} |",
                stats.ttft_ms.len(),
                median(&stats.ttft_ms),
                stats.ttft_ms.iter().copied().fold(0.0, f64::max),
                prefill,
                human_bytes(stats.hot_high),
                human_bytes(stats.warm_high),
                human_bytes(session_bytes * third as u64),
                human_bytes(stats.cold_bytes),
            );
            println!();
            let (cold_ms, prefetched_ms) = prefetch_effect(&paths, &choice, &llama)?;
            println!("| cold restore of one session | without prefetch ms | prefetched while the model loads ms |");
            println!("|---|---:|---:|");
            println!("| {t} tokens | {cold_ms:.0} | {prefetched_ms:.0} |");
            println!();
        }
    }
    println!("| KV type | bytes per token (snapshot) | restore ms ({t} tokens, fresh process) |");
    println!("|---|---:|---:|");
    for (kv, per_token, ms) in kv_rows {
        println!("| {} | {per_token:.0} | {ms:.1} |", kv.as_str());
    }
    Ok(ExitCode::SUCCESS)
}

struct SwitchStats {
    ttft_ms: Vec<f64>,
    hot_high: u64,
    warm_high: u64,
    cold_bytes: u64,
}

fn options(
    paths: &Paths,
    choice: &ModelChoice,
    llama: &LlamaSettings,
    tiers: TierSettings,
    session: Option<String>,
) -> ChatOptions {
    ChatOptions {
        paths: paths.clone(),
        model: ModelChoice::argument(choice.path.clone()),
        llama: llama.clone(),
        sampling: SamplingSettings::greedy(),
        session,
        system: None,
        overflow: ContextOverflow::Error,
        max_tokens: Some(1),
        tiers,
        chat_template: None,
        sizing: crate::service::engine::ContextSizing::Fixed,
    }
}

/// Waits for an event matching `pick`, keeping track of memory snapshots.
fn until<T>(
    events: &Receiver<ChatEvent>,
    stats: &mut SwitchStats,
    mut pick: impl FnMut(&ChatEvent) -> Option<T>,
) -> Result<T> {
    loop {
        let event = events.recv_timeout(Duration::from_secs(600))?;
        if let ChatEvent::Memory(m) = &event {
            stats.hot_high = stats.hot_high.max(m.hot.used_bytes);
            stats.warm_high = stats.warm_high.max(m.warm.used_bytes);
            stats.cold_bytes = m.cold.used_bytes;
        }
        if let ChatEvent::Error(e) = &event {
            bail!("{e}");
        }
        if let Some(found) = pick(&event) {
            return Ok(found);
        }
    }
}

fn switch_rounds(
    paths: &Paths,
    choice: &ModelChoice,
    llama: &LlamaSettings,
    tiers: TierSettings,
    n: usize,
    rounds: u32,
) -> Result<SwitchStats> {
    let (tx, events) = std::sync::mpsc::channel();
    let (commands, handle) = chat::spawn(
        options(paths, choice, llama, tiers, None),
        tx,
        crate::interrupt::Interrupt::new(),
    )?;
    let mut stats = SwitchStats {
        ttft_ms: Vec::new(),
        hot_high: 0,
        warm_high: 0,
        cold_bytes: 0,
    };
    until(&events, &mut stats, |e| {
        matches!(e, ChatEvent::Ready { .. }).then_some(())
    })?;
    for _ in 0..rounds {
        for i in 0..n {
            let started = Instant::now();
            commands.send(UserCommand::Switch(format!("agent{i}")))?;
            commands.send(UserCommand::Send(" Next step:".into()))?;
            until(&events, &mut stats, |e| {
                matches!(e, ChatEvent::Token(_) | ChatEvent::TurnDone { .. }).then_some(())
            })?;
            stats.ttft_ms.push(started.elapsed().as_secs_f64() * 1e3);
            until(&events, &mut stats, |e| {
                matches!(e, ChatEvent::Context { .. }).then_some(())
            })?;
        }
    }
    commands.send(UserCommand::Quit)?;
    until(&events, &mut stats, |e| {
        matches!(e, ChatEvent::Exited).then_some(())
    })?;
    let _ = handle.join();
    Ok(stats)
}

/// Cold restore time of one session with an empty warm pool, and with its pages prefetched
/// while the model loads (the engine does that for the session it starts in).
fn prefetch_effect(
    paths: &Paths,
    choice: &ModelChoice,
    llama: &LlamaSettings,
) -> Result<(f64, f64)> {
    let measure = |start_in: Option<String>| -> Result<f64> {
        drop_page_cache();
        let (tx, events) = std::sync::mpsc::channel();
        let tiers = TierSettings::default();
        let (commands, handle) = chat::spawn(
            options(paths, choice, llama, tiers, start_in.clone()),
            tx,
            crate::interrupt::Interrupt::new(),
        )?;
        let mut stats = SwitchStats {
            ttft_ms: Vec::new(),
            hot_high: 0,
            warm_high: 0,
            cold_bytes: 0,
        };
        if start_in.is_none() {
            until(&events, &mut stats, |e| {
                matches!(e, ChatEvent::Ready { .. }).then_some(())
            })?;
            commands.send(UserCommand::Switch("agent1".into()))?;
        }
        let ms = until(&events, &mut stats, |e| match e {
            ChatEvent::Restored { ms, .. } => Some(*ms),
            _ => None,
        })?;
        commands.send(UserCommand::Quit)?;
        until(&events, &mut stats, |e| {
            matches!(e, ChatEvent::Exited).then_some(())
        })?;
        let _ = handle.join();
        Ok(ms)
    };
    let cold = measure(None)?;
    let prefetched = measure(Some("agent1".into()))?;
    Ok((cold, prefetched))
}
