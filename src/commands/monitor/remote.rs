//! `--connect URL`: `kvrun stats` and `kvrun session ls` against a running `kvrun serve`,
//! through its `/v1/kvrun/` endpoints.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use serde::Deserialize;

use crate::service::fleet::{FleetStats, ModelState};
use crate::service::{ServiceInfo, ServiceStats};

use crate::format::human_bytes;
use crate::session::SessionRow;

/// A local server answers at once; a hung one should not hang the CLI.
const TIMEOUT: Duration = Duration::from_secs(10);

/// GETs `path` from the server as JSON; a refusal or an error status becomes one line.
pub(super) fn get_json<T: serde::de::DeserializeOwned>(
    url: &str,
    path: &str,
    key: Option<&str>,
) -> Result<T> {
    let base = url.trim_end_matches('/');
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(crate::exit::usage(format!(
            "--connect {url:?}: give the server's URL, e.g. http://127.0.0.1:8080"
        )));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(TIMEOUT))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent.get(format!("{base}{path}"));
    if let Some(key) = key {
        request = request.header("Authorization", format!("Bearer {key}"));
    }
    let mut response = request
        .call()
        .map_err(|e| anyhow!("cannot reach kvrun serve at {base}: {e}"))?;
    let status = response.status();
    let body: serde_json::Value = response
        .body_mut()
        .read_json()
        .map_err(|e| anyhow!("{base}{path} did not answer JSON ({status}): {e}"))?;
    if !status.is_success() {
        let message = body["error"]["message"].as_str().unwrap_or("no message");
        bail!("{base}{path} answered {status}: {message}");
    }
    serde_json::from_value(body).map_err(|e| anyhow!("unexpected answer from {base}{path}: {e}"))
}

#[derive(Deserialize)]
struct SessionList {
    data: Vec<SessionRow>,
}

pub fn list_sessions(url: &str, key: Option<&str>, json: bool) -> Result<ExitCode> {
    let list: SessionList = get_json(url, "/v1/kvrun/sessions", key)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list.data)?);
        return Ok(ExitCode::SUCCESS);
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{:<32} {:>8} {:<5} {:>10}  FLAGS         MODEL",
        "NAME", "TOKENS", "TIER", "DISK"
    )?;
    for s in list.data {
        let flags = [
            (s.served, "served"),
            (s.pinned, "pinned"),
            (!s.named, "unnamed"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, f)| *f)
        .collect::<Vec<_>>()
        .join(",");
        writeln!(
            out,
            "{:<32} {:>8} {:<5} {:>10}  {:<13} {}",
            s.summary.name,
            s.summary.tokens,
            s.tier.as_str(),
            human_bytes(s.summary.bytes),
            flags,
            s.summary.model
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// What `/v1/kvrun/stats` answers: `{info, stats, devices}`, read back into the server's own
/// types.
#[derive(Deserialize)]
pub(super) struct RemoteStats {
    pub info: Option<ServiceInfo>,
    pub stats: ServiceStats,
    /// The server's own devices (older servers do not send them).
    #[serde(default)]
    pub devices: Option<crate::tiers::Devices>,
    /// Its models and their budget (older servers do not send them).
    #[serde(default)]
    pub models: Option<FleetStats>,
}

/// One line per model: its state, what it holds, and its share of the budget.
pub(super) fn model_lines(fleet: &FleetStats) -> Vec<String> {
    let mut lines = vec![format!(
        "models  {} of the {} budget in use",
        human_bytes(fleet.used),
        human_bytes(fleet.budget)
    )];
    for m in &fleet.models {
        let c = &m.charge;
        let holds = format!(
            "{} (weights {}, context {}, compute {})",
            human_bytes(c.total()),
            human_bytes(c.weights),
            human_bytes(c.kv),
            human_bytes(c.compute)
        );
        let since = match (m.state, m.in_use, m.idle_since_unix) {
            (ModelState::Loaded, 0, t) if t > 0 => {
                format!(", idle {}s", crate::clock::unix_now().saturating_sub(t))
            }
            (ModelState::Loaded, n, _) if n > 0 => format!(", {n} requests"),
            _ => String::new(),
        };
        let held = if m.state == ModelState::Loaded {
            format!(
                "{holds}, {:.0}% of the budget{since}",
                m.budget_share * 100.0
            )
        } else if m.loads > 0 {
            format!("held {holds} when loaded")
        } else {
            format!("about {} to load", human_bytes(c.weights))
        };
        lines.push(format!(
            "        {:<32} {:<9} {held}{}",
            m.id,
            m.state.as_str(),
            if m.default { ", default" } else { "" }
        ));
    }
    lines
}

/// The server's `/v1/kvrun/stats`, parsed.
pub(super) fn fetch_stats(url: &str, key: Option<&str>) -> Result<RemoteStats> {
    let value: serde_json::Value = get_json(url, "/v1/kvrun/stats", key)?;
    serde_json::from_value(value)
        .map_err(|e| anyhow!("unexpected answer from {url}/v1/kvrun/stats: {e}"))
}

pub fn stats(url: &str, key: Option<&str>, json: bool) -> Result<ExitCode> {
    let value: serde_json::Value = get_json(url, "/v1/kvrun/stats", key)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&value)?);
        return Ok(ExitCode::SUCCESS);
    }
    let remote: RemoteStats = serde_json::from_value(value)
        .map_err(|e| anyhow!("unexpected answer from {url}/v1/kvrun/stats: {e}"))?;
    let s = &remote.stats;
    match &remote.info {
        Some(i) => println!(
            "server  {} at {url}: {} tokens of context, {} sequences",
            i.model_name, i.n_ctx, i.parallel
        ),
        None => println!("server  at {url}: no model loaded"),
    }
    let budget = |b: Option<u64>| b.map_or("no budget".into(), human_bytes);
    let gpus = match &remote.devices {
        Some(devices) => {
            crate::commands::monitor::devices::print_devices(devices, true);
            devices.gpus.as_slice()
        }
        None => &[],
    };
    println!(
        "hot     in {}: {} of {} cells in use, {}",
        crate::commands::monitor::devices::hot_device(gpus),
        s.hot_cells_used,
        s.hot_cells,
        human_bytes(s.hot.used)
    );
    println!(
        "warm    in RAM: {} of {}",
        human_bytes(s.warm.used),
        budget(s.warm.budget)
    );
    println!(
        "cold    on NVMe: {} of {}",
        human_bytes(s.cold.used),
        budget(s.cold.budget)
    );
    if let Some(fleet) = &remote.models {
        for line in model_lines(fleet) {
            println!("{line}");
        }
    }
    println!(
        "queue   {} decoding, {} waiting; {} requests so far",
        s.active, s.queued, s.requests
    );
    println!(
        "tokens  {} prompt ({} prefilled; restored {} hot, {} warm, {} cold), {} generated",
        s.prompt_tokens,
        s.prefilled_tokens,
        s.restored_hot_tokens,
        s.restored_warm_tokens,
        s.restored_cold_tokens,
        s.generated_tokens
    );
    for session in &s.sessions {
        println!(
            "        {:<32} {:>8} tokens  {:<5}{}",
            session.name,
            session.tokens,
            session.tier,
            if session.pinned { " pinned" } else { "" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
