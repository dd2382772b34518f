//! `kvrun serve`: binds first, loads the default model (on its engine's own thread),
//! answers `/health` with 503 while it loads, prints `listening on http://ADDR` once it is
//! ready, and on SIGTERM or Ctrl-C stops accepting, lets every engine cancel what runs and
//! save every conversation, and exits 0.
//!
//! With MODEL it serves that model under any name, as one model per process always did.
//! Without, it serves the models folder ([`crate::service::fleet`]): a request's `model`
//! picks one, loaded on demand within one memory budget.

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::cli::{ServeArgs, ServeModelsArgs};
use crate::env::Env;
use crate::exit::usage;
use crate::server::listen::ConnectionLimits;
use crate::server::{AppState, Guard};
use crate::service::engine::ContextSizing;
use crate::service::fleet::{FleetOptions, KeepAlive, Roster};
use crate::service::{Fleet, ServiceOptions};
use crate::settings::{CtxSize, Durability, LlamaSettings, SamplingSettings, TierSettings};
use crate::tiers::{parse_bytes, parse_duration};

const DEFAULT_PORT: u16 = 8080;
const DEFAULT_PARALLEL: u32 = 4;
const DEFAULT_MAX_QUEUE: u32 = 64;
/// With `--ctx-size auto`, conversations idle this long leave the context (their pages stay
/// in RAM and on disk), so that an idle server's context shrinks back to its floor.
const DEFAULT_ELASTIC_HOT_IDLE: Duration = Duration::from_secs(300);
/// How long a model of the models folder stays loaded after its last request (Ollama's).
const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(300);
const DEFAULT_MAX_BODY: &str = "32MiB";
/// Long enough for an agent's first, uncached 21k-token prompt on a CPU.
const DEFAULT_REQUEST_TIMEOUT: &str = "10m";
const DEFAULT_HEADER_TIMEOUT: &str = "30s";
/// Enough for the largest body (`--max-body-bytes`) over a slow link.
const DEFAULT_BODY_TIMEOUT: &str = "60s";
/// After a signal: how long in-flight responses get to finish (the engine cancels them at
/// once, so this is only their last events), then how long the engine gets to save.
const DRAIN_DEADLINE: Duration = Duration::from_secs(5);
const SAVE_DEADLINE: Duration = Duration::from_secs(30);

/// Everything `serve` settled from its flags, the config file and the defaults.
struct ServeSettings {
    addr: SocketAddr,
    guard: Guard,
    connections: ConnectionLimits,
    service: ServiceOptions,
    sampling: SamplingSettings,
    max_tokens: Option<u32>,
    roster: Roster,
    budget: u64,
    keep_alive: KeepAlive,
    swap_wait: Duration,
    durability: Durability,
}

pub fn run(env: &Env, args: ServeArgs) -> Result<ExitCode> {
    let settings = settle(env, &args)?;
    crate::store::lock::name_this_process("kvrun serve");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("kvrun-http")
        .build()
        .context("starting the HTTP runtime")?;
    runtime.block_on(serve(env, settings))
}

/// `--header-timeout` or `--body-timeout` (`part` says which): the time a client has to
/// send that part of a request, never 0.
fn client_timeout(given: Option<&String>, default: &str, part: &str) -> Result<Duration> {
    let text = given.map_or(default, String::as_str);
    let timeout = parse_duration(text).map_err(|e| usage(format!("--{part}-timeout: {e}")))?;
    if timeout.is_zero() {
        return Err(usage(format!(
            "--{part}-timeout must be above 0: a client that never finishes its {part} would \
             hold a connection forever"
        )));
    }
    Ok(timeout)
}

