//! The service engine: one thread owns the llama.cpp context and serves [`Command`]s from
//! any number of [`ServiceHandle`]s.
//!
//! - Every conversation is a persisted session ([`conversations`]; which one a request
//!   continues: [`routing`]); a request's prompt is matched by content against the hot
//!   sequences and the stored pages ([`prefix`]).
//! - Up to `parallel` requests decode together, one llama.cpp batch per step
//!   ([`batch_plan`]); more wait in a queue.
//! - After each reply its session's save is captured between batch steps and committed to
//!   disk by the session's writer thread while decoding goes on ([`saving`]); the cold tier
//!   is kept under its budget by collecting the least recently used unnamed sessions
//!   ([`retention`]).

mod active;
mod admit;
mod batch_plan;
mod builder;
mod conversations;
mod counters;
mod elastic;
mod generate;
mod lifecycle;
mod parked;
mod prefix;
mod retention;
mod routing;
mod saving;
mod schedule;
mod sizing;
mod stats;
mod stop;
mod thread;

use std::sync::atomic::AtomicUsize;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::handle::{Command, ServiceHandle, ServiceInfo};
use super::protocol::ServiceError;
use crate::clock::unix_now;
use crate::llama::{Context, Model};
use crate::session::catalog::SessionCatalog;
use crate::session::SessionBinding;
use crate::settings::DEFAULT_PAGE_TOKENS;
use crate::tiers::WarmPool;

pub use sizing::{first_cells, ContextSizing};
pub use stop::StopFilter;
use thread::Result;
pub use thread::{EngineThread, StartError};

/// What `kvrun serve` starts the engine with.
#[derive(Clone)]
pub struct ServiceOptions {
    pub paths: crate::paths::Paths,
    pub model: crate::models::ModelChoice,
    pub llama: crate::settings::LlamaSettings,
    /// A context of `llama.ctx_size` cells, or one that grows with the live tokens.
    pub sizing: ContextSizing,
    /// Budgets of the warm and cold tiers and the idle times; `hot_sessions` is ignored
    /// (`parallel` sequences are the hot tier). Conversations idle for `hot_idle` leave the
    /// context, which an elastic one follows.
    pub tiers: crate::settings::TierSettings,
    /// A session whose pages start loading into RAM while the model loads (the one a chat
    /// opens first).
    pub prefetch: Option<String>,
    /// The conversation used last stays in the context however long it idles (a chat's
    /// active one); a server lets every idle one go, so that its context can shrink.
    pub keep_latest_hot: bool,
    /// Sequences decoded together (default 4).
    pub parallel: usize,
    /// Requests waiting beyond `parallel` (default 64); past it a submit gets QueueFull.
    pub max_queue: usize,
    pub chat_template: Option<String>,
    /// [`ServiceInfo::model_name`]; the model file's stem when None.
    pub alias: Option<String>,
    /// The warm tier, when it is shared with other engines (one per model a server has
    /// loaded); a pool of `tiers.warm_budget` of its own when None.
    pub warm: Option<Arc<WarmPool>>,
}

/// How often idle conversations and pages are looked for between requests.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// Starts the engine thread and returns at once; the handle's `model()` and `info()` are
/// set once the model is loaded and the context created.
pub fn start(options: ServiceOptions) -> Result<(ServiceHandle, EngineThread)> {
    let (commands, receiver) = std::sync::mpsc::channel();
    let pending = Arc::new(AtomicUsize::new(0));
    let ready = Arc::new(OnceLock::new());
    let parallel = options.parallel.max(1);
    let handle = ServiceHandle::new(
        commands,
        pending.clone(),
        parallel + options.max_queue,
        ready.clone(),
    );
    let thread = std::thread::Builder::new()
        .name("kvrun-service".into())
        .spawn(move || run(options, receiver, pending, ready))
        .map_err(StartError::Thread)?;
    Ok((handle, EngineThread::new(thread)))
}

