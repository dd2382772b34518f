//! Restore or recompute: for a restore plan, whether loading its pages or prefilling their
//! tokens is faster, from the engine's own running estimates of both. A pure function of
//! the estimates; the running estimates are the only state, kept per process.
//!
//! The KV of a token depends on every token before it, so prefill can only take over a
//! suffix: the choice is a boundary `k` between ranges (load ranges `..k`, prefill the
//! rest). Loading costs a fixed part (blob layout, llama.cpp's load) plus bytes over the
//! measured throughput; prefill costs tokens over the measured rate. With every range read
//! at one throughput the best boundary is at an end (all or nothing); ranges from RAM and
//! from disk cost differently, so a cold suffix can be worth prefilling after a warm prefix.

use std::sync::Mutex;

/// A run of the plan's tokens whose pages come from one place, in log order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceRange {
    pub tokens: usize,
    pub bytes: u64,
    /// Read from RAM (the warm pool) rather than disk.
    pub warm: bool,
}

/// Running estimates, each `None` until the process has measured it once.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct RestoreRates {
    /// Cold (disk) restore throughput, bytes per ms.
    pub cold_bytes_per_ms: Option<f64>,
    /// Restore throughput from RAM, bytes per ms.
    pub warm_bytes_per_ms: Option<f64>,
    /// Prefill rate, tokens per ms.
    pub prefill_tokens_per_ms: Option<f64>,
}

/// What a restore chose, for `--json` and the TUI.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RestoreDecision {
    /// Tokens loaded from pages (a prefix of the plan).
    pub load_tokens: usize,
    /// Tokens of the plan left to prefill instead.
    pub prefill_tokens: usize,
    /// Estimated cost of the chosen split and of loading everything, in ms (`None`
    /// without the estimates it needs).
    pub estimated_ms: Option<f64>,
    pub load_all_ms: Option<f64>,
    /// Estimated cost of prefilling the whole plan, ms.
    pub prefill_all_ms: Option<f64>,
}

impl RestoreDecision {
    /// One line for the TUI's last-move line and logs.
    pub fn describe(&self) -> String {
        let ms = |x: Option<f64>| x.map_or("?".to_string(), |v| format!("{v:.0} ms"));
        match self.prefill_tokens {
            0 => format!(
                "loaded (est. {} vs prefill {})",
                ms(self.load_all_ms),
                ms(self.prefill_all_ms)
            ),
            n => format!(
                "loaded {} and prefilled {n} (est. {} vs load all {})",
                self.load_tokens,
                ms(self.estimated_ms),
                ms(self.load_all_ms)
            ),
        }
    }
}

/// Fixed cost of any load: laying out the blob and llama.cpp's `state_seq_set_data` call.
pub const LOAD_FIXED_MS: f64 = 2.0;

/// Prefill must beat loading by this factor before a restore gives pages up: estimates are
/// noisy, and loaded KV is exact where a prefill in other batches rounds differently.
pub const PREFILL_MARGIN: f64 = 2.0;

