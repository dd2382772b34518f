//! Who gets a model: a request is leased a loaded model that admits it, or waits in line
//! for its model's turn ([`super::turns`] decides; this acts), or is answered at once with
//! the wait it should expect when that is past the hold limit.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::turns::{Seat, Table};
use super::{lock, Fleet, FleetError, Inner, KeepAlive, Lease, State, HOLD_LIMIT, REAP_EVERY};

impl Fleet {
    /// The model `name` names, loaded (and loading it first when it is not). A request
    /// for a model that is not loaded, or whose turn is over, waits for its turn: at most
    /// [`HOLD_LIMIT`], and not at all when its expected wait is longer. Once its model is
    /// next and the models in its way have closed, it waits for their replies to end
    /// (a request that left then would reopen them, and its retry start over).
    pub async fn acquire(
        &self,
        name: Option<&str>,
        keep_alive: Option<KeepAlive>,
    ) -> Result<Lease, FleetError> {
        let entry = self.inner.roster.resolve(name)?;
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            return Err(FleetError::ShuttingDown);
        }
        if let Some(lease) = self.try_lease(entry, Some(keep_alive))? {
            return Ok(lease);
        }
        // Its charge before its first load, for the turns' arithmetic.
        self.estimate_first_load(entry).await;
        let _in_line = InLine::join(&self.inner, entry);
        let started = Instant::now();
        loop {
            if self.inner.shutting_down.load(Ordering::SeqCst) {
                return Err(FleetError::ShuttingDown);
            }
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(lease) = self.try_lease(entry, Some(keep_alive))? {
                return Ok(lease);
            }
            if self.is_unloaded(entry) {
                let _swap = self.inner.swap.lock().await;
                if let Some(lease) = self.try_lease(entry, Some(keep_alive))? {
                    return Ok(lease);
                }
                if self.is_unloaded(entry) && self.make_room(entry).await? {
                    self.load(entry, false).await?;
                    // Leased before the swap lock goes: the reaper cannot unload it.
                    if let Some(lease) = self.try_lease(entry, Some(keep_alive))? {
                        return Ok(lease);
                    }
                    continue;
                }
            }
            let (expected, coming) = self.table(|t| {
                let coming = t.next() == Some(entry) && !t.closed().is_empty();
                (t.expected_wait(entry), coming)
            });
            let coming = coming || self.is_loading(entry);
            let waited = started.elapsed();
            let first = waited < REAP_EVERY;
            if !coming && (waited >= HOLD_LIMIT || (first && expected > HOLD_LIMIT)) {
                return Err(FleetError::Busy {
                    model: self.id(entry).to_string(),
                    retry_after: expected.max(Duration::from_secs(1)),
                });
            }
            let _ = tokio::time::timeout(REAP_EVERY, changed).await;
        }
    }

    /// Whether `entry` admits requests now (its turn is not over).
    pub(super) fn admits(&self, entry: usize) -> bool {
        !self.table(|t| t.closed()).contains(&entry)
    }

    fn is_unloaded(&self, entry: usize) -> bool {
        matches!(lock(&self.inner.slots[entry]).state, State::Unloaded)
    }

    fn is_loading(&self, entry: usize) -> bool {
        matches!(lock(&self.inner.slots[entry]).state, State::Loading { .. })
    }

    /// `f` of the turn policy's view of the fleet now.
    fn table<R>(&self, f: impl FnOnce(&Table<'_>) -> R) -> R {
        let seats: Vec<Seat> = self
            .inner
            .slots
            .iter()
            .map(|slot| {
                let slot = lock(slot);
                Seat {
                    loaded: !matches!(slot.state, State::Unloaded),
                    charge: slot.charge.total(),
                    turn_since: match slot.state {
                        State::Loaded(_) => slot.turn_since,
                        _ => None,
                    },
                    waiting_since: slot.waiting.iter().map(|&(_, since)| since).min(),
                    swap_cost: Duration::from_secs_f64((slot.load_ms + slot.unload_ms) / 1e3),
                }
            })
            .collect();
        f(&Table {
            seats: &seats,
            budget: self.inner.budget,
            bound: self.inner.swap_wait,
            now: Instant::now(),
        })
    }
}

/// A request waiting for its model, in its slot's line until dropped.
struct InLine {
    fleet: Arc<Inner>,
    entry: usize,
    ticket: u64,
}

impl InLine {
    fn join(fleet: &Arc<Inner>, entry: usize) -> Self {
        let ticket = fleet.tickets.fetch_add(1, Ordering::Relaxed);
        lock(&fleet.slots[entry])
            .waiting
            .push((ticket, Instant::now()));
        Self {
            fleet: fleet.clone(),
            entry,
            ticket,
        }
    }
}

impl Drop for InLine {
    fn drop(&mut self) {
        lock(&self.fleet.slots[self.entry])
            .waiting
            .retain(|&(t, _)| t != self.ticket);
        // A model closed for this request may admit again.
        self.fleet.changed.notify_waiters();
    }
}
