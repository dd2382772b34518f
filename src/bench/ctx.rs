//! `kvrun bench ctx`: the elastic context (`kvrun serve --ctx-size auto`) against a fixed one
//! of the same ceiling. A real `kvrun serve` child holds one conversation that grows to each
//! `--tokens` length in turn; after each, the child's resident memory and its context's
//! cells, and for the elastic one the pause of its last growth step. Then the same growth
//! in a fresh child while another stream decodes: the largest gap between that stream's
//! tokens while the growing request was admitted and prefilled.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{anyhow, bail, Result};

use crate::bench::harness::bench_tokens;
use crate::bench::harness::ChildServer;
use crate::cli::BenchCtxArgs;
use crate::env::{load_model, Env};
use crate::llama::TokenId;
use crate::models::ModelChoice;
use crate::settings::LlamaSettings;

/// The tiny model's training context when no ceiling is given.
const TINY_CONTEXT: u32 = 32768;
const MIB: f64 = 1024.0 * 1024.0;
/// The stream beside the growing request: its prompt and the most tokens it decodes (it
/// must outlast a long prefill, which takes a token of it per prompt chunk).
const SIDE_PROMPT: usize = 64;
const SIDE_TOKENS: u32 = 384;

/// One measurement of a server.
struct Sample {
    rss: u64,
    cells: u64,
    pause_ms: f64,
    /// The last resize's phases: state out of the old context, waiting for the new one,
    /// state in, and the new context's making on the builder thread (off the pause).
    phases: [f64; 4],
}