fn settle(env: &Env, args: &ServeArgs) -> Result<ServeSettings> {
    let config = &env.config;
    let host = args
        .host
        .clone()
        .or_else(|| config.host.clone())
        .unwrap_or_else(|| "127.0.0.1".into());
    let port = args.port.or(config.port).unwrap_or(DEFAULT_PORT);
    let addr = resolve_addr(&host, port)?;
    let api_key = args.api_key.clone().filter(|k| !k.is_empty());
    if args.api_key.as_deref() == Some("") {
        return Err(usage("--api-key (or KVRUN_API_KEY) is empty"));
    }
    if !addr.ip().is_loopback() && api_key.is_none() {
        return Err(usage(format!(
            "refusing to listen on {host} without an API key: anyone on the network could use \
             it; pass --api-key (or set KVRUN_API_KEY), or listen on 127.0.0.1"
        )));
    }
    let max_body = args
        .max_body_bytes
        .clone()
        .or_else(|| config.max_body_bytes.clone())
        .unwrap_or_else(|| DEFAULT_MAX_BODY.into());
    let max_body_bytes = parse_bytes(&max_body)
        .map_err(|e| usage(format!("--max-body-bytes: {e}")))?
        .clamp(1, usize::MAX as u64) as usize;
    let timeout = args
        .request_timeout
        .clone()
        .or_else(|| config.request_timeout.clone())
        .unwrap_or_else(|| DEFAULT_REQUEST_TIMEOUT.into());
    let request_timeout =
        Some(parse_duration(&timeout).map_err(|e| usage(format!("--request-timeout: {e}")))?)
            .filter(|d| !d.is_zero());
    let header_timeout = client_timeout(
        args.header_timeout
            .as_ref()
            .or(config.header_timeout.as_ref()),
        DEFAULT_HEADER_TIMEOUT,
        "header",
    )?;
    let body_timeout = client_timeout(
        args.body_timeout.as_ref().or(config.body_timeout.as_ref()),
        DEFAULT_BODY_TIMEOUT,
        "body",
    )?;
    let cors_origins = if args.cors_origin.is_empty() {
        config.cors_origin.clone().unwrap_or_default()
    } else {
        args.cors_origin.clone()
    };
    let max_tokens = args.max_tokens.or(config.max_tokens);
    if max_tokens == Some(0) {
        return Err(usage("max-tokens (config file) must be at least 1"));
    }
    let mut tiers = TierSettings::resolve(&args.tiers, config).map_err(usage)?;
    let sizing = context_sizing(args, config)?;
    if sizing != ContextSizing::Fixed && tiers.hot_idle.is_none() {
        tiers.hot_idle = Some(DEFAULT_ELASTIC_HOT_IDLE);
    }
    let model = crate::models::choose(
        args.model.model.as_deref(),
        config,
        &env.paths,
        crate::models::Purpose::Serve,
    );
    let alias = args.alias.clone().or_else(|| config.alias.clone());
    let single = args.model.model.is_some();
    let roster = roster(env, &args.models, &model, alias.as_deref(), single)?;
    let warm_budget = tiers.warm_budget;
    let budget = match args
        .models
        .memory_budget
        .as_ref()
        .or(config.memory_budget.as_ref())
    {
        Some(text) => parse_bytes(text).map_err(|e| usage(format!("--memory-budget: {e}")))?,
        None => {
            let available = crate::tiers::SystemMemory::read(&env.paths.data).ram_available;
            let restore_buffers = crate::session::live::KEPT_RESTORE_BUFFER_BYTES as u64;
            let set_aside = warm_budget.saturating_add(restore_buffers);
            crate::service::fleet::budget::default_budget(available, set_aside)
        }
    };
    let keep_alive = match args
        .models
        .keep_alive
        .as_ref()
        .or(config.keep_alive.as_ref())
    {
        Some(text) => KeepAlive::parse(text).map_err(|e| usage(format!("--keep-alive: {e}")))?,
        None if single => KeepAlive::Forever,
        None => KeepAlive::For(DEFAULT_KEEP_ALIVE),
    };
    let swap_wait = match args.models.swap_wait.as_ref().or(config.swap_wait.as_ref()) {
        Some(text) => parse_duration(text).map_err(|e| usage(format!("--swap-wait: {e}")))?,
        None => crate::service::fleet::DEFAULT_SWAP_WAIT,
    };
    let parallel = args
        .parallel
        .or(config.parallel)
        .unwrap_or(DEFAULT_PARALLEL);
    let max_queue = args
        .max_queue
        .or(config.max_queue)
        .unwrap_or(DEFAULT_MAX_QUEUE);
    Ok(ServeSettings {
        addr,
        connections: ConnectionLimits::new(header_timeout),
        guard: Guard {
            api_key,
            max_body_bytes,
            request_timeout,
            body_timeout,
            cors_origins,
        },
        service: ServiceOptions {
            paths: env.paths.clone(),
            model,
            llama: LlamaSettings::resolve(&args.llama, config),
            sizing,
            tiers,
            parallel: parallel as usize,
            max_queue: max_queue as usize,
            chat_template: crate::env::chat_template_override(&args.model, env).map(str::to_string),
            alias,
            warm: None,
            prefetch: None,
            keep_latest_hot: false,
        },
        sampling: SamplingSettings::resolve(&args.sampling, config),
        max_tokens,
        roster,
        budget,
        keep_alive,
        swap_wait,
        durability: args.durability.or(config.durability).unwrap_or_default(),
    })
}

