//! `kvrun bench restore`: what a persisted session buys, as a table.
//!
//! For each session length it measures, on one model: the cold prefill; kvrun's snapshot
//! (bytes, full save time); a restore plus first token in a fresh process; the incremental
//! save after a short turn; and, in the same run, llama.cpp's own one-file
//! `llama_state_seq_save_file` / `load_file` on the same session as the baseline, and
//! kvrun's restore timed exactly as that load is (same process, same fresh context, cold
//! page cache). A last table shows prefix sharing: N sessions with a common prefix store
//! its pages once.
//!
//! [`measure`] takes the figures into a [`row`], [`tables`] prints them, [`shape`] writes the generated
//! models of `--shape`.

mod measure;
mod row;
mod shape;
mod tables;

use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context as _, Result};

use super::harness::{bench_tokens, kv_memory};
use crate::cli::BenchRestoreArgs;
use crate::env::{load_model, Env};
use crate::models::ModelChoice;
use crate::settings::LlamaSettings;
use measure::{measure_length, measure_sharing};
use row::Row;

pub fn run(env: &Env, args: BenchRestoreArgs) -> Result<ExitCode> {
    let mut llama = LlamaSettings::resolve(&args.llama, &env.config);
    let work = tempfile::Builder::new()
        .prefix("kvrun-bench-")
        .tempdir_in(std::env::temp_dir())
        .context("creating the benchmark folder")?;
    let choice = choose_model(env, &args, work.path())?;
    let (model, _) = load_model(&choice, llama.gpu_layers)?;
    let longest = args.tokens.iter().copied().max().unwrap_or(0) as usize;
    let train = model.facts().n_ctx_train as usize;
    if longest + 64 > train {
        bail!("{longest} tokens do not fit the model's context ({train}); pass smaller --tokens");
    }
    llama.ctx_size = (longest + 256).min(train) as u32;
    env.ui.note(format!(
        "benchmarking {} with {} threads in {} ...",
        model.facts().description,
        llama.threads,
        work.path().display()
    ));
    let corpus = bench_tokens(&model, longest);
    let mut rows = Vec::new();
    for &n in &args.tokens {
        let home = work.path().join(format!("home-{n}"));
        let tokens = &corpus[..n as usize];
        rows.push(measure_length(
            env,
            &model,
            &choice.path,
            &llama,
            &home,
            tokens,
            &args,
        )?);
    }
    println!("{}\n", kv_memory(&model, &llama));
    tables::print_all(&rows);
    if args.synthetic {
        println!(
            "\n(Synthetic sessions: the KV rows are noise of the model's real layout, built \
             without prefill; the restore and load columns time the same bytes a real \
             session of that length holds, the first-token and prefill columns do not apply.)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    print_crossover(&rows);
    if args.shape.is_none() {
        // Sharing is a property of the store, measured on the default model; on a
        // generated model it would only cost another long prefill.
        print_sharing(&choice, &llama, work.path(), &args)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The model benchmarked: a generated `--shape` one, or the one given or configured.
fn choose_model(env: &Env, args: &BenchRestoreArgs, work: &Path) -> Result<ModelChoice> {
    Ok(match args.shape {
        Some(s) => ModelChoice::argument(shape::shaped_model(
            env,
            s,
            args.shape_dir.as_deref().unwrap_or(work),
        )?),
        None => crate::models::choose(
            args.model.model.as_deref(),
            &env.config,
            &env.paths,
            crate::models::Purpose::Serve,
        ),
    })
}

/// The session length below which a cold prefill beats a restore plus first token.
fn print_crossover(rows: &[Row]) {
    let points = |f: fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|r| (r.tokens as f64, f(r))).collect()
    };
    match crossover(
        &points(|r| r.restore.restore_ms + r.restore.first_token_ms),
        &points(|r| r.prefill_s * 1e3),
    ) {
        Some(n) if n >= 1.0 => println!(
            "\nCrossover: below about {n:.0} tokens a cold prefill is cheaper than a restore \
             plus first token (lines fitted through the rows above)."
        ),
        Some(_) => println!(
            "\nCrossover: none; a restore plus first token is cheaper than a cold prefill at \
             every length (lines fitted through the rows above meet below one token)."
        ),
        None => {}
    }
}

/// Prefix sharing on the benchmarked model and on a tiny full-attention model.
fn print_sharing(
    choice: &ModelChoice,
    llama: &LlamaSettings,
    work: &Path,
    args: &BenchRestoreArgs,
) -> Result<()> {
    println!();
    let tiny = work.join("tiny-llama.gguf");
    let spec = crate::synth::TinyLlamaSpec {
        context_length: 2 * args.share_prefix.max(2048),
        ..Default::default()
    };
    crate::synth::write_tiny_llama(&tiny, &spec)?;
    println!(
        "| model | sessions | shared prefix | one session on disk | all sessions on disk | ratio |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    for path in [choice.path.clone(), tiny] {
        let choice = ModelChoice::argument(path.clone());
        let (m, _) = load_model(&choice, llama.gpu_layers)?;
        let home = work.join(format!("share-{}", m.facts().description));
        let (one, all) = measure_sharing(&m, &path, llama, &home, args)?;
        println!(
            "| {} | {} | {} | {} | {} | {:.2}x |",
            m.facts().description,
            args.share_sessions,
            args.share_prefix,
            crate::format::human_bytes(one),
            crate::format::human_bytes(all),
            all as f64 / one.max(1) as f64
        );
    }
    Ok(())
}

/// Where two costs, each fitted by a least-squares line through its `(tokens, ms)` points,
/// are equal: the prefix length below which the first (restore) costs more than the second
/// (prefill). `None` with fewer than two lengths, or when the second never grows faster.
fn crossover(first: &[(f64, f64)], second: &[(f64, f64)]) -> Option<f64> {
    let fit = |points: &[(f64, f64)]| -> Option<(f64, f64)> {
        let n = points.len() as f64;
        let mean_x = points.iter().map(|p| p.0).sum::<f64>() / n;
        let mean_y = points.iter().map(|p| p.1).sum::<f64>() / n;
        let var: f64 = points.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
        if points.len() < 2 || var == 0.0 {
            return None;
        }
        let cov: f64 = points.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
        let slope = cov / var;
        Some((mean_y - slope * mean_x, slope))
    };
    let ((a1, b1), (a2, b2)) = (fit(first)?, fit(second)?);
    (b2 > b1).then(|| (a1 - a2) / (b2 - b1))
}

#[cfg(test)]
mod tests {
    use super::crossover;

    #[test]
    fn the_crossover_is_where_the_fitted_lines_meet() {
        // Restore: 50 ms + 0.01 ms a token; prefill: 0.06 ms a token. Equal at 1000.
        let restore = [(1000.0, 60.0), (4000.0, 90.0), (16000.0, 210.0)];
        let prefill = [(1000.0, 60.0), (4000.0, 240.0), (16000.0, 960.0)];
        let n = crossover(&restore, &prefill).unwrap();
        assert!((n - 1000.0).abs() < 1e-6, "{n}");
        assert_eq!(crossover(&prefill, &restore), None);
        assert_eq!(crossover(&restore[..1], &prefill[..1]), None);
    }
}