pub fn run(env: &Env, args: BenchCtxArgs) -> Result<ExitCode> {
    let llama = LlamaSettings::resolve(&args.llama, &env.config);
    let work = tempfile::Builder::new()
        .prefix("kvrun-bench-ctx-")
        .tempdir()?;
    let choice = if args.tiny {
        let path = work.path().join("tiny-llama.gguf");
        let spec = crate::synth::TinyLlamaSpec {
            context_length: args.max_ctx_size.unwrap_or(TINY_CONTEXT),
            ..Default::default()
        };
        crate::synth::write_tiny_llama(&path, &spec)?;
        ModelChoice::argument(path)
    } else {
        crate::models::choose(
            args.model.model.as_deref(),
            &env.config,
            &env.paths,
            crate::models::Purpose::Serve,
        )
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
            llama.threads
        ));
        let home = work.path().join(name);
        columns.push(measure(&home, &choice, &llama, sizing, &prompt, &lengths)?);
    }
    println!(
        "{}: ceiling {ceiling} cells, --parallel 4, {} threads",
        choice.path.display(),
        llama.threads
    );
    println!("| tokens held | auto: cells | auto: RSS MiB | fixed: cells | fixed: RSS MiB | auto / fixed RSS | growth pause ms | state out ms | waiting for the new context ms | state in ms | new context made off the engine thread ms |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
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
                "- | - | - | - | -".to_string()
            } else {
                let [out, wait, load, build] = auto.phases;
                format!(
                    "{:.1} | {out:.1} | {wait:.1} | {load:.1} | {build:.1}",
                    auto.pause_ms
                )
            },
        );
    }
    let mut beside = Vec::new();
    for (name, sizing) in &modes {
        env.ui
            .note(format!("{name}: growing beside a decoding stream ..."));
        let home = work.path().join(format!("{name}-beside"));
        beside.push(measure_beside(
            &home, &choice, &llama, sizing, &prompt, &lengths,
        )?);
    }
    println!(
        "\nWhile another stream decodes (the growing request admitted and prefilled beside it):"
    );
    println!("| tokens held | auto: largest gap between the other stream's tokens ms | its tokens meanwhile | growth pause ms | waiting for the new context ms | fixed: largest gap ms | its tokens meanwhile |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (i, n) in lengths.iter().enumerate() {
        let (auto, fixed) = (&beside[0][i], &beside[1][i]);
        let pause = match auto.resize {
            Some((pause, wait)) => format!("{pause:.1} | {wait:.1}"),
            None => "- | -".to_string(),
        };
        println!(
            "| {n} | {:.1} | {} | {pause} | {:.1} | {} |",
            auto.gap_ms, auto.tokens, fixed.gap_ms, fixed.tokens
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `kvrun serve` with `sizing` and four decoding sequences.
fn spawn(
    home: &Path,
    choice: &ModelChoice,
    llama: &LlamaSettings,
    sizing: &[&str],
) -> Result<ChildServer> {
    let mut args = sizing.to_vec();
    args.extend(["--parallel", "4"]);
    ChildServer::spawn(home, choice, llama, &args)
}

/// One growth while another stream decodes.
struct Beside {
    /// The largest gap between the other stream's tokens while the growing request ran.
    gap_ms: f64,
    /// The other stream's tokens meanwhile.
    tokens: usize,
    /// The growth's pause and its wait for the new context, if the context grew.
    resize: Option<(f64, f64)>,
}

/// A server started with `sizing` in which, for each length, a stream of another prompt
/// decodes while the conversation grows to that length.
fn measure_beside(
    home: &Path,
    choice: &ModelChoice,
    llama: &LlamaSettings,
    sizing: &[&str],
    prompt: &[TokenId],
    lengths: &[usize],
) -> Result<Vec<Beside>> {
    let server = spawn(home, choice, llama, sizing)?;
    // The end of the text: it shares no prefix with the growing conversation.
    let side = &prompt[prompt.len().saturating_sub(SIDE_PROMPT)..];
    server.complete(&side[side.len() - 2..], 1)?;
    let resizes = |server: &ChildServer| -> Result<u64> {
        let stats = server.get_json("/v1/kvrun/stats")?;
        Ok(stats["stats"]["ctx_resizes"].as_u64().unwrap_or(0))
    };
    let mut rows = Vec::new();
    for &n in lengths {
        let before = resizes(&server)?;
        let (started, first) = std::sync::mpsc::channel();
        let server = &server;
        let (times, window) = std::thread::scope(|scope| -> Result<_> {
            let stream = scope.spawn(move || server.stream_times(side, SIDE_TOKENS, started));
            let window = match first.recv() {
                Ok(()) => {
                    let from = Instant::now();
                    server.complete(&prompt[..n], 1)?;
                    Some((from, Instant::now()))
                }
                Err(_) => None,
            };
            let times = stream
                .join()
                .map_err(|_| anyhow!("the stream thread panicked"))??;
            Ok((times, window))
        })?;
        let Some((from, to)) = window else {
            bail!("the stream beside the growing request produced no text");
        };
        let gap_ms = times
            .windows(2)
            .filter(|w| w[1] > from && w[0] < to)
            .map(|w| (w[1] - w[0]).as_secs_f64() * 1e3)
            .fold(0.0, f64::max);
        let tokens = times.iter().filter(|&&t| t >= from && t <= to).count();
        let stats = server.get_json("/v1/kvrun/stats")?;
        let resize = (resizes(server)? > before).then(|| {
            let stats = &stats["stats"];
            (
                stats["ctx_last_resize_ms"].as_f64().unwrap_or(0.0),
                stats["ctx_last_resize_phases"]["wait_ms"]
                    .as_f64()
                    .unwrap_or(0.0),
            )
        });
        rows.push(Beside {
            gap_ms,
            tokens,
            resize,
        });
    }
    server.stop()?;
    Ok(rows)
}

/// A server started with `sizing`: idle (after a one-token request, so the weights are paged
/// in as they are in any server that answered once), then holding each length.
fn measure(
    home: &Path,
    choice: &ModelChoice,
    llama: &LlamaSettings,
    sizing: &[&str],
    prompt: &[TokenId],
    lengths: &[usize],
) -> Result<Vec<Sample>> {
    let server = spawn(home, choice, llama, sizing)?;
    let sample = |server: &ChildServer| -> Result<Sample> {
        let stats = server.get_json("/v1/kvrun/stats")?;
        let proc_dir = Path::new("/proc").join(server.pid().to_string());
        Ok(Sample {
            rss: crate::tiers::resident_bytes(&proc_dir),
            cells: stats["stats"]["hot_cells"].as_u64().unwrap_or(0),
            pause_ms: stats["stats"]["ctx_last_resize_ms"].as_f64().unwrap_or(0.0),
            phases: ["capture_ms", "wait_ms", "load_ms", "build_ms"].map(|phase| {
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
