//! `kvrun serve`: binds first, starts the engine (which loads the model on its own thread),
//! answers `/health` with 503 while it loads, prints `listening on http://ADDR` once it is
//! ready, and on SIGTERM or Ctrl-C stops accepting, lets the engine cancel what runs and
//! save every conversation, and exits 0.

use std::net::{SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result};

use crate::cli::ServeArgs;
use crate::commands::env::Env;
use crate::exit::usage;
use crate::server::listen::ConnectionLimits;
use crate::server::{AppState, Guard};
use crate::service::engine::ContextSizing;
use crate::service::{start, EngineThread, ServiceHandle, ServiceOptions};
use crate::settings::{CtxSize, LlamaSettings, SamplingSettings, TierSettings};
use crate::tiers::{parse_bytes, parse_duration};

const DEFAULT_PORT: u16 = 8080;
const DEFAULT_PARALLEL: u32 = 4;
const DEFAULT_MAX_QUEUE: u32 = 64;
/// With `--ctx-size auto`, conversations idle this long leave the context (their pages stay
/// in RAM and on disk), so that an idle server's context shrinks back to its floor.
const DEFAULT_ELASTIC_HOT_IDLE: Duration = Duration::from_secs(300);
const DEFAULT_MAX_BODY: &str = "32MiB";
/// Long enough for an agent's first, uncached 21k-token prompt on a CPU.
const DEFAULT_REQUEST_TIMEOUT: &str = "10m";
const DEFAULT_HEADER_TIMEOUT: &str = "30s";
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
    let header_timeout = args
        .header_timeout
        .clone()
        .or_else(|| config.header_timeout.clone())
        .unwrap_or_else(|| DEFAULT_HEADER_TIMEOUT.into());
    let header_timeout =
        parse_duration(&header_timeout).map_err(|e| usage(format!("--header-timeout: {e}")))?;
    if header_timeout.is_zero() {
        return Err(usage(
            "--header-timeout must be above 0: a client that never finishes its headers \
             would hold a connection forever",
        ));
    }
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
            cors_origins,
        },
        service: ServiceOptions {
            paths: env.paths.clone(),
            model: crate::models::choose(
                args.model.model.as_deref(),
                config,
                &env.paths,
                crate::models::Purpose::Serve,
            ),
            llama: LlamaSettings::resolve(&args.llama, config),
            sizing,
            tiers,
            parallel: parallel as usize,
            max_queue: max_queue as usize,
            chat_template: crate::commands::env::chat_template_override(&args.model, env)
                .map(str::to_string),
            alias: args.alias.clone().or_else(|| config.alias.clone()),
            prefetch: None,
            keep_latest_hot: false,
        },
        sampling: SamplingSettings::resolve(&args.sampling, config),
        max_tokens,
    })
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
    } = settings;
    // Bind before loading, so a taken port fails in a moment rather than after the load,
    // and /health can answer "loading" meanwhile.
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("reading the bound address")?;
    let (handle, engine) = start(service)?;
    let mut state = AppState::new(handle.clone(), std::sync::Arc::new(env.paths.clone()));
    state.sampling = std::sync::Arc::new(sampling);
    state.max_tokens = max_tokens;
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
        loaded = wait_until_ready(&handle, &engine) => loaded,
        name = &mut signal => Err(Stop::Signal(name)),
    };
    let loaded = match outcome {
        Ok(()) => {
            // The one line scripts and tests wait for; printed even with -q.
            eprintln!("listening on http://{local}");
            let name = signal.await;
            tracing::info!("{name}: stopping, saving every conversation and leaving");
            Ok(())
        }
        Err(Stop::Signal(name)) => {
            tracing::info!("{name} while loading: leaving");
            Ok(())
        }
        Err(Stop::LoadFailed) => Err(()),
    };
    let _ = stop_tx.send(());
    handle.shutdown();
    if tokio::time::timeout(DRAIN_DEADLINE, server).await.is_err() {
        tracing::warn!("responses still open after {DRAIN_DEADLINE:?}; closing them");
    }
    let joined = tokio::time::timeout(
        SAVE_DEADLINE,
        tokio::task::spawn_blocking(move || engine.join()),
    )
    .await;
    let engine_result = match joined {
        Ok(Ok(result)) => result.map_err(anyhow::Error::from),
        Ok(Err(e)) => Err(anyhow::anyhow!("the engine thread panicked: {e}")),
        Err(_) => Err(anyhow::anyhow!(
            "the engine did not finish saving within {SAVE_DEADLINE:?}"
        )),
    };
    match (loaded, engine_result) {
        (_, Err(e)) => Err(e),
        (Err(()), Ok(())) => Err(anyhow::anyhow!(
            "the engine stopped before the model was ready"
        )),
        (Ok(()), Ok(())) => Ok(ExitCode::SUCCESS),
    }
}

enum Stop {
    Signal(&'static str),
    /// The engine thread ended before it was ready; its error comes from `join`.
    LoadFailed,
}

/// Resolves once the model is loaded, or fails when the engine thread ended first.
async fn wait_until_ready(handle: &ServiceHandle, engine: &EngineThread) -> Result<(), Stop> {
    loop {
        if handle.info().is_some() {
            return Ok(());
        }
        if engine.is_finished() {
            return Err(Stop::LoadFailed);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
