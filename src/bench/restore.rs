//! `kvrun bench restore`: what a persisted session buys, as a table.
//!
//! For each session length it measures, on one model: the cold prefill; kvrun's snapshot
//! (bytes, full save time); a restore plus first token in a fresh process; the incremental
//! save after a short turn; and, in the same run, llama.cpp's own one-file
//! `llama_state_seq_save_file` / `load_file` on the same session as the baseline, and
//! kvrun's restore timed exactly as that load is (same process, same fresh context, cold
//! page cache). A last table shows prefix sharing: N sessions with a common prefix store
//! its pages once.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};

use super::harness::{
    bench_tokens, child_json, drop_page_cache, kv_memory, median, prefill_session,
};
use crate::bench::synthetic::synthetic_session;
use crate::cli::{BenchRestoreArgs, BenchShape};
use crate::commands::env::SESSION_SEQS;
use crate::commands::env::{load_model, Env};
use crate::llama::{Context, Model, TokenId};
use crate::paths::Paths;
use crate::session::catalog::SessionCatalog;
use crate::session::live::SavePhases;
use crate::session::SessionBinding;
use crate::settings::{LlamaSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};
use crate::synth::{GraniteSpec, Qwen35Spec, TinyLlamaSpec};

/// What a `--shape` model is written from.
enum Shape {
    Llama(TinyLlamaSpec),
    Qwen35(Qwen35Spec),
    Granite(GraniteSpec),
}

struct Row {
    tokens: usize,
    prefill_s: f64,
    save_ms: f64,
    save: SaveColumns,
    snapshot_bytes: u64,
    restore_ms: f64,
    /// The child's `restore_phases`: read (verify overlapped), verify, assemble, load.
    phases: [f64; 4],
    first_token_ms: f64,
    incremental_save_ms: f64,
    read_mb_s: f64,
    llama_save_ms: f64,
    /// llama.cpp's save plus one fsync of its file (and its directory), the durable
    /// equivalent of kvrun's save.
    llama_save_fsync_ms: f64,
    llama_load_ms: f64,
    llama_bytes: u64,
    /// kvrun's restore timed as llama.cpp's load is: in this process, into the same fresh
    /// context, from a cold page cache (milliseconds, and its read phase).
    in_process_restore_ms: f64,
    in_process_read_ms: f64,
    /// CPU time of this process (all its threads) during that restore, and during
    /// llama.cpp's load: on a machine with few cores, what bounds a restore from the page
    /// cache's reads.
    in_process_cpu_ms: f64,
    llama_load_cpu_ms: f64,
    /// The same restore and load with every byte already in the page cache, and the rate
    /// of a plain read of the snapshot's files from there: no disk, only what the cores
    /// and memory allow.
    warm: WarmCache,
}

/// Restore and load timed from a warm page cache (milliseconds), and a read of the
/// snapshot's files from it (MB/s).
#[derive(Clone, Copy, Default)]
struct WarmCache {
    restore_ms: f64,
    restore_cpu_ms: f64,
    llama_load_ms: f64,
    read_mb_s: f64,
}

