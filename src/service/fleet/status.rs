//! What a fleet reports: each model's state and charge, the budget, and the engines'
//! counters added up (what `/v1/kvrun/stats`, `/metrics`, `kvrun top` and `stats --connect`
//! show).

use serde::{Deserialize, Serialize};

use super::budget::Charge;
use super::{lock, totals, Fleet, State};
use crate::service::handle::{ServiceInfo, ServiceStats};

/// Where a model is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelState {
    #[default]
    Unloaded,
    Loading,
    Loaded,
    Unloading,
}

impl ModelState {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelState::Unloaded => "unloaded",
            ModelState::Loading => "loading",
            ModelState::Loaded => "loaded",
            ModelState::Unloading => "unloading",
        }
    }
}

/// One model of the fleet.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelStatus {
    pub id: String,
    /// Its other ids (exact aliases).
    pub aliases: Vec<String>,
    pub path: String,
    pub state: ModelState,
    pub default: bool,
    /// Requests holding it now.
    pub in_use: usize,
    /// Requests waiting for its turn.
    pub waiting: usize,
    /// When its last request ended (seconds since the Unix epoch; 0: none yet).
    pub idle_since_unix: u64,
    pub keep_alive: String,
    /// What it holds (loaded), or what it held when last loaded (its estimate before its
    /// first load).
    pub charge: Charge,
    /// Its charge over the budget, while it is loaded.
    pub budget_share: f64,
    pub loads: u64,
    pub unloads: u64,
    pub last_load_ms: f64,
    pub last_unload_ms: f64,
    pub last_error: Option<String>,
    /// Context cells allocated now and in use (loaded models).
    pub ctx_cells: u64,
    pub ctx_cells_used: u64,
}

/// The fleet as a whole.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FleetStats {
    pub budget: u64,
    /// The loaded models' charges added up.
    pub used: u64,
    pub models: Vec<ModelStatus>,
    /// `*` aliases and the model each reaches.
    pub patterns: Vec<(String, String)>,
}

impl Fleet {
    /// Every model's status, and the engines' stats added up (the unloaded ones' counters
    /// included). The info is the most recently used loaded model's.
    pub async fn stats(&self) -> (FleetStats, ServiceStats, Option<ServiceInfo>) {
        let mut total = retired_counters(self);
        let mut models = Vec::new();
        let mut used = 0;
        let mut info: Option<(u64, ServiceInfo)> = None;
        for (entry, e) in self.inner.roster.entries().iter().enumerate() {
            let (handle, mut status) = {
                let slot = lock(&self.inner.slots[entry]);
                let (state, handle) = match &slot.state {
                    State::Unloaded => (ModelState::Unloaded, None),
                    State::Loading { handle, .. } => (ModelState::Loading, Some(handle.clone())),
                    State::Loaded(handle) => (ModelState::Loaded, Some(handle.clone())),
                    State::Unloading => (ModelState::Unloading, None),
                };
                let status = ModelStatus {
                    id: e.id.clone(),
                    aliases: e.also.clone(),
                    path: e.path.display().to_string(),
                    state,
                    default: self.inner.roster.default_entry() == Some(entry),
                    in_use: slot.in_use,
                    waiting: slot.waiting.len(),
                    idle_since_unix: if slot.in_use == 0 {
                        slot.last_used_unix
                    } else {
                        0
                    },
                    keep_alive: slot.keep_alive.unwrap_or(self.inner.keep_alive).to_string(),
                    charge: slot.charge,
                    loads: slot.loads,
                    unloads: slot.unloads,
                    last_load_ms: slot.load_ms,
                    last_unload_ms: slot.unload_ms,
                    last_error: slot.last_error.clone(),
                    ..ModelStatus::default()
                };
                (handle, status)
            };
            if let Some(handle) = handle {
                if let Ok(stats) = handle.stats().await {
                    if let Some(i) = handle.info() {
                        status.charge = super::budget::charge_of(i, &stats, &self.inner.service);
                        if info
                            .as_ref()
                            .is_none_or(|(t, _)| status.idle_since_unix >= *t)
                        {
                            info = Some((status.idle_since_unix, i.clone()));
                        }
                    }
                    status.ctx_cells = stats.hot_cells;
                    status.ctx_cells_used = stats.hot_cells_used;
                    totals::add_counters(&mut total, &stats);
                    totals::add_use(&mut total, stats);
                }
                if status.state == ModelState::Loaded {
                    used += status.charge.total();
                    status.budget_share =
                        status.charge.total() as f64 / self.inner.budget.max(1) as f64;
                }
            }
            models.push(status);
        }
        total.sessions.sort_by(|a, b| a.name.cmp(&b.name));
        let fleet = FleetStats {
            budget: self.inner.budget,
            used,
            models,
            patterns: self.inner.roster.patterns(),
        };
        (fleet, total, info.map(|(_, i)| i))
    }
}

fn retired_counters(fleet: &Fleet) -> ServiceStats {
    let retired = fleet
        .inner
        .retired
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let mut total = ServiceStats::default();
    totals::add_counters(&mut total, &retired);
    total
}
