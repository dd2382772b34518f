//! The server's own counters (requests, latencies, early prefix misses), lock-free where
//! they are on the request path; `metrics.rs` renders them.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use axum::http::StatusCode;

use crate::service::protocol::Usage;

/// What the HTTP side counts. Shared by every handler through [`AppState::counters`].
#[derive(Debug, Default)]
pub struct ServerCounters {
    /// Requests whose prompt left their conversation's previous prompt early (the "why did
    /// this miss" diagnostic); the API layer counts them.
    pub early_prefix_misses: AtomicU64,
    /// New conversations whose prompt had a volatile span in front of a prefix shared with a
    /// recent conversation, and the shared tokens after it that had to be prefilled again.
    pub volatile_prefix_misses: AtomicU64,
    pub volatile_prefix_tokens: AtomicU64,
    /// Claude Code billing-header system blocks dropped before rendering.
    pub billing_blocks_dropped: AtomicU64,
    pub(super) requests: Mutex<BTreeMap<(String, u16), u64>>,
    pub(super) request_latency: Histogram,
    pub(super) time_to_first_token: Histogram,
}

impl ServerCounters {
    /// One finished generation: its time to first token.
    pub fn record_usage(&self, usage: &Usage) {
        self.time_to_first_token.observe(usage.time_to_first_token);
    }

    pub fn record_early_prefix_miss(&self) {
        self.early_prefix_misses.fetch_add(1, Ordering::Relaxed);
    }

    pub fn record_volatile_prefix(&self, lost_tokens: usize) {
        self.volatile_prefix_misses.fetch_add(1, Ordering::Relaxed);
        self.volatile_prefix_tokens
            .fetch_add(lost_tokens as u64, Ordering::Relaxed);
    }

    /// One HTTP request answered; `endpoint` is its route pattern (bounded cardinality).
    pub fn record_request(&self, endpoint: &str, status: StatusCode, latency: Duration) {
        self.request_latency.observe(latency);
        let mut requests = self.requests.lock().unwrap_or_else(|e| e.into_inner());
        *requests
            .entry((endpoint.to_string(), status.as_u16()))
            .or_default() += 1;
    }
}

/// A cumulative histogram with fixed buckets, lock-free.
#[derive(Debug, Default)]
pub struct Histogram {
    /// Observations at or below each bound (not cumulative here; summed when rendered).
    counts: [AtomicU64; BUCKETS.len()],
    over: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    pub fn observe(&self, value: Duration) {
        let seconds = value.as_secs_f64();
        match BUCKETS.iter().position(|b| seconds <= *b) {
            Some(i) => self.counts[i].fetch_add(1, Ordering::Relaxed),
            None => self.over.fetch_add(1, Ordering::Relaxed),
        };
        let micros = u64::try_from(value.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    pub(super) fn render(&self, out: &mut String, name: &str, help: &str) {
        header_lines(out, name, help, "histogram");
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(&self.counts) {
            cumulative += count.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.over.load(Ordering::Relaxed);
        let sum = self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(out, "{name}_sum {sum}");
        let _ = writeln!(out, "{name}_count {cumulative}");
    }
}

/// Upper bounds (seconds) of the latency buckets: from a restored prefix (a tenth of a
/// second) to a long agent prompt prefilled on a CPU (minutes).
pub(super) const BUCKETS: [f64; 13] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0,
];

pub(super) fn header_lines(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}