pub fn run(env: &Env, args: BenchRestoreArgs) -> Result<ExitCode> {
    let mut llama = LlamaSettings::resolve(&args.llama, &env.config);
    let work = tempfile::Builder::new()
        .prefix("kvrun-bench-")
        .tempdir_in(std::env::temp_dir())
        .context("creating the benchmark folder")?;
    let choice = match args.shape {
        Some(shape) => crate::models::ModelChoice::argument(shaped_model(
            env,
            shape,
            args.shape_dir.as_deref().unwrap_or(work.path()),
        )?),
        None => crate::models::choose(
            args.model.model.as_deref(),
            &env.config,
            &env.paths,
            crate::models::Purpose::Serve,
        ),
    };
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
        rows.push(measure_length(
            env,
            &model,
            &choice.path,
            &llama,
            &home,
            &corpus[..n as usize],
            &args,
        )?);
    }
    println!("{}\n", kv_memory(&model, &llama));
    print_restore_table(&rows);
    print_like_for_like_table(&rows);
    print_warm_cache_table(&rows);
    print_save_table(&rows);
    if args.synthetic {
        println!(
            "\n(Synthetic sessions: the KV rows are noise of the model's real layout, built \
             without prefill; the restore and load columns time the same bytes a real \
             session of that length holds, the first-token and prefill columns do not apply.)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let points = |f: fn(&Row) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|r| (r.tokens as f64, f(r))).collect()
    };
    match crossover(
        &points(|r| r.restore_ms + r.first_token_ms),
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
    if args.shape.is_some() {
        // Sharing is a property of the store, measured on the default model; on a
        // generated model it would only cost another long prefill.
        return Ok(ExitCode::SUCCESS);
    }
    println!();
    // Prefix sharing on this model and on a tiny full-attention model.
    let tiny = work.path().join("tiny-llama.gguf");
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
        let choice = crate::models::ModelChoice::argument(path.clone());
        let (m, _) = load_model(&choice, llama.gpu_layers)?;
        let home = work.path().join(format!("share-{}", m.facts().description));
        let (one, all) = measure_sharing(&m, &path, &llama, &home, &args)?;
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
    Ok(ExitCode::SUCCESS)
}

/// The generated model of `shape` in `dir`: reused when a loadable one is there, else
/// written (streamed, atomically: an interrupted write leaves no half model behind).
fn shaped_model(env: &Env, shape: BenchShape, dir: &Path) -> Result<PathBuf> {
    let (name, writer) = match shape {
        BenchShape::Tiny => (
            "tiny-f16",
            Shape::Llama(TinyLlamaSpec {
                context_length: 65536,
                ..TinyLlamaSpec::default()
            }),
        ),
        BenchShape::Llama8b => (
            "llama-8b-q4_0",
            Shape::Llama(TinyLlamaSpec::llama_8b_shape()),
        ),
        BenchShape::Llama8bNarrowFfn => (
            "llama-8b-narrow-ffn-q4_0",
            Shape::Llama(TinyLlamaSpec::llama_8b_narrow_ffn()),
        ),
        BenchShape::Qwen35_27bCache => (
            "qwen35-27b-cache-f16",
            Shape::Qwen35(Qwen35Spec::qwen35_27b_cache()),
        ),
        BenchShape::Granite4HSmallCache => (
            "granite-4-h-small-cache-f16",
            Shape::Granite(GraniteSpec::granite_4_h_small_cache()),
        ),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("kvrun-bench-{name}.gguf"));
    if crate::gguf::read_header(&path).is_ok_and(|f| f.check_loadable().is_ok()) {
        return Ok(path);
    }
    env.ui.note(format!(
        "writing a random-weight {name} model to {} ...",
        path.display()
    ));
    let started = Instant::now();
    let writer = match writer {
        Shape::Llama(spec) => crate::synth::tiny_llama_writer(&spec)?,
        Shape::Qwen35(spec) => crate::synth::qwen35_writer(&spec, 1),
        Shape::Granite(spec) => crate::synth::granite_writer(&spec, 1),
    };
    crate::store::write_atomic_with(&path, |w| writer.write_to(w))?;
    crate::gguf::read_header(&path)?.check_loadable()?;
    env.ui.note(format!(
        "wrote {} in {:.1} s",
        crate::format::human_bytes(std::fs::metadata(&path)?.len()),
        started.elapsed().as_secs_f64()
    ));
    Ok(path)
}

fn print_restore_table(rows: &[Row]) {
    println!(
        "| tokens | cold prefill s | kvrun snapshot | kvrun save ms | restore ms (fresh process) \
         | read ms | verify ms | assemble ms | load ms | load MB/s | restore + first token ms \
         | speedup vs prefill | incremental save ms | restore MB/s | file read MB/s \
         | llama.cpp file | llama.cpp save ms | llama.cpp save + fsync ms | llama.cpp load ms |"
    );
    println!(
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in rows {
        let first = r.restore_ms + r.first_token_ms;
        // A synthetic session has no prefill to compare with.
        let (prefill, speedup) = match r.prefill_s.is_nan() {
            true => ("–".to_string(), "–".to_string()),
            false => (
                format!("{:.2}", r.prefill_s),
                format!("{:.0}x", r.prefill_s * 1e3 / first.max(1e-9)),
            ),
        };
        println!(
            "| {} | {prefill} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} | {:.1} | {speedup} \
             | {:.1} | {:.0} | {:.0} | {} | {:.1} | {:.1} | {:.1} |",
            r.tokens,
            crate::format::human_bytes(r.snapshot_bytes),
            r.save_ms,
            r.restore_ms,
            r.phases[0],
            r.phases[1],
            r.phases[2],
            r.phases[3],
            // llama.cpp's state_seq_set_data alone: into device memory, the upload rate.
            r.snapshot_bytes as f64 / 1e6 / (r.phases[3] / 1e3).max(1e-9),
            first,
            r.incremental_save_ms,
            r.snapshot_bytes as f64 / 1e6 / (r.restore_ms / 1e3).max(1e-9),
            r.read_mb_s,
            crate::format::human_bytes(r.llama_bytes),
            r.llama_save_ms,
            r.llama_save_fsync_ms,
            r.llama_load_ms
        );
    }
}

/// kvrun's restore and llama.cpp's load measured the same way, against the disk.
fn print_like_for_like_table(rows: &[Row]) {
    println!(
        "\nRestore like for like (both in this process, into the same fresh context, from a \
         cold page cache):\n"
    );
    println!(
        "| tokens | kvrun restore ms | read ms | CPU ms | llama.cpp load ms | CPU ms \
         | kvrun / llama.cpp | restore MB/s | file read MB/s | restore / file read |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let mb_s = r.snapshot_bytes as f64 / 1e6 / (r.in_process_restore_ms / 1e3).max(1e-9);
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2}x | {:.0} | {:.0} | {:.2} |",
            r.tokens,
            r.in_process_restore_ms,
            r.in_process_read_ms,
            r.in_process_cpu_ms,
            r.llama_load_ms,
            r.llama_load_cpu_ms,
            r.in_process_restore_ms / r.llama_load_ms.max(1e-9),
            mb_s,
            r.read_mb_s,
            mb_s / r.read_mb_s.max(1e-9)
        );
    }
}

