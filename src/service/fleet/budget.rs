//! One memory budget for every loaded model: what a model is charged, and which idle
//! models must go for another to load.
//!
//! A model is charged its weights, its context's K and V as allocated now, and a compute
//! reserve. The K/V figure is the full-cache bound (`ServiceInfo::kv_bytes_per_cell`): a
//! sliding window's layers take less, so the charge errs high. The compute reserve is
//! llama.cpp's worst case for one batch's logits (`batch` tokens times the vocabulary, in
//! f32) plus a fixed part for the activations; `kvrun bench swap` prints the peak resident
//! memory against the budget so that the estimate stays honest.

use std::time::Instant;

use crate::service::engine::ServiceOptions;
use crate::service::handle::{ServiceInfo, ServiceStats};

/// Bytes beside the logits that a batch's activations take (measured on the default
/// models: their compute buffers are tens of MiB besides the logits).
const ACTIVATIONS_RESERVE: u64 = 64 << 20;

/// What one loaded model holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Charge {
    pub weights: u64,
    pub kv: u64,
    pub compute: u64,
}

impl Charge {
    pub fn total(&self) -> u64 {
        self.weights + self.kv + self.compute
    }

    /// The charge of a model with `weights` bytes, `cells` context cells of
    /// `kv_bytes_per_cell`, decoding batches of `batch` tokens over `n_vocab` tokens.
    pub fn estimate(
        weights: u64,
        kv_bytes_per_cell: u64,
        cells: u64,
        batch: u64,
        n_vocab: u64,
    ) -> Self {
        Self {
            weights,
            kv: kv_bytes_per_cell.saturating_mul(cells),
            compute: compute_reserve(batch, n_vocab),
        }
    }
}

/// llama.cpp reserves the graph for a whole batch of outputs: `batch × n_vocab` f32
/// logits, plus the activations.
pub fn compute_reserve(batch: u64, n_vocab: u64) -> u64 {
    batch.saturating_mul(n_vocab).saturating_mul(4) + ACTIVATIONS_RESERVE
}

/// A loaded model as the planner sees it.
#[derive(Debug, Clone, Copy)]
pub struct Loaded {
    pub entry: usize,
    pub charge: u64,
    /// No request holds it (none queued, none decoding).
    pub idle: bool,
    pub last_used: Instant,
}

/// What loading a model needs done first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// It fits beside what is loaded.
    Fits,
    /// Unload these idle models, least recently used first; then it fits.
    Unload(Vec<usize>),
    /// It would fit once models that are generating now finish.
    WaitForBusy,
    /// It cannot fit even alone.
    NeverFits,
}

/// Which idle models to unload so that `need` bytes fit in `budget` beside `loaded`.
pub fn plan(budget: u64, need: u64, loaded: &[Loaded]) -> Plan {
    if need > budget {
        return Plan::NeverFits;
    }
    let used: u64 = loaded.iter().map(|l| l.charge).sum();
    if used + need <= budget {
        return Plan::Fits;
    }
    let mut idle: Vec<&Loaded> = loaded.iter().filter(|l| l.idle).collect();
    idle.sort_by_key(|l| l.last_used);
    let mut freed = 0;
    let mut victims = Vec::new();
    for l in idle {
        victims.push(l.entry);
        freed += l.charge;
        if used - freed + need <= budget {
            return Plan::Unload(victims);
        }
    }
    Plan::WaitForBusy
}

/// The default budget: this share of the memory available when the server starts, less
/// what is budgeted apart (`set_aside`: the warm tier's pages in RAM, and the buffers the
/// process keeps between restores).
pub fn default_budget(available: u64, set_aside: u64) -> u64 {
    (available / 10 * 9).saturating_sub(set_aside)
}

/// A loaded model's charge from its engine's facts and its context's current size.
pub fn charge_of(
    info: &ServiceInfo,
    stats: &ServiceStats,
    service: &Option<ServiceOptions>,
) -> Charge {
    Charge::estimate(
        info.weights_bytes,
        info.kv_bytes_per_cell,
        stats.hot_cells,
        service.as_ref().map_or(0, |_| info.n_batch as u64),
        info.n_vocab as u64,
    )
}