/// The models this server serves: MODEL alone, or the models folder with the default
/// model (`--default-model`, KVRUN_MODEL, the config's `model`, then gemma3 when pulled)
/// and the aliases of the flags and the config file.
fn roster(
    env: &Env,
    args: &ServeModelsArgs,
    model: &crate::models::ModelChoice,
    alias: Option<&str>,
    single: bool,
) -> Result<Roster> {
    let config = &env.config;
    if single {
        if args.default_model.is_some() || !args.model_alias.is_empty() {
            return Err(usage(
                "--default-model and --model-alias are for serving the models folder; with \
                 MODEL every name reaches MODEL",
            ));
        }
        return Ok(Roster::single(&model.path, alias));
    }
    let default = args
        .default_model
        .as_ref()
        .or(config.default_model.as_ref());
    let default_path = match default.map(String::as_str) {
        Some("none") => None,
        Some(name) => Some(
            crate::models::choose(
                Some(name),
                config,
                &env.paths,
                crate::models::Purpose::Serve,
            )
            .path,
        ),
        // The built-in default counts only once pulled; one the user named must exist
        // (its load says so when it does not).
        None if model.is_default() && !model.path.exists() => None,
        None => Some(model.path.clone()),
    };
    let mut roster = Roster::folder(&env.paths.models, default_path.as_slice());
    if let Some(path) = &default_path {
        let entry = roster
            .find(&path.display().to_string())
            .ok_or_else(|| usage(format!("--default-model: no model {}", path.display())))?;
        roster.set_default(entry);
    }
    let mut aliases: Vec<(String, String)> = config
        .model_aliases
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    for pair in &args.model_alias {
        let (name, target) = pair.split_once('=').ok_or_else(|| {
            usage(format!(
                "--model-alias {pair:?}: expected NAME=MODEL, e.g. claude-*=gemma3"
            ))
        })?;
        aliases.push((name.trim().to_string(), target.trim().to_string()));
    }
    for (name, target) in aliases {
        // A short name (`smollm2`) or a path names the file it stands for.
        let path = crate::models::choose(
            Some(&target),
            config,
            &env.paths,
            crate::models::Purpose::Serve,
        )
        .path;
        let target = match roster.find(&target) {
            Some(_) => target,
            None => path.display().to_string(),
        };
        roster
            .add_alias(&name, &target)
            .map_err(|e| usage(e.to_string()))?;
    }
    if roster.entries().is_empty() {
        return Err(usage(format!(
            "no models to serve: {} has no .gguf files; run `kvrun pull`, or give MODEL",
            env.paths.models.display()
        )));
    }
    Ok(roster)
}

/// `--ctx-size auto` (the default here) unless a size is given by flag or config file.
fn context_sizing(args: &ServeArgs, config: &crate::config::FileConfig) -> Result<ContextSizing> {
    let fixed = match args.llama.ctx_size {
        Some(size) => size != CtxSize::Auto,
        None => config.ctx_size.is_some(),
    };
    if fixed {
        if args.max_ctx_size.is_some() {
            return Err(usage(
                "--max-ctx-size is the ceiling of --ctx-size auto; with a fixed --ctx-size, \
                 leave it out",
            ));
        }
        return Ok(ContextSizing::Fixed);
    }
    Ok(ContextSizing::Elastic {
        ceiling: args.max_ctx_size.or(config.max_ctx_size),
    })
}