/// The restore and the load with the disk out of the way: the snapshot in the page cache.
fn print_warm_cache_table(rows: &[Row]) {
    println!(
        "\nFrom a warm page cache (the same restore and load with no disk read: the floor this \
         machine's cores and memory set; a disk that reads the snapshot faster than the floor \
         leaves the restore bound by the CPU, kvrun's and llama.cpp's alike; the last column is \
         the best restore / file read ratio that floor allows on this disk):\n"
    );
    println!(
        "| tokens | kvrun restore ms | CPU ms | llama.cpp load ms | kvrun / llama.cpp \
         | page-cache read MB/s | restore MB/s | file read ms (cold) | restore / file read, at most |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        let w = &r.warm;
        let mb = r.snapshot_bytes as f64 / 1e6;
        let disk_ms = mb / r.read_mb_s.max(1e-9) * 1e3;
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.2}x | {:.0} | {:.0} | {:.1} | {:.2} |",
            r.tokens,
            w.restore_ms,
            w.restore_cpu_ms,
            w.llama_load_ms,
            w.restore_ms / w.llama_load_ms.max(1e-9),
            w.read_mb_s,
            mb / (w.restore_ms / 1e3).max(1e-9),
            disk_ms,
            // A cold restore takes at least the longer of the two.
            (disk_ms / w.restore_ms.max(1e-9)).min(1.0)
        );
    }
}

/// The full save's phases and what it wrote.
struct SaveColumns {
    phases: SavePhases,
    objects: usize,
    bytes: u64,
    /// Stored by the background writer during the prefill (not in the save's time).
    early_objects: usize,
    early_bytes: u64,
}

/// Where the full save's time went, next to llama.cpp's durable save of the same sequence.
fn print_save_table(rows: &[Row]) {
    println!(
        "\nFull save phases (hash, write and fsync are summed over the writer threads; \
         objects is their wall time; the pages stored in the background while the prefill \
         ran are not part of the save; the engine thread captures and slices, the rest \
         runs on the session's writer thread, queued behind those pages):\n"
    );
    println!(
        "| tokens | kvrun save ms | engine thread ms | queued ms | capture ms | parse ms | slice ms | queue wait ms \
         | hash ms | write ms | fsync ms | objects ms | dir fsync ms | manifest ms \
         | cleanup ms | objects | MB written | stored during prefill | llama.cpp file MB \
         | llama.cpp save + fsync ms | ratio |"
    );
    println!(
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:\
         |---:|---:|---:|---:|"
    );
    for r in rows {
        let p = &r.save.phases;
        println!(
            "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} \
             | {:.1} | {:.1} | {:.1} | {:.1} | {} | {:.1} | {} objects, {:.1} MB | {:.1} \
             | {:.1} | {:.2}x |",
            r.tokens,
            r.save_ms,
            p.plan_ms,
            p.queue_ms,
            p.capture_ms,
            p.parse_ms,
            p.slice_ms,
            p.queue_wait_ms,
            p.hash_ms,
            p.write_ms,
            p.fsync_ms,
            p.objects_ms,
            p.dir_fsync_ms,
            p.manifest_ms,
            p.cleanup_ms,
            r.save.objects,
            r.save.bytes as f64 / 1e6,
            r.save.early_objects,
            r.save.early_bytes as f64 / 1e6,
            r.llama_bytes as f64 / 1e6,
            r.llama_save_fsync_ms,
            r.save_ms / r.llama_save_fsync_ms.max(1e-9)
        );
    }
}

