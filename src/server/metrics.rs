//! `GET /metrics`: Prometheus text exposition (format 0.0.4). The engine's counters come from
//! [`ServiceStats`]; the HTTP side (requests by endpoint and status, latency and time to first
//! token histograms, early prefix misses) lives in [`ServerCounters`]. The format is a few
//! lines of text, so it is written here rather than pulled in through a metrics crate.

use super::counters::{header_lines, ServerCounters};
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::service::fleet::{FleetStats, ModelState, ModelStatus};
use crate::service::ServiceStats;
use crate::tiers::Devices;

/// The devices the tiers live on: VRAM per GPU (none: the hot tier is in RAM), RAM with
/// this process's share, and NVMe (the filesystem of the store).
fn render_devices(out: &mut String, devices: &Devices) {
    single(
        out,
        "kvrun_gpus",
        "GPUs llama.cpp can use (0: the hot tier lives in RAM)",
        "gauge",
        devices.gpus.len(),
    );
    header_lines(
        out,
        "kvrun_device_bytes",
        "memory of the devices the tiers live on: VRAM per GPU, RAM, NVMe (the store's filesystem)",
        "gauge",
    );
    for gpu in &devices.gpus {
        let name = escape(&gpu.name);
        for (kind, value) in [("total", gpu.total_bytes), ("free", gpu.free_bytes)] {
            let _ = writeln!(
                out,
                "kvrun_device_bytes{{device=\"VRAM\",name=\"{name}\",kind=\"{kind}\"}} {value}"
            );
        }
    }
    let system = &devices.system;
    for (device, kind, value) in [
        ("RAM", "total", system.ram_total),
        ("RAM", "available", system.ram_available),
        ("RAM", "kvrun", system.process_rss),
        ("NVMe", "total", system.disk_total),
        ("NVMe", "free", system.disk_free),
    ] {
        let _ = writeln!(
            out,
            "kvrun_device_bytes{{device=\"{device}\",kind=\"{kind}\"}} {value}"
        );
    }
}