/// The address to bind: an IP or a host name (the first address it resolves to).
fn resolve_addr(host: &str, port: u16) -> Result<SocketAddr> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .ok_or_else(|| {
            usage(format!(
                "--host {host:?} is not an address this machine can listen on"
            ))
        })
}

async fn serve(env: &Env, settings: ServeSettings) -> Result<ExitCode> {
    let ServeSettings {
        addr,
        connections,
        guard,
        service,
        sampling,
        max_tokens,
        roster,
        budget,
        keep_alive,
        swap_wait,
        durability,
    } = settings;
    // Bind before loading, so a taken port fails in a moment rather than after the load,
    // and /health can answer "loading" meanwhile.
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("reading the bound address")?;
    let fleet = Fleet::new(FleetOptions {
        service,
        roster,
        budget,
        keep_alive,
        swap_wait,
    });
    let mut state = AppState::new(fleet.clone(), std::sync::Arc::new(env.paths.clone()));
    state.sampling = std::sync::Arc::new(sampling);
    state.max_tokens = max_tokens;
    state.durability = durability;
    let app = crate::server::app(state, &guard);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(crate::server::listen::serve(
        listener,
        app,
        connections,
        async {
            let _ = stop_rx.await;
        },
    ));
    let mut signal = Box::pin(shutdown_signal()?);
    let outcome = tokio::select! {
        loaded = fleet.start_default() => loaded.map(drop).map_err(Stop::LoadFailed),
        name = &mut signal => Err(Stop::Signal(name)),
    };
    let loaded = match outcome {
        Ok(()) => {
            // The one line scripts and tests wait for; printed even with -q.
            eprintln!("listening on http://{local}");
            if !fleet.roster().is_single() {
                env.ui.note(served_models(&fleet, keep_alive));
            }
            let name = signal.await;
            tracing::info!("{name}: stopping, saving every conversation and leaving");
            Ok(())
        }
        Err(Stop::Signal(name)) => {
            tracing::info!("{name} while loading: leaving");
            Ok(())
        }
        Err(Stop::LoadFailed(e)) => Err(e),
    };
    let _ = stop_tx.send(());
    let engines = fleet.shutdown(SAVE_DEADLINE);
    if tokio::time::timeout(DRAIN_DEADLINE, server).await.is_err() {
        tracing::warn!("responses still open after {DRAIN_DEADLINE:?}; closing them");
    }
    let engines = engines.await;
    loaded?;
    engines?;
    Ok(ExitCode::SUCCESS)
}

/// What a server of the models folder serves, in one line: its models, the default, the
/// budget and the keep-alive.
fn served_models(fleet: &Fleet, keep_alive: KeepAlive) -> String {
    let roster = fleet.roster();
    let ids: Vec<&str> = roster.entries().iter().map(|e| e.id.as_str()).collect();
    let default = match roster.default_entry() {
        Some(entry) => format!("unknown names get {}", roster.entries()[entry].id),
        None => "unknown names get 404".to_string(),
    };
    let keep = match keep_alive {
        KeepAlive::Forever => "idle models stay loaded".to_string(),
        KeepAlive::For(d) => format!("idle models unload after {}s", d.as_secs()),
    };
    format!(
        "serving {} model(s): {} ({default}); {} memory budget; {keep}",
        ids.len(),
        ids.join(", "),
        crate::format::human_bytes(fleet.budget())
    )
}

enum Stop {
    Signal(&'static str),
    /// The default model's engine ended before it was ready, with this error.
    LoadFailed(anyhow::Error),
}

/// The first SIGTERM or SIGINT (Ctrl-C); its name.
fn shutdown_signal() -> Result<impl std::future::Future<Output = &'static str>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut int = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_resolve_to_addresses() {
        assert!(resolve_addr("127.0.0.1", 0).unwrap().ip().is_loopback());
        assert!(resolve_addr("[::1]", 80).unwrap().ip().is_loopback());
        assert!(!resolve_addr("0.0.0.0", 80).unwrap().ip().is_loopback());
        assert!(resolve_addr("no such host!", 80).is_err());
    }
}