fn measure_length(
    env: &Env,
    model: &Model,
    model_path: &Path,
    llama: &LlamaSettings,
    home: &Path,
    tokens: &[TokenId],
    args: &BenchRestoreArgs,
) -> Result<Row> {
    let (synthetic, repeat) = (args.synthetic, args.repeat);
    let paths = Paths::under(home);
    let catalog = SessionCatalog::open(&paths)?;
    let mut ctx = Context::new(model, llama, DEFAULT_PAGE_TOKENS, SESSION_SEQS)?;
    let (prefill_s, saved) = if synthetic {
        env.ui.note(format!(
            "{} tokens: building a synthetic session (noise KV, no prefill) ...",
            tokens.len()
        ));
        let built = synthetic_session(
            model, model_path, &mut ctx, &catalog, "bench", llama, tokens,
        )?;
        env.ui.note(format!(
            "{} tokens: built and loaded in {:.1} s, saved in {:.0} ms",
            tokens.len(),
            built.build_s,
            built.saved.save_ms
        ));
        (f64::NAN, built.saved)
    } else {
        env.ui
            .note(format!("{} tokens: prefilling ...", tokens.len()));
        prefill_session(
            model, model_path, &mut ctx, &catalog, "bench", llama, tokens,
        )?
    };
    let save_ms = saved.save_ms;

    // llama.cpp's own single-file save and load of the same sequence.
    let llama_file = home.join("llama-seq.bin");
    let kv_len = tokens.len() - 1;
    let started = Instant::now();
    ctx.llama_seq_save_file(&llama_file, 0, &tokens[..kv_len])?;
    let llama_save_ms = started.elapsed().as_secs_f64() * 1e3;
    std::fs::File::open(&llama_file)?.sync_all()?;
    crate::store::fsync_dir(home)?;
    let llama_save_fsync_ms = started.elapsed().as_secs_f64() * 1e3;
    let llama_bytes = std::fs::metadata(&llama_file)?.len();
    drop(ctx);
    let mut fresh = Context::new(model, llama, DEFAULT_PAGE_TOKENS, SESSION_SEQS)?;
    // kvrun's snapshot: its bytes, which the disk's own read speed is measured on.
    let manifest = catalog.read_manifest("bench")?;
    let files: Vec<PathBuf> = manifest
        .restore_objects()
        .map(|id| catalog.store().object_path(&id))
        .collect();
    let snapshot_bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum::<u64>()
        + std::fs::metadata(catalog.manifest_path("bench"))?.len();
    if !drop_page_cache() {
        env.ui
            .note("(cannot drop the page cache here: restore figures are from a warm cache)");
    }
    // Each round measures every restore once, from a cold page cache, so a drift of the
    // disk's speed over the run touches them all alike; the rows show medians.
    let mut samples: Vec<RestoreSample> = Vec::new();
    for round in 1..=repeat {
        env.ui.note(format!(
            "{} tokens: restoring (round {round} of {repeat}) ...",
            tokens.len()
        ));
        samples.push(measure_restores(
            model,
            model_path,
            llama,
            home,
            &catalog,
            &mut fresh,
            &llama_file,
            tokens.len(),
            &files,
        )?);
    }
    drop(fresh);
    let sample = RestoreSample::medians(&samples);
    let turn = child_json(
        home,
        &[
            "run",
            "--session",
            "bench",
            "--raw",
            "-p",
            " And one more short line.",
            "-n",
            "4",
            "--temp",
            "0",
            "--json",
        ],
        llama,
    )?;
    Ok(Row {
        tokens: tokens.len(),
        prefill_s,
        save_ms,
        save: SaveColumns {
            phases: saved.phases,
            objects: saved.objects_written,
            bytes: saved.bytes_written,
            early_objects: saved.early_objects,
            early_bytes: saved.early_bytes,
        },
        snapshot_bytes,
        restore_ms: sample.restore_ms,
        phases: sample.phases,
        first_token_ms: sample.first_token_ms,
        incremental_save_ms: turn["save_ms"].as_f64().unwrap_or(f64::NAN),
        read_mb_s: sample.read_mb_s,
        llama_save_ms,
        llama_save_fsync_ms,
        llama_load_ms: sample.llama_load_ms,
        llama_bytes,
        in_process_restore_ms: sample.in_process_restore_ms,
        in_process_read_ms: sample.in_process_read_ms,
        in_process_cpu_ms: sample.in_process_cpu_ms,
        llama_load_cpu_ms: sample.llama_load_cpu_ms,
        warm: sample.warm,
    })
}

