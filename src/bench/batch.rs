//! `kvrun bench batch`: aggregate decode throughput of N concurrent streams through the
//! service engine (continuous batching), against llama.cpp's own multi-sequence batched
//! decode through the same bindings; and the time to first token of a request that arrives
//! while the others decode.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};

use crate::bench::harness::bench_tokens;
use crate::bench::streams::{late_arrival, streams};
use crate::cli::BenchBatchArgs;
use crate::env::{load_model, Env};
use crate::llama::{BatchEntry, Context, Model, Sampler, TokenId};
use crate::service::harness::ServiceHarness;
use crate::settings::{LlamaSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};

pub fn run(env: &Env, args: BenchBatchArgs) -> Result<ExitCode> {
    let mut llama = LlamaSettings::resolve(&args.llama, &env.config);
    let choice = crate::models::choose(
        args.model.model.as_deref(),
        &env.config,
        &env.paths,
        crate::models::Purpose::Serve,
    );
    let (model, _) = load_model(&choice, llama.gpu_layers)?;
    let most = args.streams.iter().copied().max().unwrap_or(0) as usize;
    if most == 0 || args.decode_tokens < 2 || args.prompt_tokens == 0 {
        bail!(
            "give stream counts above 0, --prompt-tokens above 0 and --decode-tokens of 2 or more"
        );
    }
    let (prompt, decode) = (args.prompt_tokens as usize, args.decode_tokens as usize);
    // Room for every stream and one late arrival, each with its prompt and reply.
    llama.ctx_size = ((most + 1) * (prompt + decode + 8)) as u32;
    if llama.ctx_size > model.facts().n_ctx_train {
        bail!("{} tokens do not fit the model's context", llama.ctx_size);
    }
    let prompts: Vec<Vec<TokenId>> = (0..=most)
        .map(|i| {
            // A distinct start per stream: no stream reuses another's cells.
            let mut t = model.tokenize_prompt(&format!("Stream {i}.\n"));
            t.extend(bench_tokens(&model, prompt.saturating_sub(t.len()).max(1)));
            t.truncate(prompt.max(2));
            t
        })
        .collect();
    env.ui.note(format!(
        "{}: {} threads, prompts of {prompt} tokens, {decode} generated per stream",
        model.facts().description,
        llama.threads
    ));
    let mut rows = Vec::new();
    for &n in &args.streams {
        let n = n.max(1) as usize;
        let mut row = Row {
            streams: n,
            ..Row::default()
        };
        // Alternating the two keeps a burst of load on a shared machine from landing on
        // only one of them.
        for _ in 0..args.rounds {
            let work = tempfile::Builder::new().prefix("kvrun-bench-").tempdir()?;
            let service = ServiceHarness::new(work.path(), &choice.path)
                .with_model(choice.clone())
                .with_llama(llama.clone())
                .with_parallel(n + 1)
                .with_max_queue(n + 1)
                .start()?;
            let served = streams(&service, &prompts[..n], decode)?;
            // The late arrival: one more request while n streams decode.
            let late = late_arrival(&service, &prompts[..n], &prompts[n], decode)?;
            let stats = service.stop_when_saved()?;
            row.saves += stats.saves;
            row.save_engine_ms += stats.save_engine_ms;
            row.saves_landed += stats.saves_landed;
            row.save_writer_ms += stats.save_writer_ms;
            let llama =
                on_a_thread_of_its_own(|| llama_batched(&model, &llama, &prompts[..n], decode))?;
            row.served = row.served.max(served);
            row.llama = row.llama.max(llama);
            row.late = row.late.max(late);
        }
        rows.push(row);
    }
    print_table(&rows);
    print_saves(&rows);
    Ok(ExitCode::SUCCESS)
}

