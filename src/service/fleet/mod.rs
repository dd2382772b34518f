//! Many models behind one server and one memory budget (`kvrun serve` without MODEL).
//!
//! Each loaded model has its own engine thread ([`super::engine`]); the warm tier and the
//! store are shared, so a conversation's pages outlive its model's unloading. A request
//! names a model ([`roster`]); [`Fleet::acquire`] loads it on demand and hands out a
//! [`Lease`], which keeps the model loaded while the request is queued or decoding. To make
//! room, idle models first give back their idle conversations' context, then the least
//! recently used idle model is unloaded ([`budget`]): its engine saves every conversation
//! before it exits. A busy model that holds the room another model's request has waited
//! for past `swap_wait` stops admitting requests until that model has had its turn
//! ([`turns`]). A model idle past its `keep_alive` is unloaded by the reaper task.
//!
//! Loads and unloads run one at a time (the `swap` lock); requests to loaded models never
//! take it.

mod admission;
pub mod budget;
pub mod keep_alive;
pub mod roster;
mod status;
mod swap;
mod totals;
pub mod turns;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use budget::Charge;
pub use keep_alive::KeepAlive;
pub use roster::{Roster, UnknownModel};
pub use status::{FleetStats, ModelState, ModelStatus};

use super::engine::{EngineThread, ServiceOptions};
use super::handle::{ServiceHandle, ServiceInfo, ServiceStats};
use crate::clock::unix_now;
use crate::llama::Model;
use crate::tiers::WarmPool;

/// How often the reaper looks for models idle past their keep-alive.
const REAP_EVERY: Duration = Duration::from_millis(250);
/// How long a request waits for its model's turn before it is answered 503, and the
/// longest expected wait it waits for at all.
const HOLD_LIMIT: Duration = Duration::from_secs(30);
/// How long a model's waiting request lets busy models that hold its room run on
/// (`serve --swap-wait`).
pub const DEFAULT_SWAP_WAIT: Duration = Duration::from_secs(3);

/// What a fleet is started with.
pub struct FleetOptions {
    /// Every model's engine starts with these (its `model` and `alias` replaced).
    pub service: ServiceOptions,
    pub roster: Roster,
    /// Bytes every loaded model's charge must fit in together.
    pub budget: u64,
    /// How long an idle model stays loaded when its requests do not say.
    pub keep_alive: KeepAlive,
    /// How long a request waits for busy models before they stop admitting others.
    pub swap_wait: Duration,
}

/// Why a model could not be had.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FleetError {
    #[error(transparent)]
    Unknown(#[from] UnknownModel),
    #[error(
        "model '{model}' needs {} (weights {}, context {}, compute {}), more than the whole \
         memory budget of {}; raise --memory-budget or give it a smaller --max-ctx-size",
        crate::format::human_bytes(need.total()), crate::format::human_bytes(need.weights),
        crate::format::human_bytes(need.kv), crate::format::human_bytes(need.compute),
        crate::format::human_bytes(*budget)
    )]
    TooLarge {
        model: String,
        need: Charge,
        budget: u64,
    },
    #[error(
        "model '{model}' does not fit the memory budget beside models that are generating \
         now, and its turn is about {}s away; retry then",
        retry_after.as_secs_f64().ceil()
    )]
    Busy {
        model: String,
        /// The wait it should expect.
        retry_after: Duration,
    },
    #[error("model '{model}' failed to load: {detail}")]
    LoadFailed { model: String, detail: String },
    #[error("model '{model}' is loading")]
    Loading { model: String },
    #[error("the server is shutting down")]
    ShuttingDown,
}

/// A model's place in the fleet.
#[derive(Default)]
enum State {
    #[default]
    Unloaded,
    /// Its engine is loading it. `startup`: the load `serve` waits for before it says it
    /// listens; requests get 503 meanwhile (as `/health` does).
    Loading {
        handle: ServiceHandle,
        startup: bool,
    },
    Loaded(ServiceHandle),
    /// Its engine is saving its conversations and exiting.
    Unloading,
}