/// One round of restore measurements of session "bench", each from a cold page cache.
#[derive(Clone, Copy)]
struct RestoreSample {
    llama_load_ms: f64,
    in_process_restore_ms: f64,
    in_process_read_ms: f64,
    in_process_cpu_ms: f64,
    llama_load_cpu_ms: f64,
    warm: WarmCache,
    read_mb_s: f64,
    /// The fresh process's `restore_ms`, `restore_phases` and `first_token_ms`.
    restore_ms: f64,
    phases: [f64; 4],
    first_token_ms: f64,
}

impl RestoreSample {
    /// Each figure's median over the rounds.
    fn medians(samples: &[RestoreSample]) -> RestoreSample {
        let m = |f: fn(&RestoreSample) -> f64| median(&samples.iter().map(f).collect::<Vec<_>>());
        RestoreSample {
            llama_load_ms: m(|s| s.llama_load_ms),
            in_process_restore_ms: m(|s| s.in_process_restore_ms),
            in_process_read_ms: m(|s| s.in_process_read_ms),
            in_process_cpu_ms: m(|s| s.in_process_cpu_ms),
            llama_load_cpu_ms: m(|s| s.llama_load_cpu_ms),
            warm: WarmCache {
                restore_ms: m(|s| s.warm.restore_ms),
                restore_cpu_ms: m(|s| s.warm.restore_cpu_ms),
                llama_load_ms: m(|s| s.warm.llama_load_ms),
                read_mb_s: m(|s| s.warm.read_mb_s),
            },
            read_mb_s: m(|s| s.read_mb_s),
            restore_ms: m(|s| s.restore_ms),
            phases: [0, 1, 2, 3]
                .map(|i| median(&samples.iter().map(|s| s.phases[i]).collect::<Vec<_>>())),
            first_token_ms: m(|s| s.first_token_ms),
        }
    }
}

