//! `bench restore`'s measurements of one session length: a session prefilled (or built
//! synthetic) and saved, llama.cpp's own file of it, and rounds of restores, each from a
//! cold page cache.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;

use super::row::{LlamaFile, RestoreSample, Row, SaveColumns, WarmCache};
use crate::bench::harness::{bench_tokens, child_json, drop_page_cache, prefill_session};
use crate::bench::synthetic::synthetic_session;
use crate::cli::BenchRestoreArgs;
use crate::env::{Env, SESSION_SEQS};
use crate::llama::{Context, Model, TokenId};
use crate::paths::Paths;
use crate::session::catalog::SessionCatalog;
use crate::session::live::SaveReport;
use crate::session::SessionBinding;
use crate::settings::{LlamaSettings, SamplingSettings, DEFAULT_PAGE_TOKENS};

/// Every figure of one row: `tokens` saved as session "bench" under `home`, then restored
/// `args.repeat` times.
pub(super) fn measure_length(
    env: &Env,
    model: &Model,
    model_path: &Path,
    llama: &LlamaSettings,
    home: &Path,
    tokens: &[TokenId],
    args: &BenchRestoreArgs,
) -> Result<Row> {
    let catalog = SessionCatalog::open(&Paths::under(home))?;
    let session = BenchSession {
        model,
        model_path,
        llama,
        home,
        catalog: &catalog,
    };
    let mut ctx = Context::new(model, llama, DEFAULT_PAGE_TOKENS, SESSION_SEQS)?;
    let (prefill_s, saved) = session.save(env, &mut ctx, tokens, args.synthetic)?;
    let llama_file = home.join("llama-seq.bin");
    let llama_saved = llama_save(&ctx, &llama_file, &tokens[..tokens.len() - 1])?;
    drop(ctx);
    let mut fresh = Context::new(model, llama, DEFAULT_PAGE_TOKENS, SESSION_SEQS)?;
    let (files, snapshot_bytes) = snapshot_files(&catalog)?;
    if !drop_page_cache() {
        env.ui
            .note("(cannot drop the page cache here: restore figures are from a warm cache)");
    }
    // Each round measures every restore once, from a cold page cache, so a drift of the
    // disk's speed over the run touches them all alike; the rows show medians.
    let mut samples: Vec<RestoreSample> = Vec::new();
    for round in 1..=args.repeat {
        env.ui.note(format!(
            "{} tokens: restoring (round {round} of {}) ...",
            tokens.len(),
            args.repeat
        ));
        samples.push(session.measure(&mut fresh, &llama_file, tokens.len(), &files)?);
    }
    drop(fresh);
    Ok(Row {
        tokens: tokens.len(),
        prefill_s,
        save_ms: saved.save_ms,
        save: SaveColumns {
            phases: saved.phases,
            objects: saved.objects_written,
            bytes: saved.bytes_written,
            early_objects: saved.early_objects,
            early_bytes: saved.early_bytes,
        },
        snapshot_bytes,
        incremental_save_ms: incremental_save_ms(home, llama)?,
        llama: llama_saved,
        restore: RestoreSample::medians(&samples),
    })
}

/// llama.cpp's own single-file save of sequence 0 (`kv` its tokens) into `file`, made
/// durable as kvrun's save is.
fn llama_save(ctx: &Context<'_>, file: &Path, kv: &[TokenId]) -> Result<LlamaFile> {
    let started = Instant::now();
    ctx.llama_seq_save_file(file, 0, kv)?;
    let save_ms = started.elapsed().as_secs_f64() * 1e3;
    std::fs::File::open(file)?.sync_all()?;
    crate::store::fsync_dir(file.parent().expect("a file in the session's home"))?;
    Ok(LlamaFile {
        save_ms,
        save_fsync_ms: started.elapsed().as_secs_f64() * 1e3,
        bytes: std::fs::metadata(file)?.len(),
    })
}

/// The files a restore of session "bench" reads, and their bytes with its manifest's: the
/// bytes the disk's own read speed is measured on.
fn snapshot_files(catalog: &SessionCatalog) -> Result<(Vec<PathBuf>, u64)> {
    let manifest = catalog.read_manifest("bench")?;
    let files: Vec<PathBuf> = manifest
        .restore_objects()
        .map(|id| catalog.store().object_path(&id))
        .collect();
    let bytes: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).map(|m| m.len()).unwrap_or(0))
        .sum::<u64>()
        + std::fs::metadata(catalog.manifest_path("bench"))?.len();
    Ok((files, bytes))
}