fn run(
    options: ServiceOptions,
    commands: Receiver<Command>,
    pending: Arc<AtomicUsize>,
    ready: Arc<OnceLock<(Arc<Model>, ServiceInfo)>>,
) -> Result<()> {
    let catalog = SessionCatalog::open(&options.paths)?;
    let warm = options
        .warm
        .clone()
        .unwrap_or_else(|| Arc::new(WarmPool::new(options.tiers.warm_budget)));
    if let Some(name) = &options.prefetch {
        if let Ok(m) = catalog.read_manifest(name) {
            warm.prefetch(catalog.store().clone(), m.restore_objects().collect());
        }
    }
    crate::models::validate(&options.model)?;
    let mut model =
        Model::load(&options.model.path, options.llama.gpu_layers).map_err(|source| {
            StartError::Load {
                path: options.model.path.clone(),
                source,
            }
        })?;
    if let Some(spec) = &options.chat_template {
        model.set_chat_template(spec)?;
    }
    let model = Arc::new(model);
    let parallel = options.parallel.max(1);
    // One sequence per decoding request, plus the scratch sequence page captures use.
    let mut sizing = sizing::Sizing::new(
        options.sizing,
        &options.llama,
        model.facts().n_ctx_train,
        DEFAULT_PAGE_TOKENS,
        parallel as u32,
    );
    let mut ctx = sizing.create(&model)?;
    // Ids a client can type: the alias, then the file's stem (never the GGUF's free-text
    // name, which has spaces).
    let stem = options
        .model
        .path
        .file_stem()
        .map_or_else(|| "model".to_string(), |s| s.to_string_lossy().into_owned());
    let model_ids: Vec<String> = options.alias.iter().cloned().chain([stem]).collect();
    let info = ServiceInfo {
        model_name: model_ids[0].clone(),
        model_ids,
        n_ctx_train: model.facts().n_ctx_train as usize,
        // What a request may use: an elastic context grows to it.
        n_ctx: sizing.ceiling as usize,
        parallel,
        page_tokens: ctx.info().page_tokens as usize,
        n_batch: ctx.info().n_batch as usize,
        created_unix: unix_now(),
        n_vocab: model.facts().n_vocab.max(0) as usize,
        weights_bytes: model.size_bytes(),
        kv_bytes_per_cell: model.kv_bytes_per_cell(options.llama.kv_type),
        path: options.model.path.display().to_string(),
    };
    let _ = ready.set((model.clone(), info));
    let sessions = SessionBinding::new(
        &catalog,
        &options.model.path,
        &model,
        &ctx,
        options.llama.clone(),
    )?
    .with_warm_pool(warm.clone());
    // The scope holds the thread that makes the elastic context's new sizes (they borrow
    // the model, as the engine's context does).
    std::thread::scope(|scope| {
        let builder = builder::ContextBuilder::spawn(scope, &model).map_err(StartError::Thread)?;
        let mut engine = Engine {
            model: &model,
            catalog: &catalog,
            sessions,
            warm,
            tiers: options.tiers.clone(),
            sizing,
            builder,
            keep_latest_hot: options.keep_latest_hot,
            parallel,
            conversations: conversations::Conversations::default(),
            schedule: schedule::Schedule::default(),
            counters: Default::default(),
            pending,
            shutting_down: false,
            parked_saves: Vec::new(),
        };
        engine.index_stored_sessions();
        // Idle timeouts are checked on a clock of their own: a front end that asks for stats
        // every second (a chat's memory panel) must not keep them from ever running.
        let mut last_idle = std::time::Instant::now();
        loop {
            // Saves that landed since the last step reach their clients (or the log).
            engine.settle_saves(&mut ctx);
            // Block for work only when nothing decodes; between batch steps, take what came.
            let busy = !engine.schedule.is_idle();
            if !busy && last_idle.elapsed() >= IDLE_CHECK {
                last_idle = std::time::Instant::now();
                engine.idle(&mut ctx);
            }
            let next = if busy {
                commands.try_recv().map_err(|e| match e {
                    std::sync::mpsc::TryRecvError::Empty => RecvTimeoutError::Timeout,
                    std::sync::mpsc::TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                })
            } else {
                commands.recv_timeout(IDLE_CHECK)
            };
            match next {
                Ok(command) => {
                    engine.command(&mut ctx, command);
                    // A Shutdown leaves now, not after the next wait for a command.
                    if !engine.shutting_down {
                        continue;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => engine.shutting_down = true,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if engine.shutting_down {
                break;
            }
            if busy {
                engine.step(&mut ctx);
            }
        }
        engine.shutdown(&mut ctx);
        Ok(())
    })
}

/// The engine thread's state. `'c` is the catalog's lifetime, `'m` the model's.
struct Engine<'c, 'm> {
    model: &'m Model,
    catalog: &'c SessionCatalog,
    /// How sessions are opened here (the model fingerprinted once, at start).
    sessions: SessionBinding<'c>,
    warm: Arc<WarmPool>,
    tiers: crate::settings::TierSettings,
    sizing: sizing::Sizing,
    /// Makes the elastic context's next size off this thread.
    builder: builder::ContextBuilder<'m>,
    /// See [`ServiceOptions::keep_latest_hot`].
    keep_latest_hot: bool,
    parallel: usize,
    /// The conversations, open and on disk, and which hold the context's sequences.
    conversations: conversations::Conversations<'c>,
    /// Requests waiting and decoding.
    schedule: schedule::Schedule,
    counters: counters::Counters,
    pending: Arc<AtomicUsize>,
    shutting_down: bool,
    /// Client Saves waiting for their session's commit in flight (while others decode).
    parked_saves: Vec<parked::ParkedSave>,
}

impl<'c, 'm> Engine<'c, 'm> {
    fn command(&mut self, ctx: &mut Context<'m>, command: Command) {
        match command {
            Command::Generate(request) => {
                if self.shutting_down {
                    self.fail(*request, ServiceError::ShuttingDown);
                } else {
                    self.schedule.enqueue(*request);
                }
            }
            Command::Stats(reply) => {
                // A client told of a failed save (by the writer thread) and asking
                // /metrics next finds it counted, without waiting for the next loop.
                self.route_all_outcomes();
                let _ = reply.send(self.stats(ctx));
            }
            Command::Settle(name, reply) => {
                if let Some(index) = self.conversations.find(&name) {
                    self.wait_for_commits_of(index);
                }
                let _ = reply.send(());
            }
            Command::RemoveSession(name, reply) => {
                let _ = reply.send(self.remove_session(ctx, &name));
            }
            Command::PinSession(name, pinned, reply) => {
                let _ = reply.send(self.pin_session(&name, pinned));
            }
            Command::Open(open, reply) => {
                let _ = reply.send(self.open_hot(ctx, open.name.as_deref(), open.sampling));
            }
            Command::Save(name, transcript, reply) => self.save_now(ctx, &name, transcript, reply),
            Command::Reset(name, transcript, reply) => self.reset(ctx, &name, transcript, reply),
            Command::Fork { from, to, reply } => {
                let _ = reply.send(self.fork(ctx, &from, &to));
            }
            Command::Release(reply) => {
                self.release(ctx);
                let _ = reply.send(self.stats(ctx));
            }
            Command::Shutdown => self.shutting_down = true,
        }
    }

    /// Between requests: hot conversations idle for `hot_idle` leave the context (their
    /// pages are saved; a chat's active one stays), an elastic context then shrinks, and
    /// pages unused for `warm_idle` leave RAM.
    fn idle(&mut self, ctx: &mut Context<'m>) {
        if let Some(idle) = self.tiers.hot_idle {
            let now = std::time::Instant::now();
            let victims = crate::tiers::evict::idle_victims(
                &self.conversations.residency(),
                idle,
                now,
                self.keep_latest_hot,
            );
            for i in victims {
                self.conversations.cool(ctx, i);
            }
            self.shrink_when_empty(ctx);
        }
        if let Some(idle) = self.tiers.warm_idle {
            self.warm.evict_idle(idle);
        }
    }

    /// Gives memory back now: every idle hot conversation leaves the context (its pages
    /// were saved after its reply) and an elastic context shrinks to its floor. A server
    /// asks this of an idle model before it unloads one to make room for another.
    fn release(&mut self, ctx: &mut Context<'m>) {
        let idle: Vec<usize> = (0..self.conversations.len())
            .filter(|&i| !self.conversations[i].is_busy() && self.conversations[i].hot().is_some())
            .collect();
        for i in idle {
            self.conversations.cool(ctx, i);
        }
        self.shrink_when_empty(ctx);
    }

    /// Cancels what runs (each request gets Done with finish Cancelled), fails what waits,
    /// saves every conversation, waits for every commit and only then releases the locks.
    fn shutdown(&mut self, ctx: &mut Context<'m>) {
        self.schedule.cancel_all();
        while !self.schedule.none_decoding() {
            self.step(ctx);
        }
        while let Some(request) = self.schedule.next_waiting() {
            self.fail(request, ServiceError::ShuttingDown);
        }
        // Nothing decodes now: the parked Saves run, and every outcome is heard.
        self.settle_saves(ctx);
        self.wait_for_all_commits();
        // Saves that landed with pages missing are repaired while the KV is still here
        // (a repair that finds pages missing again gets one more try).
        for _ in 0..2 {
            self.repair_saves(ctx);
            self.wait_for_all_commits();
        }
        // Dropping a session waits for its writer before its lock goes (see LiveSession).
        self.conversations.close_all();
    }
}