#[derive(Default)]
struct Slot {
    state: State,
    thread: Option<EngineThread>,
    /// Leases out (requests queued or decoding, and sessions calls).
    in_use: usize,
    /// When its last load ended (its turn began).
    turn_since: Option<Instant>,
    /// Requests waiting for it to load or to admit them again: (ticket, since when).
    waiting: Vec<(u64, Instant)>,
    last_used: Option<Instant>,
    last_used_unix: u64,
    /// The last request's keep-alive (the fleet's default when None).
    keep_alive: Option<KeepAlive>,
    /// Its charge when it was last measured (its estimate before its first load).
    charge: Charge,
    info: Option<ServiceInfo>,
    loads: u64,
    unloads: u64,
    load_ms: f64,
    unload_ms: f64,
    last_error: Option<String>,
    /// Why its engine ended while loading, for `serve`'s startup load to exit with.
    start_error: Option<super::engine::StartError>,
}

struct Inner {
    roster: Roster,
    /// What each engine starts with (None for an attached engine: nothing to load).
    service: Option<ServiceOptions>,
    budget: u64,
    keep_alive: KeepAlive,
    swap_wait: Duration,
    slots: Vec<Mutex<Slot>>,
    /// Numbers each waiting request.
    tickets: AtomicU64,
    swap: tokio::sync::Mutex<()>,
    /// Told when a lease ends (room may have been made).
    changed: tokio::sync::Notify,
    /// The counters of engines that were unloaded, so that totals survive swaps.
    retired: Mutex<ServiceStats>,
    shutting_down: AtomicBool,
    /// The default model's first load has not ended yet (`/health` says "loading").
    starting: AtomicBool,
}

/// The models a server serves. Cheap to clone.
#[derive(Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

/// A model as `/v1/models` lists it.
#[derive(Debug, Clone)]
pub struct ListedModel {
    pub ids: Vec<String>,
    pub loaded: bool,
    /// Its facts when it was last loaded.
    pub info: Option<ServiceInfo>,
}

/// A loaded model held for one request: while any lease of it is out, it is not unloaded.
#[derive(Clone)]
pub struct Lease {
    held: Arc<Held>,
}

struct Held {
    fleet: Arc<Inner>,
    entry: usize,
    handle: ServiceHandle,
    model: Arc<Model>,
    info: ServiceInfo,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut slot = lock(&self.fleet.slots[self.entry]);
        slot.in_use = slot.in_use.saturating_sub(1);
        slot.last_used = Some(Instant::now());
        slot.last_used_unix = unix_now();
        drop(slot);
        self.fleet.changed.notify_waiters();
    }
}

impl Lease {
    pub fn handle(&self) -> &ServiceHandle {
        &self.held.handle
    }

    pub fn model(&self) -> &Arc<Model> {
        &self.held.model
    }

    pub fn info(&self) -> &ServiceInfo {
        &self.held.info
    }
}