/// The incremental save of a short turn run on session "bench" in a fresh process.
fn incremental_save_ms(home: &Path, llama: &LlamaSettings) -> Result<f64> {
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
    Ok(turn["save_ms"].as_f64().unwrap_or(f64::NAN))
}

/// Session "bench" under `home`: what its save and every restore of it work from.
struct BenchSession<'a> {
    model: &'a Model,
    model_path: &'a Path,
    llama: &'a LlamaSettings,
    home: &'a Path,
    catalog: &'a SessionCatalog,
}

impl BenchSession<'_> {
    /// `tokens` prefilled (its time in seconds) or, when `synthetic`, built from noise
    /// without a prefill (no time); and the full save.
    fn save(
        &self,
        env: &Env,
        ctx: &mut Context<'_>,
        tokens: &[TokenId],
        synthetic: bool,
    ) -> Result<(f64, SaveReport)> {
        let (model, path, catalog, llama) = (self.model, self.model_path, self.catalog, self.llama);
        if !synthetic {
            env.ui
                .note(format!("{} tokens: prefilling ...", tokens.len()));
            return prefill_session(model, path, ctx, catalog, "bench", llama, tokens);
        }
        env.ui.note(format!(
            "{} tokens: building a synthetic session (noise KV, no prefill) ...",
            tokens.len()
        ));
        let built = synthetic_session(model, path, ctx, catalog, "bench", llama, tokens)?;
        env.ui.note(format!(
            "{} tokens: built and loaded in {:.1} s, saved in {:.0} ms",
            tokens.len(),
            built.build_s,
            built.saved.save_ms
        ));
        Ok((f64::NAN, built.saved))
    }

    /// One round: llama.cpp's load of its file into `fresh`, kvrun's restore into the same
    /// context, both again from a warm page cache, the disk's read of the snapshot's
    /// `files`, and kvrun's restore in a fresh process.
    fn measure(
        &self,
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
        // kvrun's restore under exactly those conditions: the same context (emptied), the
        // same process, a cold page cache. The fresh-process figures below add what a new
        // process pays besides: on a VM, memory that has been free a while costs a host
        // fault on first touch, and a new process takes such memory for its page cache.
        fresh.clear_all();
        let (in_process_restore_ms, in_process_read_ms, in_process_cpu_ms) =
            self.restore_in_process(fresh, true)?;
        let warm = self.warm(fresh, llama_file, n_tokens, files)?;
        // Both reads start from a cold page cache when the system allows dropping it (root
        // on Linux), so the restore is compared with what the disk itself delivers.
        drop_page_cache();
        let read_mb_s = read_speed(files)?;
        drop_page_cache();
        let check = child_json(
            self.home,
            &["session", "restore", "bench", "--check", "--json"],
            self.llama,
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

    /// The load and the restore again with the snapshot's bytes in the page cache (the
    /// restore just read them, and llama.cpp's file is read first), so the disk drops out:
    /// the floor the CPU sets.
    fn warm(
        &self,
        fresh: &mut Context<'_>,
        llama_file: &Path,
        n_tokens: usize,
        files: &[PathBuf],
    ) -> Result<WarmCache> {
        read_speed(&[llama_file.to_path_buf()])?;
        fresh.clear_all();
        let started = Instant::now();
        fresh.llama_seq_load_file(llama_file, 0, n_tokens)?;
        let llama_load_ms = started.elapsed().as_secs_f64() * 1e3;
        fresh.clear_all();
        let (restore_ms, _, restore_cpu_ms) = self.restore_in_process(fresh, false)?;
        Ok(WarmCache {
            restore_ms,
            restore_cpu_ms,
            llama_load_ms,
            read_mb_s: read_speed(files)?,
        })
    }

    /// Restores the session into `ctx`, from a cold page cache when `cold`; its time, read
    /// phase and CPU time.
    fn restore_in_process(&self, ctx: &mut Context<'_>, cold: bool) -> Result<(f64, f64, f64)> {
        let catalog = self.catalog;
        let manifest = catalog.read_manifest("bench")?;
        let lock = catalog.lock("bench")?;
        let sessions = SessionBinding::new(
            catalog,
            self.model_path,
            self.model,
            ctx,
            self.llama.clone(),
        )?;
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
}

/// CPU time this process has used so far, all threads, in milliseconds.
fn process_cpu_ms() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
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
pub(super) fn measure_sharing(
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
