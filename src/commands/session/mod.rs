//! `kvrun session save|restore|ls|show|rm|fork|export|import`.

pub(super) mod gc;
pub(super) mod setup;

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{bail, Context as _, Result};
use serde::Serialize;

use crate::cli::{
    ChatArgs, SessionCommand, SessionExportArgs, SessionForkArgs, SessionImportArgs, SessionLsArgs,
    SessionNameArg, SessionRestoreArgs, SessionSaveArgs, SessionShowArgs,
};
use crate::commands::input::{check_text_may_fit, read_stdin, read_text_file};
use crate::commands::session::setup as session_setup;
use crate::env::SESSION_SEQS;
use crate::env::{load_model, Env};
use crate::exit::usage;
use crate::format::human_bytes;
use crate::llama::{Context, Sampler};
use crate::sequence::NoObserver;
use crate::session::catalog::SessionCatalog;
use crate::session::export;
use crate::session::live::{RestoreDecision, RestorePhases, SessionObserver};
use crate::settings::DEFAULT_PAGE_TOKENS;
use crate::ui::PrefillBar;

pub fn run(env: &Env, command: SessionCommand) -> Result<ExitCode> {
    match command {
        SessionCommand::Save(args) => save(env, args),
        SessionCommand::Restore(args) => restore(env, args),
        SessionCommand::Ls(args) => list(env, args),
        SessionCommand::Show(args) => show(env, args),
        SessionCommand::Rm(args) => remove(env, args),
        SessionCommand::Fork(args) => fork(env, args),
        SessionCommand::Export(args) => export_session(env, args),
        SessionCommand::Import(args) => import_session(env, args),
    }
}

#[derive(Serialize)]
struct SaveReportJson {
    session: String,
    tokens: usize,
    prefilled_tokens: usize,
    restored_tokens: usize,
    reused_tokens: usize,
    prefill_ms: f64,
    save_ms: f64,
    objects_written: usize,
    bytes_written: u64,
}

