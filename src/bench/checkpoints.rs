//! `kvrun bench checkpoints`: what the page-boundary checkpoints of recurrent and hybrid
//! models cost (bytes each, the engine thread's time copying each out of llama.cpp, as a
//! share of the prefill that made them) and what they give: a prompt that parts from a
//! held conversation near its end starts from the last checkpoint before the parting point
//! instead of prefilling everything.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::bench::harness::bench_tokens;
use crate::bench::streams::submit;
use crate::cli::BenchCheckpointsArgs;
use crate::env::{load_model, Env};
use crate::llama::TokenId;
use crate::models::ModelChoice;
use crate::sequence::MAX_CHECKPOINTS;
use crate::service::harness::ServiceHarness;
use crate::settings::LlamaSettings;
use crate::synth::TinyRecurrentArch;

/// Tokens the second prompt adds after the parting point.
const QUESTION: usize = 64;

/// The tiny models measured when none is given.
const TINY: [TinyRecurrentArch; 5] = [
    TinyRecurrentArch::Mamba2,
    TinyRecurrentArch::GraniteHybrid,
    TinyRecurrentArch::Lfm2,
    TinyRecurrentArch::Lfm2Swa,
    TinyRecurrentArch::Qwen35,
];

pub fn run(env: &Env, args: BenchCheckpointsArgs) -> Result<ExitCode> {
    if args.tokens.iter().any(|&n| n < 64) {
        bail!("give --tokens of 64 or more");
    }
    let work = tempfile::Builder::new().prefix("kvrun-bench-").tempdir()?;
    let models: Vec<(String, ModelChoice)> = if args.models.is_empty() {
        let mut tiny = Vec::new();
        for arch in TINY {
            let path = work.path().join(format!("tiny-{arch:?}.gguf"));
            crate::synth::write_tiny_recurrent(&path, arch, 0x6b76_7275_6e00_0027)?;
            tiny.push((format!("tiny {arch:?}"), ModelChoice::argument(path)));
        }
        tiny
    } else {
        args.models
            .iter()
            .map(|m| {
                let choice = crate::models::choose(
                    Some(m),
                    &env.config,
                    &env.paths,
                    crate::models::Purpose::Serve,
                );
                (m.clone(), choice)
            })
            .collect()
    };
    let llama = LlamaSettings::resolve(&args.llama, &env.config);
    env.ui.note(format!(
        "{} threads; a checkpoint at every page of 256 tokens, at most {MAX_CHECKPOINTS} kept \
         per conversation; the second prompt parts from the first 1/8 before its end and \
         adds {QUESTION} tokens",
        llama.threads
    ));
    let mut rows = Vec::new();
    for (label, choice) in &models {
        let (model, _) = load_model(choice, llama.gpu_layers)?;
        let kind = model.facts().memory.name();
        for &n in &args.tokens {
            let n = n as usize;
            let first = bench_tokens(&model, n);
            if first.len() < n {
                bail!("could not make a {n}-token prompt for {label}");
            }
            // Parts 1/8 before the first prompt's end and adds a short question, so both
            // fit the context beside each other.
            let parted = n - n / 8;
            let mut second: Vec<TokenId> = first[..parted].to_vec();
            second.extend(bench_tokens(&model, 65).iter().rev().take(QUESTION));
            let mut llama = llama.clone();
            llama.ctx_size = (2 * n + 2 * QUESTION) as u32;
            let folder = tempfile::Builder::new().prefix("kvrun-bench-").tempdir()?;
            let service = ServiceHarness::new(folder.path(), &choice.path)
                .with_model(choice.clone())
                .with_llama(llama.clone())
                .with_parallel(2)
                .with_max_queue(2)
                .start()?;
            let cold = submit(&service, &first, 1)?.usage()?;
            let after_first = service.stats()?;
            let parting = submit(&service, &second, 1)?.usage()?;
            service.stop_when_saved()?;
            let held = (after_first.checkpoints as usize).clamp(1, MAX_CHECKPOINTS);
            rows.push(Row {
                label: label.clone(),
                kind,
                tokens: n,
                checkpoints: after_first.checkpoints,
                bytes_each: after_first.checkpoint_bytes as f64 / held as f64,
                capture_ms: after_first.checkpoint_ms,
                cold: cold.time_to_first_token,
                parted,
                cached: parting.cached,
                parting: parting.time_to_first_token,
            });
        }
    }
    print_table(&rows);
    Ok(ExitCode::SUCCESS)
}

struct Row {
    label: String,
    kind: &'static str,
    tokens: usize,
    checkpoints: u64,
    bytes_each: f64,
    capture_ms: f64,
    cold: Duration,
    parted: usize,
    cached: crate::service::protocol::CachedTokens,
    parting: Duration,
}

fn print_table(rows: &[Row]) {
    println!(
        "| model | memory | prompt tokens | checkpoints | KiB each | capture ms each | capture / prefill | cold TTFT ms | parts at | cached | TTFT ms from the checkpoint |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let cold_ms = r.cold.as_secs_f64() * 1e3;
        let each = r.capture_ms / r.checkpoints.max(1) as f64;
        println!(
            "| {} | {} | {} | {} | {:.1} | {:.3} | {:.2}% | {:.0} | {} | {} hot, {} stored | {:.0} |",
            r.label,
            r.kind,
            r.tokens,
            r.checkpoints,
            r.bytes_each / 1024.0,
            each,
            100.0 * r.capture_ms / cold_ms.max(1e-9),
            cold_ms,
            r.parted,
            r.cached.hot,
            r.cached.warm + r.cached.cold,
            r.parting.as_secs_f64() * 1e3
        );
    }
}