fn lock(slot: &Mutex<Slot>) -> std::sync::MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Fleet {
    /// A fleet with nothing loaded yet; its reaper runs on the current tokio runtime.
    pub fn new(mut options: FleetOptions) -> Self {
        // One warm tier for every engine: a conversation's pages stay in RAM across its
        // model's unloading.
        if options.service.warm.is_none() {
            let warm = WarmPool::new(options.service.tiers.warm_budget);
            options.service.warm = Some(Arc::new(warm));
        }
        let slots = options
            .roster
            .entries()
            .iter()
            .map(|e| {
                let weights = std::fs::metadata(&e.path).map_or(0, |m| m.len());
                Mutex::new(Slot {
                    charge: Charge {
                        weights,
                        kv: 0,
                        compute: budget::compute_reserve(0, 0),
                    },
                    ..Slot::default()
                })
            })
            .collect();
        let inner = Arc::new(Inner {
            roster: options.roster,
            service: Some(options.service),
            budget: options.budget,
            keep_alive: options.keep_alive,
            swap_wait: options.swap_wait,
            slots,
            tickets: AtomicU64::new(0),
            swap: tokio::sync::Mutex::new(()),
            changed: tokio::sync::Notify::new(),
            retired: Mutex::default(),
            shutting_down: AtomicBool::new(false),
            starting: AtomicBool::new(true),
        });
        let fleet = Self { inner };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(fleet.clone().reap());
        }
        fleet
    }

    /// A fleet of one engine started elsewhere (tests of the HTTP layer): it answers every
    /// name, and is never unloaded.
    pub fn attach(handle: ServiceHandle, thread: Option<EngineThread>) -> Self {
        let roster = Roster::single(std::path::Path::new("attached.gguf"), None);
        let slot = Slot {
            state: State::Loading {
                handle,
                startup: true,
            },
            thread,
            keep_alive: Some(KeepAlive::Forever),
            ..Slot::default()
        };
        Self {
            inner: Arc::new(Inner {
                roster,
                service: None,
                budget: u64::MAX,
                keep_alive: KeepAlive::Forever,
                swap_wait: DEFAULT_SWAP_WAIT,
                slots: vec![Mutex::new(slot)],
                tickets: AtomicU64::new(0),
                swap: tokio::sync::Mutex::new(()),
                changed: tokio::sync::Notify::new(),
                retired: Mutex::default(),
                shutting_down: AtomicBool::new(false),
                starting: AtomicBool::new(false),
            }),
        }
    }

    pub fn roster(&self) -> &Roster {
        &self.inner.roster
    }

    pub fn budget(&self) -> u64 {
        self.inner.budget
    }

    /// Loads the default model, as `serve` does before it says it listens; requests get
    /// 503 until it is ready. False when there is no default model. A failure is the
    /// engine's own error (what `serve` exits with).
    pub async fn start_default(&self) -> anyhow::Result<bool> {
        let Some(entry) = self.inner.roster.default_entry() else {
            self.inner.starting.store(false, Ordering::SeqCst);
            return Ok(false);
        };
        let _swap = self.inner.swap.lock().await;
        let loaded = self.load(entry, true).await;
        self.inner.starting.store(false, Ordering::SeqCst);
        match loaded {
            Ok(()) => Ok(true),
            Err(e) => match lock(&self.inner.slots[entry]).start_error.take() {
                Some(start) => Err(start.into()),
                None => Err(e.into()),
            },
        }
    }

    /// True once nothing is loading for `serve`'s start.
    pub fn ready(&self) -> bool {
        if self.inner.starting.load(Ordering::SeqCst) {
            return false;
        }
        self.inner.slots.iter().all(|s| {
            let mut slot = lock(s);
            // An attached engine becomes Loaded once its model is in.
            if let State::Loading {
                handle,
                startup: true,
            } = &slot.state
            {
                if handle.info().is_none() {
                    return false;
                }
                let handle = handle.clone();
                slot.info = handle.info().cloned();
                slot.state = State::Loaded(handle);
            }
            true
        })
    }

    /// Unloads the model `name` names now, if it is loaded and idle (Ollama's request with
    /// nothing to generate and `keep_alive: 0`): its engine saves every conversation and
    /// exits. One still in use is unloaded by the reaper once its requests end. Returns
    /// whether it was unloaded now.
    pub async fn unload_now(&self, name: Option<&str>) -> Result<bool, FleetError> {
        let entry = self.inner.roster.resolve(name)?;
        lock(&self.inner.slots[entry]).keep_alive = Some(KeepAlive::For(Duration::ZERO));
        let _swap = self.inner.swap.lock().await;
        Ok(self.unload(entry).await)
    }

    /// Every model with the ids it answers to, and its facts once it has been loaded
    /// (`/v1/models`).
    pub fn listing(&self) -> Vec<ListedModel> {
        self.inner
            .roster
            .entries()
            .iter()
            .enumerate()
            .map(|(entry, e)| {
                let slot = lock(&self.inner.slots[entry]);
                let info = match &slot.state {
                    State::Loaded(h) | State::Loading { handle: h, .. } => {
                        h.info().cloned().or_else(|| slot.info.clone())
                    }
                    _ => slot.info.clone(),
                };
                ListedModel {
                    ids: std::iter::once(e.id.clone())
                        .chain(e.also.iter().cloned())
                        .collect(),
                    loaded: matches!(slot.state, State::Loaded(_)),
                    info,
                }
            })
            .collect()
    }

    /// Leases of the models loaded now (the sessions API asks each).
    pub fn loaded(&self) -> Vec<Lease> {
        (0..self.inner.slots.len())
            .filter_map(|entry| self.try_lease(entry, None).ok().flatten())
            .collect()
    }

    /// A lease when `entry` is loaded (and, for a request, admitting); None when it must
    /// be loaded first or its turn is over. `keep_alive`: a request's (`Some(None)`: the
    /// server's default), or None to leave it (the sessions API's calls, which are let in
    /// while it finishes its turn).
    fn try_lease(
        &self,
        entry: usize,
        keep_alive: Option<Option<KeepAlive>>,
    ) -> Result<Option<Lease>, FleetError> {
        if keep_alive.is_some() && !self.admits(entry) {
            return Ok(None);
        }
        let mut slot = lock(&self.inner.slots[entry]);
        let handle = match &slot.state {
            State::Loaded(handle) => handle.clone(),
            State::Loading {
                handle,
                startup: true,
            } => {
                if handle.info().is_none() {
                    return Err(FleetError::Loading {
                        model: self.id(entry).to_string(),
                    });
                }
                let handle = handle.clone();
                slot.info = handle.info().cloned();
                slot.state = State::Loaded(handle.clone());
                handle
            }
            _ => return Ok(None),
        };
        let (Some(model), Some(info)) = (handle.model().cloned(), handle.info().cloned()) else {
            return Ok(None);
        };
        if slot.thread.as_ref().is_some_and(EngineThread::is_finished) {
            // Its engine ended on its own (a panic): load it again.
            slot.state = State::Unloaded;
            if let Some(thread) = slot.thread.take() {
                slot.last_error = thread.join().err().map(|e| e.to_string());
            }
            return Ok(None);
        }
        slot.in_use += 1;
        // Each request's keep-alive (Ollama's): its own, or the server's default.
        if let Some(keep_alive) = keep_alive {
            slot.keep_alive = keep_alive;
        }
        Ok(Some(Lease {
            held: Arc::new(Held {
                fleet: self.inner.clone(),
                entry,
                handle,
                model,
                info,
            }),
        }))
    }

    fn id(&self, entry: usize) -> &str {
        &self.inner.roster.entries()[entry].id
    }

    /// Tells every engine at once to cancel what runs, save every conversation and exit
    /// (replies under way end now, not after the HTTP side's drain); the future resolves
    /// once all have (or `deadline` passed), with the first error.
    pub fn shutdown(
        &self,
        deadline: Duration,
    ) -> impl std::future::Future<Output = anyhow::Result<()>> + 'static {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let mut threads = Vec::new();
        for slot in &self.inner.slots {
            let mut slot = lock(slot);
            match &slot.state {
                State::Loaded(h) | State::Loading { handle: h, .. } => h.shutdown(),
                _ => {}
            }
            if let Some(thread) = slot.thread.take() {
                threads.push(thread);
            }
        }
        async move {
            let joined = tokio::time::timeout(
                deadline,
                tokio::task::spawn_blocking(move || {
                    threads
                        .into_iter()
                        .map(EngineThread::join)
                        .find_map(Result::err)
                }),
            )
            .await;
            match joined {
                Ok(Ok(None)) => Ok(()),
                Ok(Ok(Some(e))) => Err(e.into()),
                Ok(Err(e)) => Err(anyhow::anyhow!("an engine thread panicked: {e}")),
                Err(_) => Err(anyhow::anyhow!(
                    "the engines did not finish saving within {deadline:?}"
                )),
            }
        }
    }
}