pub async fn handler(State(state): State<AppState>) -> Response {
    let (fleet, stats, _) = state.models.stats().await;
    let devices = crate::tiers::Devices::read(&state.paths.data);
    let ready = state.models.ready();
    let mut body = render(&stats, &devices, &state.counters, ready);
    render_models(&mut body, &fleet);
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

/// Each model's state and charge, and the budget they share.
fn render_models(out: &mut String, fleet: &FleetStats) {
    single(
        out,
        "kvrun_memory_budget_bytes",
        "the memory budget every loaded model shares",
        "gauge",
        fleet.budget,
    );
    single(
        out,
        "kvrun_memory_budget_used_bytes",
        "the loaded models' charges added up",
        "gauge",
        fleet.used,
    );
    header_lines(
        out,
        "kvrun_model_loaded",
        "1 while a model is loaded, by state",
        "gauge",
    );
    for m in &fleet.models {
        let id = escape(&m.id);
        let _ = writeln!(
            out,
            "kvrun_model_loaded{{model=\"{id}\",state=\"{}\"}} {}",
            m.state.as_str(),
            u8::from(m.state == ModelState::Loaded)
        );
    }
    header_lines(
        out,
        "kvrun_model_bytes",
        "what a model holds (its last charge when unloaded)",
        "gauge",
    );
    for m in &fleet.models {
        let id = escape(&m.id);
        for (kind, value) in [
            ("weights", m.charge.weights),
            ("kv", m.charge.kv),
            ("compute", m.charge.compute),
        ] {
            let _ = writeln!(
                out,
                "kvrun_model_bytes{{model=\"{id}\",kind=\"{kind}\"}} {value}"
            );
        }
    }
    for (name, help, value) in [
        (
            "kvrun_model_loads_total",
            "times a model was loaded",
            (|m: &ModelStatus| m.loads) as fn(&ModelStatus) -> u64,
        ),
        (
            "kvrun_model_unloads_total",
            "times a model was unloaded (its conversations saved first)",
            |m| m.unloads,
        ),
        ("kvrun_model_in_use", "requests holding a model now", |m| {
            m.in_use as u64
        }),
        (
            "kvrun_model_idle_since_seconds",
            "when a model's last request ended (Unix time; 0: none yet)",
            |m| m.idle_since_unix,
        ),
    ] {
        let kind = if name.ends_with("_total") {
            "counter"
        } else {
            "gauge"
        };
        header_lines(out, name, help, kind);
        for m in &fleet.models {
            let _ = writeln!(out, "{name}{{model=\"{}\"}} {}", escape(&m.id), value(m));
        }
    }
}

fn single(out: &mut String, name: &str, help: &str, kind: &str, value: impl std::fmt::Display) {
    header_lines(out, name, help, kind);
    let _ = writeln!(out, "{name} {value}");
}

/// Label values are route patterns and fixed words, but escape them as the format asks.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub fn render(
    stats: &ServiceStats,
    devices: &Devices,
    counters: &ServerCounters,
    ready: bool,
) -> String {
    let mut out = String::new();
    render_devices(&mut out, devices);
    single(
        &mut out,
        "kvrun_ready",
        "1 once the model is loaded",
        "gauge",
        u8::from(ready),
    );
    header_lines(
        &mut out,
        "kvrun_http_requests_total",
        "HTTP requests answered, by route and status",
        "counter",
    );
    let requests = counters.requests.lock().unwrap_or_else(|e| e.into_inner());
    for ((endpoint, status), count) in requests.iter() {
        let endpoint = escape(endpoint);
        let _ = writeln!(
            out,
            "kvrun_http_requests_total{{endpoint=\"{endpoint}\",status=\"{status}\"}} {count}"
        );
    }
    drop(requests);
    let counts = [
        (
            "kvrun_generations_total",
            "generation requests the engine took",
            stats.requests,
        ),
        (
            "kvrun_prompt_tokens_total",
            "prompt tokens of all requests",
            stats.prompt_tokens,
        ),
        (
            "kvrun_prefilled_tokens_total",
            "prompt tokens decoded (not served from a tier)",
            stats.prefilled_tokens,
        ),
        (
            "kvrun_generated_tokens_total",
            "tokens generated",
            stats.generated_tokens,
        ),
        (
            "kvrun_early_prefix_misses_total",
            "requests whose prompt left their conversation's previous prompt early",
            counters.early_prefix_misses.load(Ordering::Relaxed),
        ),
        (
            "kvrun_volatile_prefix_misses_total",
            "new conversations that shared a recent one's prefix except for a short volatile span",
            counters.volatile_prefix_misses.load(Ordering::Relaxed),
        ),
        (
            "kvrun_volatile_prefix_tokens_total",
            "shared tokens after a volatile span that were prefilled again",
            counters.volatile_prefix_tokens.load(Ordering::Relaxed),
        ),
        (
            "kvrun_billing_blocks_dropped_total",
            "Claude Code billing-header blocks dropped from prompts (they would defeat the cache)",
            counters.billing_blocks_dropped.load(Ordering::Relaxed),
        ),
        (
            "kvrun_save_failures_total",
            "conversation saves that failed (the session's previous save stays intact)",
            stats.save_failures,
        ),
        (
            "kvrun_checkpoints_total",
            "states of recurrent and hybrid sequences kept at page boundaries",
            stats.checkpoints,
        ),
        (
            "kvrun_ctx_resizes_total",
            "times the elastic context was recreated at another size",
            stats.ctx_resizes,
        ),
    ];
    for (name, help, value) in counts {
        single(&mut out, name, help, "counter", value);
    }
    header_lines(
        &mut out,
        "kvrun_restored_tokens_total",
        "prompt tokens served from a tier instead of prefilled",
        "counter",
    );
    for (tier, value) in [
        ("hot", stats.restored_hot_tokens),
        ("warm", stats.restored_warm_tokens),
        ("cold", stats.restored_cold_tokens),
    ] {
        let _ = writeln!(
            out,
            "kvrun_restored_tokens_total{{tier=\"{tier}\"}} {value}"
        );
    }
    let tiers = [
        ("hot", stats.hot),
        ("warm", stats.warm),
        ("cold", stats.cold),
    ];
    header_lines(
        &mut out,
        "kvrun_tier_bytes",
        "bytes in each memory tier",
        "gauge",
    );
    for (tier, bytes) in tiers {
        let _ = writeln!(out, "kvrun_tier_bytes{{tier=\"{tier}\"}} {}", bytes.used);
    }
    header_lines(
        &mut out,
        "kvrun_tier_budget_bytes",
        "each tier's budget (tiers without one are left out)",
        "gauge",
    );
    for (tier, bytes) in tiers {
        if let Some(budget) = bytes.budget {
            let _ = writeln!(out, "kvrun_tier_budget_bytes{{tier=\"{tier}\"}} {budget}");
        }
    }
    let gauges = [
        (
            "kvrun_hot_cells_used",
            "context cells in use",
            stats.hot_cells_used,
        ),
        (
            "kvrun_hot_cells",
            "context cells in all (an elastic context's current allocation)",
            stats.hot_cells,
        ),
        (
            "kvrun_ctx_ceiling_cells",
            "cells the context may grow to (--ctx-size auto)",
            stats.ctx_ceiling,
        ),
        (
            "kvrun_queue_depth",
            "requests waiting for a sequence",
            stats.queued as u64,
        ),
        (
            "kvrun_active_sequences",
            "requests decoding now",
            stats.active as u64,
        ),
        (
            "kvrun_checkpoint_bytes",
            "RAM held by the hot recurrent and hybrid sequences' checkpoints",
            stats.checkpoint_bytes,
        ),
    ];
    for (name, help, value) in gauges {
        single(&mut out, name, help, "gauge", value);
    }
    header_lines(
        &mut out,
        "kvrun_sessions",
        "sessions the server knows, by tier",
        "gauge",
    );
    for tier in ["hot", "warm", "cold"] {
        let n = stats.sessions.iter().filter(|s| s.tier == tier).count();
        let _ = writeln!(out, "kvrun_sessions{{tier=\"{tier}\"}} {n}");
    }
    counters.time_to_first_token.render(
        &mut out,
        "kvrun_time_to_first_token_seconds",
        "from receiving a request to its first token (queue, restore and prefill)",
    );
    counters.request_latency.render(
        &mut out,
        "kvrun_request_duration_seconds",
        "from receiving a request to the end of its response",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::super::counters::Histogram;
    use super::*;
    use crate::service::handle::TierBytes;
    use axum::http::StatusCode;
    use std::time::Duration;

    #[test]
    fn histogram_buckets_are_cumulative_and_count_everything() {
        let h = Histogram::default();
        for ms in [10, 60, 60, 700_000] {
            h.observe(Duration::from_millis(ms));
        }
        let mut out = String::new();
        h.render(&mut out, "x", "help");
        assert!(out.contains("x_bucket{le=\"0.05\"} 1\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"0.1\"} 3\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"600\"} 3\n"), "{out}");
        assert!(out.contains("x_bucket{le=\"+Inf\"} 4\n"), "{out}");
        assert!(out.contains("x_count 4\n"), "{out}");
        assert!(out.contains("x_sum 700.13\n"), "{out}");
    }

    #[test]
    fn render_names_every_family_once_with_labels() {
        let counters = ServerCounters::default();
        counters.record_request(
            "/v1/chat/completions",
            StatusCode::OK,
            Duration::from_secs(1),
        );
        counters.record_request(
            "/v1/chat/completions",
            StatusCode::OK,
            Duration::from_secs(2),
        );
        counters.record_request("/v1/messages", StatusCode::BAD_REQUEST, Duration::ZERO);
        counters.record_early_prefix_miss();
        let stats = ServiceStats {
            restored_cold_tokens: 512,
            cold: TierBytes {
                used: 100,
                budget: Some(1000),
                pages: 2,
            },
            queued: 3,
            ..Default::default()
        };
        let devices = Devices {
            gpus: vec![crate::llama::GpuDevice {
                name: "llvmpipe".into(),
                total_bytes: 8,
                free_bytes: 5,
            }],
            system: crate::tiers::SystemMemory {
                ram_total: 64,
                process_rss: 7,
                disk_free: 9,
                ..Default::default()
            },
        };
        let text = render(&stats, &devices, &counters, true);
        for line in [
            "kvrun_gpus 1",
            "kvrun_device_bytes{device=\"VRAM\",name=\"llvmpipe\",kind=\"free\"} 5",
            "kvrun_device_bytes{device=\"RAM\",kind=\"total\"} 64",
            "kvrun_device_bytes{device=\"RAM\",kind=\"kvrun\"} 7",
            "kvrun_device_bytes{device=\"NVMe\",kind=\"free\"} 9",
            "kvrun_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"200\"} 2",
            "kvrun_http_requests_total{endpoint=\"/v1/messages\",status=\"400\"} 1",
            "kvrun_restored_tokens_total{tier=\"cold\"} 512",
            "kvrun_tier_bytes{tier=\"cold\"} 100",
            "kvrun_tier_budget_bytes{tier=\"cold\"} 1000",
            "kvrun_queue_depth 3",
            "kvrun_early_prefix_misses_total 1",
            "kvrun_ready 1",
            "kvrun_request_duration_seconds_count 3",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}:\n{text}");
        }
        assert!(!text.contains("kvrun_tier_budget_bytes{tier=\"warm\"}"));
        // Each family is declared exactly once (Prometheus rejects duplicates).
        let mut types: Vec<_> = text.lines().filter(|l| l.starts_with("# TYPE")).collect();
        let before = types.len();
        types.sort();
        types.dedup();
        assert_eq!(before, types.len());
    }
}
