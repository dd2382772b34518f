//! `kvrun stats`: the devices (VRAM, RAM, NVMe) and the tiers as seen from outside a chat
//! process. The cold tier (the page store) and the devices are measured here; the hot and
//! warm tiers live inside a running `kvrun chat` (its `/stats` and the TUI's memory panel
//! show them live) or `kvrun serve` (`--connect URL`).

use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use super::devices::{hot_device, print_devices};
use crate::cli::StatsArgs;
use crate::env::Env;
use crate::exit::usage;
use crate::format::human_bytes;
use crate::llama::{gpu_devices, GpuDevice};
use crate::session::catalog::SessionCatalog;
use crate::settings::TierSettings;
use crate::tiers::{Devices, SystemMemory};

#[derive(Serialize)]
struct Stats {
    cold: ColdTier,
    warm_budget_bytes: u64,
    hot_sessions_per_process: u32,
    gpus: Vec<GpuDevice>,
    ram_total_bytes: u64,
    ram_available_bytes: u64,
    disk_total_bytes: u64,
    disk_free_bytes: u64,
    sessions: Vec<SessionTier>,
}

#[derive(Serialize)]
struct ColdTier {
    used_bytes: u64,
    budget_bytes: Option<u64>,
    objects: u64,
    path: String,
}

#[derive(Serialize)]
struct SessionTier {
    name: String,
    tokens: usize,
    kv_tokens: usize,
    bytes: u64,
    shared_bytes: u64,
}

pub fn run(env: &Env, args: StatsArgs) -> Result<ExitCode> {
    if let Some(url) = &args.connect.connect {
        return crate::commands::monitor::remote::stats(
            url,
            args.connect.api_key.as_deref(),
            args.json,
        );
    }
    let tiers = TierSettings::resolve(&args.tiers, &env.config).map_err(usage)?;
    let catalog = SessionCatalog::open(&env.paths)?;
    let (objects, used) = catalog.store().usage()?;
    let system = SystemMemory::read(&env.paths.data);
    let stats = Stats {
        cold: ColdTier {
            used_bytes: used,
            budget_bytes: tiers.cold_budget,
            objects,
            path: catalog.store().root().display().to_string(),
        },
        warm_budget_bytes: tiers.warm_budget,
        hot_sessions_per_process: tiers.hot_sessions,
        gpus: gpu_devices(),
        ram_total_bytes: system.ram_total,
        ram_available_bytes: system.ram_available,
        disk_total_bytes: system.disk_total,
        disk_free_bytes: system.disk_free,
        sessions: catalog
            .list()?
            .into_iter()
            .filter(|s| s.error.is_none())
            .map(|s| SessionTier {
                name: s.name,
                tokens: s.tokens,
                kv_tokens: s.kv_tokens,
                bytes: s.bytes,
                shared_bytes: s.shared_bytes,
            })
            .collect(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&stats)?);
        return Ok(ExitCode::SUCCESS);
    }
    let budget = |b: Option<u64>| b.map_or("no budget".into(), human_bytes);
    print_devices(
        &Devices {
            gpus: stats.gpus.clone(),
            system,
        },
        false,
    );
    println!(
        "hot   in {}: a chat's context (see its /stats or the TUI)",
        hot_device(&stats.gpus)
    );
    println!(
        "warm  in RAM: budget {} per chat process",
        human_bytes(stats.warm_budget_bytes)
    );
    println!(
        "cold  on NVMe: {} of {} in {} objects ({})",
        human_bytes(stats.cold.used_bytes),
        budget(stats.cold.budget_bytes),
        stats.cold.objects,
        stats.cold.path,
    );
    for s in &stats.sessions {
        println!(
            "      {:<24} {:>8} tokens, {} on disk ({} shared)",
            s.name,
            s.tokens,
            human_bytes(s.bytes),
            human_bytes(s.shared_bytes)
        );
    }
    Ok(ExitCode::SUCCESS)
}