/// The boundary that minimises the estimated time. Loads everything when an estimate it
/// needs is missing.
pub fn choose_restore(ranges: &[SourceRange], rates: &RestoreRates) -> RestoreDecision {
    let total: usize = ranges.iter().map(|r| r.tokens).sum();
    let load_ms = |r: &SourceRange| {
        let rate = if r.warm {
            rates.warm_bytes_per_ms.or(rates.cold_bytes_per_ms)
        } else {
            rates.cold_bytes_per_ms
        };
        rate.filter(|v| *v > 0.0).map(|v| r.bytes as f64 / v)
    };
    let prefill_ms = |tokens: usize| {
        rates
            .prefill_tokens_per_ms
            .filter(|v| *v > 0.0)
            .map(|v| tokens as f64 / v)
    };
    // cost(k): load ranges ..k, prefill the rest.
    let mut loaded_ms = Some(0.0);
    let mut loaded_tokens = 0;
    let mut costs = Vec::with_capacity(ranges.len() + 1);
    for k in 0..=ranges.len() {
        let load = match k {
            0 => Some(0.0),
            _ => loaded_ms.map(|x| x + LOAD_FIXED_MS),
        };
        let rest = prefill_ms(total - loaded_tokens);
        costs.push((loaded_tokens, load.zip(rest).map(|(a, b)| a + b)));
        if let Some(r) = ranges.get(k) {
            loaded_ms = loaded_ms.zip(load_ms(r)).map(|(a, b)| a + b);
            loaded_tokens += r.tokens;
        }
    }
    let load_all_ms = loaded_ms.map(|x| x + LOAD_FIXED_MS * f64::from(u8::from(total > 0)));
    let prefill_all_ms = prefill_ms(total);
    let mut decision = RestoreDecision {
        load_tokens: total,
        prefill_tokens: 0,
        estimated_ms: load_all_ms,
        load_all_ms,
        prefill_all_ms,
    };
    let Some(all) = load_all_ms.filter(|_| prefill_all_ms.is_some()) else {
        return decision;
    };
    let best = costs
        .iter()
        .filter_map(|&(k, c)| Some((k, c?)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((k, cost)) = best {
        if k < total && cost * PREFILL_MARGIN < all {
            decision.load_tokens = k;
            decision.prefill_tokens = total - k;
            decision.estimated_ms = Some(cost);
        }
    }
    decision
}

/// Weight of a new measurement in a running estimate.
const NEW_WEIGHT: f64 = 0.3;

static RATES: Mutex<RestoreRates> = Mutex::new(RestoreRates {
    cold_bytes_per_ms: None,
    warm_bytes_per_ms: None,
    prefill_tokens_per_ms: None,
});

/// The process's running estimates.
pub fn current_rates() -> RestoreRates {
    *RATES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Folds a restore's bytes and time into the throughput estimate of its source. Restores
/// too small to time are skipped.
pub fn record_restore(bytes: u64, ms: f64, warm: bool) {
    if bytes < (1 << 20) || ms <= 0.0 {
        return;
    }
    let mut rates = RATES.lock().unwrap_or_else(|e| e.into_inner());
    let slot = if warm {
        &mut rates.warm_bytes_per_ms
    } else {
        &mut rates.cold_bytes_per_ms
    };
    *slot = Some(blend(*slot, bytes as f64 / ms));
}

/// Folds a prefill's tokens and time into the prefill rate.
pub fn record_prefill(tokens: usize, ms: f64) {
    if tokens < 16 || ms <= 0.0 {
        return;
    }
    let mut rates = RATES.lock().unwrap_or_else(|e| e.into_inner());
    rates.prefill_tokens_per_ms = Some(blend(rates.prefill_tokens_per_ms, tokens as f64 / ms));
}

fn blend(old: Option<f64>, new: f64) -> f64 {
    old.map_or(new, |o| o + NEW_WEIGHT * (new - o))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: u64 = 1_000_000;

    fn cold(tokens: usize, bytes: u64) -> SourceRange {
        SourceRange {
            tokens,
            bytes,
            warm: false,
        }
    }

    fn rates(cold: f64, warm: Option<f64>, prefill: Option<f64>) -> RestoreRates {
        RestoreRates {
            cold_bytes_per_ms: Some(cold),
            warm_bytes_per_ms: warm,
            prefill_tokens_per_ms: prefill,
        }
    }

    #[test]
    fn the_choice_follows_the_estimates() {
        let warm = |tokens, bytes| SourceRange {
            tokens,
            bytes,
            warm: true,
        };
        // (what, ranges, rates, tokens loaded)
        let cases = [
            (
                // A disk read at 500 MB/s against a prefill of 0.5 tokens per ms.
                "on a CPU loading wins",
                vec![cold(4096, 40 * MB)],
                rates(500_000.0, None, Some(0.5)),
                4096,
            ),
            (
                "no prefill rate measured yet: load",
                vec![cold(4096, 40 * MB)],
                rates(10.0, None, None),
                4096,
            ),
            (
                // A slow link: 1 MB/s, and a fast prefill (10 tokens per ms).
                "a slow disk and a short prefix: prefill",
                vec![cold(256, 32 * MB)],
                rates(1_000.0, None, Some(10.0)),
                0,
            ),
            (
                "a warm prefix is kept, the cold rest prefilled",
                vec![warm(512, 64 * MB), cold(256, 32 * MB)],
                rates(1_000.0, Some(10_000_000.0), Some(10.0)),
                512,
            ),
            (
                // Prefill 1.5x faster than loading is inside the margin.
                "a small advantage keeps the exact pages",
                vec![cold(1000, 150 * MB)],
                rates(1_000_000.0, None, Some(1000.0 / 101.0)),
                1000,
            ),
            ("nothing to restore", vec![], rates(1.0, None, Some(1.0)), 0),
        ];
        for (what, ranges, rates, want) in cases {
            let d = choose_restore(&ranges, &rates);
            let total: usize = ranges.iter().map(|r| r.tokens).sum();
            assert_eq!(d.load_tokens, want, "{what}: {d:?}");
            assert_eq!(d.load_tokens + d.prefill_tokens, total, "{what}");
        }
    }

    #[test]
    fn estimates_start_at_the_first_measurement_and_then_move_part_way() {
        assert_eq!(blend(None, 10.0), 10.0);
        assert!((blend(Some(10.0), 20.0) - 13.0).abs() < 1e-9);
    }

    #[test]
    fn a_decision_reads_as_one_line() {
        let d = choose_restore(&[cold(256, 32 * MB)], &rates(1_000.0, None, Some(10.0)));
        assert_eq!(
            d.describe(),
            "loaded 0 and prefilled 256 (est. 26 ms vs load all 32002 ms)"
        );
    }
}