/// The most context cells model `path` may grow to so that its weights, compute and K/V
/// fit `budget` alone (None where its K/V per cell is unknown, or the file unreadable).
pub fn ceiling_within(
    budget: u64,
    path: &std::path::Path,
    service: &ServiceOptions,
) -> Option<u32> {
    let file = crate::gguf::read_header(path).ok()?;
    let facts = crate::gguf::MemoryEstimate::of(&file);
    let values = facts.kv_values_per_cell?;
    let per_cell = (values as f64 * service.llama.kv_type.value_bytes()).max(1.0);
    let fixed = facts.weights + compute_reserve(estimated_batch(service, &facts), facts.n_vocab);
    let room = (budget.saturating_sub(fixed) as f64 / per_cell).min(f64::from(u32::MAX)) as u32;
    // Whole pages: contexts are sized in them.
    let page = crate::settings::DEFAULT_PAGE_TOKENS;
    Some(room / page * page)
}

/// A model's charge before its first load, from its file's metadata: its weights, its
/// first context's K and V, and the compute reserve. None when the file cannot be read
/// (its load will say why).
pub fn estimate_before_load(path: &std::path::Path, service: &ServiceOptions) -> Option<Charge> {
    let file = crate::gguf::read_header(path).ok()?;
    let facts = crate::gguf::MemoryEstimate::of(&file);
    let n_ctx_train = facts.n_ctx_train.clamp(1, u64::from(u32::MAX)) as u32;
    let cells = crate::service::engine::first_cells(
        service.sizing,
        &service.llama,
        n_ctx_train,
        crate::settings::DEFAULT_PAGE_TOKENS,
        service.parallel.max(1) as u32,
    );
    let per_cell = facts.kv_values_per_cell.map_or(0, |values| {
        (values as f64 * service.llama.kv_type.value_bytes()) as u64
    });
    Some(Charge::estimate(
        facts.weights,
        per_cell,
        u64::from(cells),
        estimated_batch(service, &facts),
        facts.n_vocab,
    ))
}

/// The batch a model's context will decode, from its file's metadata.
fn estimated_batch(service: &ServiceOptions, facts: &crate::gguf::MemoryEstimate) -> u64 {
    u64::from(crate::llama::schedule_batch(
        service.llama.batch_size,
        crate::settings::DEFAULT_PAGE_TOKENS,
        facts.wide_batches,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn loaded(entry: usize, charge: u64, idle: bool, age_s: u64) -> Loaded {
        Loaded {
            entry,
            charge,
            idle,
            last_used: Instant::now() - Duration::from_secs(age_s),
        }
    }

    #[test]
    fn the_least_recently_used_idle_models_go_first_and_busy_ones_never() {
        let models = [
            loaded(0, 40, true, 5),
            loaded(1, 40, true, 50),
            loaded(2, 40, false, 99),
        ];
        assert_eq!(plan(200, 60, &models), Plan::Fits);
        assert_eq!(plan(150, 60, &models), Plan::Unload(vec![1]));
        assert_eq!(plan(110, 60, &models), Plan::Unload(vec![1, 0]));
        assert_eq!(plan(90, 60, &models), Plan::WaitForBusy);
        assert_eq!(plan(50, 60, &models), Plan::NeverFits);
        assert_eq!(plan(60, 60, &[]), Plan::Fits);
    }

    #[test]
    fn charges_add_weights_kv_and_the_batch_logits() {
        let c = Charge::estimate(1000, 10, 256, 256, 1000);
        assert_eq!(c.kv, 2560);
        assert_eq!(c.compute, 256 * 1000 * 4 + ACTIVATIONS_RESERVE);
        assert_eq!(c.total(), 1000 + 2560 + c.compute);
        assert_eq!(default_budget(10 << 30, 1 << 30), (9 << 30) - (1 << 30));
    }
}
