//! `kvrun bench ctx`: the elastic context (`kvrun serve --ctx-size auto`) against a fixed one
//! of the same ceiling. A real `kvrun serve` child holds one conversation that grows to each
//! `--tokens` length in turn; after each, the child's resident memory and its context's
//! cells, and for the elastic one the pause of its last growth step.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Result};

use super::bench::bench_tokens;
use super::bench_serve::ChildServer;
use super::{load_model, Env};
use crate::cli::BenchCtxArgs;
use crate::engine::TokenId;
use crate::models::{ModelChoice, ModelSource};
use crate::settings::EngineSettings;

/// The tiny model's training context when no ceiling is given.
const TINY_CONTEXT: u32 = 32768;
const MIB: f64 = 1024.0 * 1024.0;

/// One measurement of a server.
struct Sample {
    rss: u64,
    cells: u64,
    pause_ms: f64,
    /// The last resize's phases: state out of the old context, the new context, state in.
    phases: [f64; 3],
}

pub fn run(env: &Env, args: BenchCtxArgs) -> Result<ExitCode> {
    let engine = EngineSettings::resolve(&args.engine, &env.config);
    let work = tempfile::Builder::new()
        .prefix("kvrun-bench-ctx-")
        .tempdir()?;
    let choice = if args.tiny {
        let path = work.path().join("tiny-llama.gguf");
        let spec = crate::gguf::TinyLlamaSpec {
            context_length: args.max_ctx_size.unwrap_or(TINY_CONTEXT),
            ..Default::default()
        };
        crate::gguf::write_tiny_llama(&path, &spec)?;
        ModelChoice {
            path,
            source: ModelSource::Argument,
        }
    } else {
        crate::models::choose(args.model.model.as_deref(), &env.config, &env.paths)
    };
    crate::models::validate(&choice)?;
    // Loaded here only for its tokenizer and training context.
    let (model, _) = load_model(&choice, 0)?;
    let ceiling = args
        .max_ctx_size
        .unwrap_or(model.facts().n_ctx_train)
        .min(model.facts().n_ctx_train);
    let mut lengths: Vec<usize> = args.tokens.iter().map(|&t| t as usize).collect();
    lengths.sort_unstable();
    if lengths.first() == Some(&0) || lengths.last().is_none_or(|&n| n + 2 > ceiling as usize) {
        bail!("give --tokens above 0 that fit the ceiling ({ceiling}) with a reply");
    }
    let prompt = bench_tokens(&model, *lengths.last().unwrap_or(&1));
    drop(model);
    let ceiling_arg = ceiling.to_string();
    let modes: [(&str, Vec<&str>); 2] = [
        ("auto", vec!["-c", "auto", "--max-ctx-size", &ceiling_arg]),
        ("fixed", vec!["-c", &ceiling_arg]),
    ];
    let mut columns = Vec::new();
    for (name, sizing) in &modes {
        env.ui.note(format!(
            "{name}: kvrun serve {}, {} threads ...",
            sizing.join(" "),
            engine.threads
        ));
        let home = work.path().join(name);
        columns.push(measure(&home, &choice, &engine, sizing, &prompt, &lengths)?);
    }
    println!(
        "{}: ceiling {ceiling} cells, --parallel 4, {} threads",
        choice.path.display(),
        engine.threads
    );
    println!("| tokens held | auto: cells | auto: RSS MiB | fixed: cells | fixed: RSS MiB | auto / fixed RSS | growth pause ms | state out ms | new context ms | state in ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let labels = std::iter::once("idle".to_string()).chain(lengths.iter().map(|n| n.to_string()));
    for (i, label) in labels.enumerate() {
        let (auto, fixed) = (&columns[0][i], &columns[1][i]);
        println!(
            "| {label} | {} | {:.0} | {} | {:.0} | {:.2} | {} |",
            auto.cells,
            auto.rss as f64 / MIB,
            fixed.cells,
            fixed.rss as f64 / MIB,
            auto.rss as f64 / (fixed.rss as f64).max(1.0),
            if i == 0 || columns[0][i - 1].cells == auto.cells {
                "- | - | - | -".to_string()
            } else {
                let [out, create, load] = auto.phases;
                format!("{:.1} | {out:.1} | {create:.1} | {load:.1}", auto.pause_ms)
            },
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// A server started with `sizing`: idle (after a one-token request, so the weights are paged
/// in as they are in any server that answered once), then holding each length.
fn measure(
    home: &Path,
    choice: &ModelChoice,
    engine: &EngineSettings,
    sizing: &[&str],
    prompt: &[TokenId],
    lengths: &[usize],
) -> Result<Vec<Sample>> {
    let mut args = sizing.to_vec();
    args.extend(["--parallel", "4"]);
    let server = ChildServer::spawn(home, choice, engine, &args)?;
    let sample = |server: &ChildServer| -> Result<Sample> {
        let stats = server.get_json("/v1/kvrun/stats")?;
        let proc_dir = Path::new("/proc").join(server.pid().to_string());
        Ok(Sample {
            rss: crate::tiers::resident_bytes(&proc_dir),
            cells: stats["stats"]["hot_cells"].as_u64().unwrap_or(0),
            pause_ms: stats["stats"]["ctx_last_resize_ms"].as_f64().unwrap_or(0.0),
            phases: ["capture_ms", "create_ms", "load_ms"].map(|phase| {
                stats["stats"]["ctx_last_resize_phases"][phase]
                    .as_f64()
                    .unwrap_or(0.0)
            }),
        })
    };
    // A prompt of its own: the one that grows shares nothing with it.
    server.complete(&prompt[prompt.len() - 2..], 1)?;
    let mut samples = vec![sample(&server)?];
    for &n in lengths {
        server.complete(&prompt[..n], 1)?;
        samples.push(sample(&server)?);
    }
    server.stop()?;
    Ok(samples)
}