fn save(env: &Env, args: SessionSaveArgs) -> Result<ExitCode> {
    let text = if args.file.as_os_str() == "-" {
        read_stdin("--file - reads stdin, but nothing was piped")?
    } else {
        read_text_file(&args.file)?
    };
    if text.trim().is_empty() {
        return Err(usage("the document is empty"));
    }
    let catalog = SessionCatalog::open(&env.paths)?;
    let prepared = session_setup::prepare(
        env,
        &catalog,
        &args.name,
        args.model.model.as_deref(),
        &args.llama,
        None,
    )?;
    let llama = prepared.llama.clone();
    let (model, _) = load_model(&prepared.choice, llama.gpu_layers)?;
    let mut ctx = Context::new(&model, &llama, DEFAULT_PAGE_TOKENS, SESSION_SEQS)?;
    let mut live = session_setup::start(&catalog, prepared, &model, &ctx)?;
    let (mut conversation, mut restore) =
        session_setup::resume(env, &mut live, &mut ctx, &model, args.raw, None)?;
    check_text_may_fit(
        &text,
        conversation.seq.len(),
        ctx.info().n_ctx as usize,
        &model,
    )
    .with_context(|| format!("session '{}'", args.name))?;
    session_setup::add_user_turn(&mut ctx, &mut conversation, &text)
        .with_context(|| format!("session '{}'", args.name))?;
    session_setup::reuse_prefix(env, &mut live, &mut ctx, &mut conversation, &mut restore)?;

    let cancel = AtomicBool::new(false);
    let mut bar = PrefillBar::new(env.ui, conversation.pending(), &cancel);
    let started = Instant::now();
    let prefilled = {
        let mut observer = SessionObserver {
            session: &mut live,
            inner: &mut bar,
        };
        // Everything but the last token: it stays pending and is decoded, with logits,
        // when the session next generates (the canonical schedule).
        conversation.seq.sync(&mut ctx, false, &mut observer)?
    };
    let prefill_ms = started.elapsed().as_secs_f64() * 1e3;
    drop(bar);
    let saved = live.save(&mut ctx, &conversation.seq, conversation.state())?;
    for w in &saved.warnings {
        env.ui.warn(w);
    }
    let report = SaveReportJson {
        session: args.name.clone(),
        tokens: conversation.seq.len(),
        prefilled_tokens: prefilled,
        restored_tokens: restore.restored_tokens,
        reused_tokens: restore.reused_tokens,
        prefill_ms,
        save_ms: saved.save_ms,
        objects_written: saved.objects_written,
        bytes_written: saved.bytes_written,
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        env.ui.note(format!(
            "session '{}': {} tokens ({} prefilled in {:.0} ms, {} reused); saved {} in {:.0} ms",
            report.session,
            report.tokens,
            report.prefilled_tokens,
            report.prefill_ms,
            report.reused_tokens,
            human_bytes(report.bytes_written),
            report.save_ms
        ));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct CheckReport {
    session: String,
    tokens: usize,
    restored_tokens: usize,
    restore_ms: f64,
    /// Where `restore_ms` went.
    restore_phases: RestorePhases,
    /// Whether loading or prefilling was estimated faster.
    restore_decision: Option<RestoreDecision>,
    first_token_ms: f64,
    load_ms: f64,
    warnings: Vec<String>,
}

fn restore(env: &Env, args: SessionRestoreArgs) -> Result<ExitCode> {
    if !args.check {
        // Restoring to use it is chatting in it.
        let chat = ChatArgs {
            model: args.model,
            plain: false,
            session: Some(args.name),
            system: None,
            max_tokens: None,
            context_overflow: None,
            llama: args.llama,
            sampling: args.sampling,
            tiers: Default::default(),
        };
        return crate::commands::chat::run(env, chat);
    }
    let catalog = SessionCatalog::open(&env.paths)?;
    let prepared = session_setup::prepare(
        env,
        &catalog,
        &args.name,
        args.model.model.as_deref(),
        &args.llama,
        Some(&args.sampling),
    )?;
    if prepared.manifest.is_none() {
        bail!(
            "no session named '{}'; `kvrun session ls` lists them",
            args.name
        );
    }
    let (llama, sampling) = (prepared.llama.clone(), prepared.sampling.clone());
    let started = Instant::now();
    let (model, _) = load_model(&prepared.choice, llama.gpu_layers)?;
    let mut ctx = Context::new(&model, &llama, DEFAULT_PAGE_TOKENS, SESSION_SEQS)?;
    // The weights are memory-mapped and fault in on first use; one throw-away forward pass
    // makes "model load" mean loaded, so the figures below are the restore's own.
    let first = prepared
        .manifest
        .as_ref()
        .and_then(|m| m.tokens.first().copied());
    // (Its parse needs a memory kvrun pages; others' restore is a recompute anyway.)
    if model.facts().memory.pages() {
        crate::session::capture::probe_layout(
            &mut ctx,
            crate::session::capture::Slot::default(),
            model.facts().memory,
            first.unwrap_or(0),
        )?;
    }
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    let mut live = session_setup::start(&catalog, prepared, &model, &ctx)?;
    let (mut seq, report) = live.restore(&mut ctx)?;
    // Time to first token: decode what is pending and sample once.
    let started = Instant::now();
    if !seq.is_empty() {
        seq.sync(&mut ctx, true, &mut NoObserver)?;
        let mut sampler = Sampler::new(&model, &sampling, seq.tokens());
        ctx.sample(&mut sampler);
    }
    let check = CheckReport {
        session: args.name.clone(),
        tokens: seq.len(),
        restored_tokens: report.restored_tokens,
        restore_ms: report.restore_ms,
        restore_phases: report.phases,
        restore_decision: report.decision,
        first_token_ms: started.elapsed().as_secs_f64() * 1e3,
        load_ms,
        warnings: report.warnings.clone(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&check)?);
    } else {
        println!(
            "session '{}': {} tokens, {} restored from pages in {:.1} ms; first token after \
             {:.1} ms (model load {:.0} ms)",
            check.session,
            check.tokens,
            check.restored_tokens,
            check.restore_ms,
            check.first_token_ms,
            check.load_ms
        );
    }
    if let Some(first) = report.warnings.first() {
        bail!("{first}");
    }
    Ok(ExitCode::SUCCESS)
}

fn list(env: &Env, args: SessionLsArgs) -> Result<ExitCode> {
    if let Some(url) = &args.connect.connect {
        return crate::commands::monitor::remote::list_sessions(
            url,
            args.connect.api_key.as_deref(),
            args.json,
        );
    }
    let catalog = SessionCatalog::open(&env.paths)?;
    let sessions = catalog.list()?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&sessions)?);
        return Ok(ExitCode::SUCCESS);
    }
    if sessions.is_empty() {
        env.ui
            .note("no sessions yet; `kvrun chat --session NAME` starts one");
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<24} {:>8} {:>8} {:>10} {:>10}  MODEL",
        "NAME", "TOKENS", "KV", "DISK", "SHARED"
    )?;
    for s in sessions {
        match &s.error {
            Some(e) => writeln!(out, "{:<24} unreadable: {e}", s.name)?,
            None => writeln!(
                out,
                "{:<24} {:>8} {:>8} {:>10} {:>10}  {}",
                s.name,
                s.tokens,
                s.kv_tokens,
                human_bytes(s.bytes),
                human_bytes(s.shared_bytes),
                s.model
            )?,
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn show(env: &Env, args: SessionShowArgs) -> Result<ExitCode> {
    let catalog = SessionCatalog::open(&env.paths)?;
    let manifest = catalog.read_manifest(&args.name)?;
    if args.json {
        let mut value = serde_json::to_value(&manifest)?;
        // The token log can be long; show its size rather than every id.
        if let Some(obj) = value.as_object_mut() {
            obj.insert("tokens".into(), serde_json::json!(manifest.tokens.len()));
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    let refs = catalog.refcounts()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "session   {}", manifest.name)?;
    writeln!(
        out,
        "model     {} ({})",
        manifest.model.name, manifest.model.path
    )?;
    writeln!(
        out,
        "kv        {}, flash attention {}, {}-token pages, context {}",
        manifest.kv.kv_type.as_str(),
        manifest.kv.flash_attn.as_str(),
        manifest.kv.page_tokens,
        manifest.kv.n_ctx
    )?;
    writeln!(
        out,
        "log       {} tokens, {} messages ({}){}",
        manifest.tokens.len(),
        manifest.messages.len(),
        if manifest.raw { "raw" } else { "chat" },
        if manifest.interrupted {
            "; the last reply was interrupted"
        } else {
            ""
        }
    )?;
    match (&manifest.chat_template, manifest.raw) {
        (Some(t), _) => writeln!(out, "template  {t}")?,
        (None, false) => writeln!(out, "template  unknown (saved before kvrun recorded it)")?,
        (None, true) => {}
    }
    if let Some(miss) = &manifest.cache_miss {
        writeln!(
            out,
            "miss      at token {}: {} ({:?} became {:?})",
            miss.position, miss.reason, miss.before, miss.after
        )?;
    }
    match &manifest.snapshot {
        Some(s) => {
            let shared = s
                .pages
                .iter()
                .filter(|id| refs.get(id).copied().unwrap_or(0) > 1)
                .count();
            writeln!(
                out,
                "snapshot  {} tokens: {} pages ({} shared with other sessions), {} window pages, {}",
                s.kv_len,
                s.pages.len(),
                shared,
                s.swa_pages.len(),
                if s.tail.is_some() { "a tail" } else { "no tail" }
            )?;
            if let Some(state) = &manifest.state {
                writeln!(
                    out,
                    "state     {} tokens: the recurrent state at the log's end, one object",
                    state.kv_len
                )?;
            }
        }
        None => match &manifest.state {
            Some(state) => writeln!(
                out,
                "state     {} tokens: the model's whole sequence state, one object (its memory \
                 is not paged)",
                state.kv_len
            )?,
            None => writeln!(out, "snapshot  none (the log is prefilled on restore)")?,
        },
    }
    Ok(ExitCode::SUCCESS)
}

fn remove(env: &Env, args: SessionNameArg) -> Result<ExitCode> {
    let catalog = SessionCatalog::open(&env.paths)?;
    let report = catalog.remove(&args.name)?;
    match report.gc {
        Ok(gc) => env.ui.note(format!(
            "removed session '{}' ({} objects no longer used, {} freed)",
            args.name,
            gc.removed,
            human_bytes(gc.bytes_freed)
        )),
        Err(e) => env.ui.warn(format!(
            "removed session '{}', but collecting its pages failed ({e}); `kvrun gc` retries",
            args.name
        )),
    }
    Ok(ExitCode::SUCCESS)
}

fn fork(env: &Env, args: SessionForkArgs) -> Result<ExitCode> {
    let catalog = SessionCatalog::open(&env.paths)?;
    crate::session::name::validate_name(&args.dst).map_err(|e| usage(e.to_string()))?;
    catalog.fork(&args.src, &args.dst)?;
    env.ui
        .note(format!("forked '{}' into '{}'", args.src, args.dst));
    Ok(ExitCode::SUCCESS)
}

fn export_session(env: &Env, args: SessionExportArgs) -> Result<ExitCode> {
    let catalog = SessionCatalog::open(&env.paths)?;
    let report = export::export(&catalog, &args.name, &args.file)?;
    env.ui.note(format!(
        "exported '{}' to {} ({} objects, {})",
        args.name,
        args.file.display(),
        report.objects,
        human_bytes(report.bytes)
    ));
    Ok(ExitCode::SUCCESS)
}

fn import_session(env: &Env, args: SessionImportArgs) -> Result<ExitCode> {
    let catalog = SessionCatalog::open(&env.paths)?;
    if let Some(name) = &args.name {
        crate::session::name::validate_name(name).map_err(|e| usage(e.to_string()))?;
    }
    let model = args.model.as_deref().map(|spec| {
        crate::models::choose(
            Some(spec),
            &env.config,
            &env.paths,
            crate::models::Purpose::Chat,
        )
        .path
    });
    if let Some(path) = model.as_ref().filter(|p| !p.is_file()) {
        return Err(usage(format!(
            "--model: {} is not a model file",
            path.display()
        )));
    }
    let name = export::import(
        &catalog,
        &args.file,
        args.name.as_deref(),
        &env.paths.models,
        model.as_deref(),
    )?;
    env.ui.note(format!(
        "imported session '{name}' from {}",
        args.file.display()
    ));
    Ok(ExitCode::SUCCESS)
}