/// llama.cpp's load of its file into `fresh`, kvrun's restore into the same context, the
/// disk's read of the snapshot's `files`, and kvrun's restore in a fresh process.
#[allow(clippy::too_many_arguments)]
fn measure_restores(
    model: &Model,
    model_path: &Path,
    llama: &LlamaSettings,
    home: &Path,
    catalog: &SessionCatalog,
    fresh: &mut Context<'_>,
    llama_file: &Path,
    n_tokens: usize,
    files: &[PathBuf],
) -> Result<RestoreSample> {
    fresh.clear_all();
    drop_page_cache();
    let (started, cpu) = (Instant::now(), process_cpu_ms());
    fresh.llama_seq_load_file(llama_file, 0, n_tokens)?;
    let llama_load_ms = started.elapsed().as_secs_f64() * 1e3;
    let llama_load_cpu_ms = process_cpu_ms() - cpu;
    // kvrun's restore under exactly those conditions: the same context (emptied), the same
    // process, a cold page cache. The fresh-process figures below add what a new process
    // pays besides: on a VM, memory that has been free a while costs a host fault on first
    // touch, and a new process takes such memory for its page cache.
    fresh.clear_all();
    let (in_process_restore_ms, in_process_read_ms, in_process_cpu_ms) =
        restore_in_process(model, model_path, llama, catalog, fresh, true)?;
    // Again with the snapshot's bytes in the page cache (the restore just read them, and
    // llama.cpp's file is read first), so the disk drops out: the floor the CPU sets.
    let warm = {
        read_speed(&[llama_file.to_path_buf()])?;
        fresh.clear_all();
        let started = Instant::now();
        fresh.llama_seq_load_file(llama_file, 0, n_tokens)?;
        let llama_load_ms = started.elapsed().as_secs_f64() * 1e3;
        fresh.clear_all();
        let (restore_ms, _, restore_cpu_ms) =
            restore_in_process(model, model_path, llama, catalog, fresh, false)?;
        WarmCache {
            restore_ms,
            restore_cpu_ms,
            llama_load_ms,
            read_mb_s: read_speed(files)?,
        }
    };
    // Both reads start from a cold page cache when the system allows dropping it (root on
    // Linux), so the restore is compared with what the disk itself delivers.
    drop_page_cache();
    let read_mb_s = read_speed(files)?;
    drop_page_cache();
    let check = child_json(
        home,
        &["session", "restore", "bench", "--check", "--json"],
        llama,
    )?;
    Ok(RestoreSample {
        llama_load_ms,
        in_process_restore_ms,
        in_process_read_ms,
        in_process_cpu_ms,
        llama_load_cpu_ms,
        warm,
        read_mb_s,
        restore_ms: check["restore_ms"].as_f64().unwrap_or(f64::NAN),
        phases: ["read_ms", "verify_ms", "assemble_ms", "load_ms"]
            .map(|k| check["restore_phases"][k].as_f64().unwrap_or(f64::NAN)),
        first_token_ms: check["first_token_ms"].as_f64().unwrap_or(f64::NAN),
    })
}

/// CPU time this process has used so far, all threads, in milliseconds.
fn process_cpu_ms() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
}

/// Restores session "bench" into `ctx`, from a cold page cache when `cold`; its time, read
/// phase and CPU time.
fn restore_in_process(
    model: &Model,
    model_path: &Path,
    llama: &LlamaSettings,
    catalog: &SessionCatalog,
    ctx: &mut Context<'_>,
    cold: bool,
) -> Result<(f64, f64, f64)> {
    let manifest = catalog.read_manifest("bench")?;
    let lock = catalog.lock("bench")?;
    let sessions = SessionBinding::new(catalog, model_path, model, ctx, llama.clone())?;
    let mut live = sessions.open("bench", lock, Some(manifest), SamplingSettings::greedy());
    if cold {
        drop_page_cache();
    }
    let cpu = process_cpu_ms();
    let (_, report) = live.restore(ctx)?;
    let cpu_ms = process_cpu_ms() - cpu;
    ctx.clear_all();
    Ok((report.restore_ms, report.phases.read_ms, cpu_ms))
}

/// Sequential read speed of the snapshot's files, the `dd` figure for the same bytes.
fn read_speed(files: &[PathBuf]) -> Result<f64> {
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    let started = Instant::now();
    for f in files {
        let mut file = std::fs::File::open(f)?;
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            total += n as u64;
        }
    }
    Ok(total as f64 / 1e6 / started.elapsed().as_secs_f64().max(1e-9))
}

/// Bytes on disk for one session with the prefix, and for all of them.
fn measure_sharing(
    model: &Model,
    model_path: &Path,
    llama: &LlamaSettings,
    home: &Path,
    args: &BenchRestoreArgs,
) -> Result<(u64, u64)> {
    let paths = Paths::under(home);
    let catalog = SessionCatalog::open(&paths)?;
    let prefix = bench_tokens(model, args.share_prefix as usize);
    let mut llama = llama.clone();
    llama.ctx_size = (args.share_prefix + 512).min(model.facts().n_ctx_train);
    let mut one = 0;
    for i in 0..args.share_sessions.max(1) {
        let mut tokens = prefix.clone();
        // A distinct suffix per session, like sub-agents given different tasks.
        let suffix = model.tokenize(
            &format!(" Task {i}: summarise part {i} of the text above."),
            false,
        );
        tokens.extend_from_slice(&suffix);
        let mut ctx = Context::new(model, &llama, DEFAULT_PAGE_TOKENS, SESSION_SEQS)?;
        prefill_session(
            model,
            model_path,
            &mut ctx,
            &catalog,
            &format!("s{i}"),
            &llama,
            &tokens,
        )?;
        if i == 0 {
            one = catalog.store().usage()?.1;
        }
    }
    Ok((one, catalog.store().usage()?.1))
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
