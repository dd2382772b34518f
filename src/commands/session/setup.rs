//! Opening a named session for `run`, `chat` and `session save|restore`: lock it, read its
//! manifest, settle the settings (flags given now beat what the session recorded), then
//! restore its KV cache into a fresh context.

use anyhow::Result;

use crate::cli::{LlamaArgs, SamplingArgs};
use crate::dialogue::Dialogue;
use crate::env::Env;
use crate::exit::usage;
use crate::llama::{Context, Model};
use crate::models::ModelChoice;
use crate::session::catalog::SessionCatalog;
use crate::session::error::{Incompatibility, SessionError};
use crate::session::live::{LiveSession, RestoreReport};
use crate::session::{SessionBinding, SessionManifest};
use crate::settings::{CtxSize, LlamaSettings, SamplingSettings};
use crate::store::SessionLock;

/// A locked session and the settings to open it with.
pub struct Prepared {
    pub name: String,
    pub manifest: Option<SessionManifest>,
    pub lock: SessionLock,
    pub llama: LlamaSettings,
    pub sampling: SamplingSettings,
    pub choice: ModelChoice,
}

/// The session a `--session SPEC` of `chat` or `run` means: `NAME/N` is member N of the
/// family NAME (`NAME.N` on disk); a plain NAME whose family has several members (a
/// server's client key) is its most recently used one; anything else is itself.
pub fn resolve_session_arg(catalog: &SessionCatalog, spec: &str) -> Result<String> {
    if spec.contains('/') {
        return crate::session::family::resolve_member_spec(spec).map_err(usage);
    }
    let members = catalog.family_members(spec).unwrap_or_default();
    if members.len() < 2 {
        return Ok(spec.to_string());
    }
    let latest = members
        .into_iter()
        .filter_map(|(_, name)| {
            let updated = catalog.read_manifest(&name).ok()?.updated_unix;
            Some((updated, name))
        })
        .max();
    Ok(latest.map_or_else(|| spec.to_string(), |(_, name)| name))
}

/// Locks session `name` and decides the model and settings.
pub fn prepare(
    env: &Env,
    catalog: &SessionCatalog,
    name: &str,
    model_arg: Option<&str>,
    engine_args: &LlamaArgs,
    sampling_args: Option<&SamplingArgs>,
) -> Result<Prepared> {
    crate::session::name::validate_name(name).map_err(|e| usage(e.to_string()))?;
    let (lock, manifest) = catalog.lock_and_read(name)?;
    let default_sampling = SamplingArgs::default();
    let sampling_args = sampling_args.unwrap_or(&default_sampling);
    let (mut llama, sampling) = match &manifest {
        Some(m) => (
            LlamaSettings::resolve_over(engine_args, &m.llama),
            SamplingSettings::resolve_over(sampling_args, &m.sampling),
        ),
        None => (
            LlamaSettings::resolve(engine_args, &env.config),
            SamplingSettings::resolve(sampling_args, &env.config),
        ),
    };
    if manifest.is_some() {
        // Flags and the config file were checked when read; a manifest's values here.
        llama.validate().and(sampling.validate()).map_err(|e| {
            usage(format!(
                "session '{name}' records an invalid setting: {e}; pass --{} to override it",
                e.name
            ))
        })?;
    }
    if let Some(m) = &manifest {
        // A resumed session needs room for what it already holds.
        if engine_args.ctx_size.and_then(CtxSize::tokens).is_none() {
            llama.ctx_size = llama.ctx_size.max(m.tokens.len() as u32 + 1);
        }
    }
    let choice = match (model_arg, &manifest) {
        (None, Some(m)) if std::path::Path::new(&m.model.path).exists() => {
            ModelChoice::argument(&m.model.path)
        }
        _ => crate::models::choose(
            model_arg,
            &env.config,
            &env.paths,
            crate::models::Purpose::Chat,
        ),
    };
    if let (None, Some(m)) = (model_arg, &manifest) {
        // Without this, the fallback's own complaint ("the default model is not downloaded
        // yet") would point at a model the session never used.
        if !choice.path.exists() {
            return Err(SessionError::Incompatible {
                name: name.to_string(),
                why: Incompatibility::ModelMissing {
                    name: m.model.name.clone(),
                    path: m.model.path.clone(),
                },
            }
            .into());
        }
    }
    Ok(Prepared {
        name: name.to_string(),
        manifest,
        lock,
        llama,
        sampling,
        choice,
    })
}

/// Binds the prepared session to a loaded model and its context.
pub fn start<'c>(
    catalog: &'c SessionCatalog,
    prepared: Prepared,
    model: &Model,
    ctx: &Context<'_>,
) -> Result<LiveSession<'c>> {
    let sessions = SessionBinding::new(catalog, &prepared.choice.path, model, ctx, prepared.llama)?;
    Ok(sessions.open(
        &prepared.name,
        prepared.lock,
        prepared.manifest,
        prepared.sampling,
    ))
}

/// Restores the session's KV and rebuilds its conversation (or starts a new one).
pub fn resume<'m>(
    env: &Env,
    live: &mut LiveSession<'_>,
    ctx: &mut Context<'_>,
    model: &'m Model,
    raw: bool,
    system: Option<&str>,
) -> Result<(Dialogue<'m>, RestoreReport)> {
    let Some(saved) = live.saved().cloned() else {
        return Ok((Dialogue::new(model, raw, system), RestoreReport::default()));
    };
    live.check_compatible(ctx)?;
    if raw != saved.raw && !saved.tokens.is_empty() {
        env.ui.note(format!(
            "session '{}' is a {} session; continuing it as one",
            live.name,
            if saved.raw { "raw" } else { "chat" }
        ));
    }
    let (seq, report) = live.restore(ctx)?;
    for w in &report.warnings {
        env.ui.warn(w);
    }
    Ok((Dialogue::resumed(model, &saved, seq), report))
}

/// For a log whose cache is empty, restores the longest stored page chain it begins with.
pub fn reuse_prefix(
    env: &Env,
    live: &mut LiveSession<'_>,
    ctx: &mut Context<'_>,
    conversation: &mut Dialogue<'_>,
    report: &mut RestoreReport,
) -> Result<()> {
    if conversation.seq.kv_len() > 0 {
        return Ok(());
    }
    let reuse = live.reuse_prefix(ctx, &mut conversation.seq)?;
    for w in &reuse.warnings {
        env.ui.warn(w);
    }
    report.restored_tokens += reuse.restored_tokens;
    report.reused_tokens += reuse.reused_tokens;
    report.restore_ms += reuse.restore_ms;
    report.phases.add(&reuse.phases);
    Ok(())
}

/// Adds a user turn to a resumed conversation whose cells are in `ctx`, refusing one that
/// does not fit. When the log had to be rebuilt (rendered again with another template),
/// none of the restored cells belongs to it any more, so they go.
pub fn add_user_turn(
    ctx: &mut Context<'_>,
    conversation: &mut Dialogue<'_>,
    text: &str,
) -> Result<Option<String>> {
    let n_ctx = ctx.info().n_ctx as usize;
    let note = conversation.add_user(n_ctx, text, crate::settings::ContextOverflow::Error)?;
    if conversation.seq.kv_len() == 0 {
        ctx.clear_seq(conversation.seq.seq_id());
    }
    Ok(note)
}
