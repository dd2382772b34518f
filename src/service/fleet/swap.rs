//! Loading and unloading: what runs under the fleet's swap lock, and the reaper that
//! unloads models idle past their keep-alive.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::budget::{self, Loaded, Plan};
use super::{lock, totals, Fleet, FleetError, State, REAP_EVERY};
use crate::clock::unix_now;
use crate::service::engine::{start, ContextSizing, EngineThread};

impl Fleet {
    /// Loads `entry` (the swap lock held): starts its engine and waits for its model.
    pub(super) async fn load(&self, entry: usize, startup: bool) -> Result<(), FleetError> {
        let started = Instant::now();
        let Some(mut options) = self.inner.service.clone() else {
            return Err(FleetError::LoadFailed {
                model: self.id(entry).to_string(),
                detail: "this server cannot load models".into(),
            });
        };
        let path = self.inner.roster.entries()[entry].path.clone();
        if !(self.inner.roster.is_single() || options.model.path == path) {
            options.model = crate::models::ModelChoice::argument(path.clone());
            options.alias = None;
        }
        // An elastic context grows only as far as the budget leaves room for beside the
        // model's own weights and compute.
        if let ContextSizing::Elastic { ceiling } = options.sizing {
            let budget = self.inner.budget;
            let service = options.clone();
            let cap = tokio::task::spawn_blocking(move || {
                budget::ceiling_within(budget, &path, &service)
            })
            .await
            .ok()
            .flatten();
            if let Some(cap) = cap {
                let ceiling = ceiling.map_or(cap, |c| c.min(cap));
                options.sizing = ContextSizing::Elastic {
                    ceiling: Some(ceiling),
                };
            }
        }
        let (handle, thread) = start(options).map_err(|e| FleetError::LoadFailed {
            model: self.id(entry).to_string(),
            detail: e.to_string(),
        })?;
        {
            let mut slot = lock(&self.inner.slots[entry]);
            slot.state = State::Loading {
                handle: handle.clone(),
                startup,
            };
            slot.thread = Some(thread);
        }
        loop {
            if handle.info().is_some() {
                break;
            }
            let finished = lock(&self.inner.slots[entry])
                .thread
                .as_ref()
                .is_none_or(EngineThread::is_finished);
            if finished {
                let thread = {
                    let mut slot = lock(&self.inner.slots[entry]);
                    slot.state = State::Unloaded;
                    slot.thread.take()
                };
                let detail = match thread {
                    Some(thread) => {
                        match tokio::task::spawn_blocking(move || thread.join()).await {
                            Ok(Err(e)) => crate::format::one_line_of(&e),
                            _ => "its engine stopped".to_string(),
                        }
                    }
                    None => "its engine stopped".to_string(),
                };
                lock(&self.inner.slots[entry]).last_error = Some(detail.clone());
                return Err(FleetError::LoadFailed {
                    model: self.id(entry).to_string(),
                    detail,
                });
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let info = handle.info().cloned().unwrap_or_default();
        let stats = handle.stats().await.unwrap_or_default();
        let charge = budget::charge_of(&info, &stats, &self.inner.service);
        {
            let mut slot = lock(&self.inner.slots[entry]);
            slot.state = State::Loaded(handle);
            slot.info = Some(info);
            slot.charge = charge;
            slot.loads += 1;
            slot.load_ms = started.elapsed().as_secs_f64() * 1e3;
            slot.last_used = Some(Instant::now());
            slot.last_used_unix = unix_now();
            slot.last_error = None;
            slot.turn_since = Some(Instant::now());
        }
        self.inner.changed.notify_waiters();
        tracing::info!(
            "loaded model '{}' in {:.0} ms ({} of the {} budget)",
            self.id(entry),
            started.elapsed().as_secs_f64() * 1e3,
            crate::format::human_bytes(charge.total()),
            crate::format::human_bytes(self.inner.budget)
        );
        if charge.total() > self.inner.budget && startup {
            tracing::warn!(
                "model '{}' holds {}, more than the {} memory budget",
                self.id(entry),
                crate::format::human_bytes(charge.total()),
                crate::format::human_bytes(self.inner.budget)
            );
        }
        if charge.total() > self.inner.budget && !startup {
            self.unload(entry).await;
            return Err(FleetError::TooLarge {
                model: self.id(entry).to_string(),
                need: charge,
                budget: self.inner.budget,
            });
        }
        Ok(())
    }

    /// Unloads idle models until `entry`'s charge fits (the swap lock held): true once it
    /// does, false while generating models hold the room (the caller waits for them). Idle
    /// models give back their idle conversations' context first.
    pub(super) async fn make_room(&self, entry: usize) -> Result<bool, FleetError> {
        let need = lock(&self.inner.slots[entry]).charge;
        let mut released = false;
        loop {
            let loaded = self.measure().await;
            let plan = budget::plan(self.inner.budget, need.total(), &loaded);
            match plan {
                Plan::Fits => return Ok(true),
                Plan::NeverFits => {
                    return Err(FleetError::TooLarge {
                        model: self.id(entry).to_string(),
                        need,
                        budget: self.inner.budget,
                    })
                }
                _ if !released => {
                    released = true;
                    self.release_idle(&loaded).await;
                    continue;
                }
                Plan::Unload(victims) => {
                    self.unload(victims[0]).await;
                }
                Plan::WaitForBusy => return Ok(false),
            }
        }
    }

    /// A model never loaded yet is charged from its file's metadata.
    pub(super) async fn estimate_first_load(&self, entry: usize) {
        let (Some(service), false) = (
            self.inner.service.clone(),
            lock(&self.inner.slots[entry]).loads > 0,
        ) else {
            return;
        };
        let path = self.inner.roster.entries()[entry].path.clone();
        let estimate =
            tokio::task::spawn_blocking(move || budget::estimate_before_load(&path, &service))
                .await;
        if let Ok(Some(charge)) = estimate {
            lock(&self.inner.slots[entry]).charge = charge;
        }
    }

    /// Each loaded model's charge now, and whether it is idle.
    pub(super) async fn measure(&self) -> Vec<Loaded> {
        let mut loaded = Vec::new();
        for (entry, slot) in self.inner.slots.iter().enumerate() {
            let (handle, in_use, last_used) = {
                let slot = lock(slot);
                match &slot.state {
                    State::Loaded(h) | State::Loading { handle: h, .. } => {
                        (h.clone(), slot.in_use, slot.last_used)
                    }
                    _ => continue,
                }
            };
            let charge = match (handle.info(), handle.stats().await) {
                (Some(info), Ok(stats)) => {
                    let charge = budget::charge_of(info, &stats, &self.inner.service);
                    lock(slot).charge = charge;
                    charge
                }
                _ => lock(slot).charge,
            };
            loaded.push(Loaded {
                entry,
                charge: charge.total(),
                idle: in_use == 0 && handle.pending() == 0 && handle.info().is_some(),
                last_used: last_used.unwrap_or_else(Instant::now),
            });
        }
        loaded
    }

    /// Idle models give back their idle conversations' context (an elastic one shrinks).
    pub(super) async fn release_idle(&self, loaded: &[Loaded]) {
        for l in loaded.iter().filter(|l| l.idle) {
            let handle = match &lock(&self.inner.slots[l.entry]).state {
                State::Loaded(h) => h.clone(),
                _ => continue,
            };
            let _ = handle.release().await;
        }
    }

    /// Unloads `entry` if it is loaded and idle (the swap lock held): its engine saves
    /// every conversation and exits. Returns whether it did.
    pub(super) async fn unload(&self, entry: usize) -> bool {
        let started = Instant::now();
        let (handle, thread) = {
            let mut slot = lock(&self.inner.slots[entry]);
            if slot.in_use > 0 {
                return false;
            }
            let handle = match std::mem::take(&mut slot.state) {
                State::Loaded(h) | State::Loading { handle: h, .. } => h,
                other => {
                    slot.state = other;
                    return false;
                }
            };
            if handle.pending() > 0 {
                slot.state = State::Loaded(handle);
                return false;
            }
            slot.state = State::Unloading;
            (handle, slot.thread.take())
        };
        if let Ok(stats) = handle.stats().await {
            let mut retired = self.inner.retired.lock().unwrap_or_else(|p| p.into_inner());
            totals::add_counters(&mut retired, &stats);
        }
        handle.shutdown();
        let joined = match thread {
            Some(thread) => tokio::task::spawn_blocking(move || thread.join())
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r.map_err(|e| crate::format::one_line_of(&e))),
            None => Ok(()),
        };
        let mut slot = lock(&self.inner.slots[entry]);
        slot.state = State::Unloaded;
        slot.unloads += 1;
        slot.unload_ms = started.elapsed().as_secs_f64() * 1e3;
        if let Err(e) = &joined {
            tracing::warn!("unloading model '{}': {e}", self.id(entry));
            slot.last_error = Some(e.clone());
        }
        drop(slot);
        self.inner.changed.notify_waiters();
        tracing::info!(
            "unloaded model '{}' in {:.0} ms (its conversations saved)",
            self.id(entry),
            started.elapsed().as_secs_f64() * 1e3
        );
        true
    }

    /// Unloads models idle past their keep-alive, until the fleet shuts down.
    pub(super) async fn reap(self) {
        loop {
            let changed = self.inner.changed.notified();
            let _ = tokio::time::timeout(REAP_EVERY, changed).await;
            if self.inner.shutting_down.load(Ordering::SeqCst) {
                return;
            }
            for entry in 0..self.inner.slots.len() {
                if !self.outstayed(entry) {
                    continue;
                }
                let _swap = self.inner.swap.lock().await;
                if self.outstayed(entry) && !self.inner.shutting_down.load(Ordering::SeqCst) {
                    self.unload(entry).await;
                }
            }
        }
    }

    /// Loaded, idle, and idle longer than its keep-alive.
    pub(super) fn outstayed(&self, entry: usize) -> bool {
        let slot = lock(&self.inner.slots[entry]);
        let State::Loaded(handle) = &slot.state else {
            return false;
        };
        let keep = slot.keep_alive.unwrap_or(self.inner.keep_alive);
        slot.in_use == 0
            && handle.pending() == 0
            && slot.last_used.is_some_and(|t| keep.expired(t.elapsed()))
    }
}