fn print_table(rows: &[Row]) {
    let single = rows.iter().find(|r| r.streams == 1).cloned();
    println!("| streams | service decode tok/s | llama.cpp batched tok/s | service / llama.cpp | service / its 1 stream | llama.cpp / its 1 stream | TTFT of a request arriving while they decode, ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows.iter().cloned() {
        let scaling = |of: fn(&Row) -> f64| {
            single.as_ref().map_or("-".to_string(), |s| {
                format!("{:.2}", of(&r) / of(s).max(1e-9))
            })
        };
        println!(
            "| {} | {:.1} | {:.1} | {:.2} | {} | {} | {:.0} |",
            r.streams,
            r.served,
            r.llama,
            r.served / r.llama.max(1e-9),
            scaling(|r| r.served),
            scaling(|r| r.llama),
            r.late.as_secs_f64() * 1e3
        );
    }
}

/// The reply-end saves of all rounds: what the engine thread spent on each (capture and
/// slicing, between batch steps), and what their commits took on the sessions' writer
/// threads, which before the commits moved there the engine thread spent too.
fn print_saves(rows: &[Row]) {
    println!(
        "\n| streams | saves | engine thread ms per save | writer thread ms per save (off the engine thread) |"
    );
    println!("|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {:.1} | {:.1} |",
            r.streams,
            r.saves,
            r.save_engine_ms / r.saves.max(1) as f64,
            r.save_writer_ms / r.saves_landed.max(1) as f64
        );
    }
}

/// One stream count's figures over all rounds.
#[derive(Debug, Clone, Default)]
struct Row {
    streams: usize,
    /// Best aggregate decode tokens/s through the service engine.
    served: f64,
    /// Best aggregate decode tokens/s of llama.cpp's own batched decode.
    llama: f64,
    /// Slowest time to first token of the late arrival.
    late: Duration,
    /// Saves over all rounds and their time on the engine and the writer threads.
    saves: u64,
    save_engine_ms: f64,
    saves_landed: u64,
    save_writer_ms: f64,
}

/// Runs `f` on a thread that ends with it, as the service's engine thread does.
///
/// llama.cpp's CPU backend computes on an OpenMP team owned by the calling thread, and the
/// team lives as long as that thread. Had the main thread computed, its idle team would
/// stay for the whole benchmark, and libgomp, seeing more of its threads than cores, cuts
/// every other team's spin-waits short: the engine's steps then ran 20-40% slower than the
/// same loop on the main thread (measured), a gap of the benchmark and not of the engine.
fn on_a_thread_of_its_own<T: Send>(f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    std::thread::scope(|s| {
        s.spawn(f)
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the llama.cpp loop panicked")))
    })
}

/// llama.cpp's multi-sequence decode without the engine: prefill each prompt into its own
/// sequence, then `decode` steps of one batch holding every sequence's last token.
fn llama_batched(
    model: &Model,
    llama: &LlamaSettings,
    prompts: &[Vec<TokenId>],
    decode: usize,
) -> Result<f64> {
    let n = prompts.len();
    let mut ctx = Context::new(model, llama, DEFAULT_PAGE_TOKENS, n as u32 + 1)?;
    let greedy = SamplingSettings::greedy();
    let mut samplers: Vec<Sampler> = prompts
        .iter()
        .map(|p| Sampler::new(model, &greedy, p))
        .collect();
    let mut last = Vec::with_capacity(n);
    for (seq, p) in prompts.iter().enumerate() {
        ctx.decode(seq as i32, &p[..p.len() - 1], 0, false, |_| {
            std::ops::ControlFlow::Continue(())
        })?;
        last.push(p[p.len() - 1]);
    }
    let started = Instant::now();
    for step in 0..decode {
        let entries: Vec<BatchEntry<'_>> = last
            .iter()
            .enumerate()
            .map(|(seq, t)| BatchEntry {
                seq: seq as i32,
                tokens: std::slice::from_ref(t),
                start_pos: prompts[seq].len() - 1 + step,
                logits: true,
            })
            .collect();
        let indices = ctx.decode_many(&entries)?;
        drop(entries);
        for (seq, idx) in indices.into_iter().enumerate() {
            let idx = idx.context("a batch entry without logits")?;
            last[seq] = ctx.sample_at(&mut samplers[seq], idx);
        }
    }
    Ok((decode * n) as f64 / started.elapsed().as_secs_f64().max(1e-9))
}
