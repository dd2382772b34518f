//! The chat engine loop. One context serves several sessions as sequences of one shared
//! cell pool (the hot tier); a RAM pool of pages is the warm tier; the object store the cold
//! tier. Switching to a hot session is instant; others are restored through the tiers.

use super::policy::{self, HotSession};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

mod reports;

use super::progress::{OtherHot, TurnEvents};
use super::tiers::{HotView, TierBook};
use crate::chat::protocol::{
    EngineEvent, ProgressKind, SessionRow, ShownMessage, Tier, UserCommand,
};
use crate::conversation::Conversation;
use crate::engine::{Context, Model, Sampler};
use crate::format::thousands;
use crate::interrupt::Interrupt;
use crate::models::ModelChoice;
use crate::paths::Paths;
use crate::sequence::{GenerateOptions, StopReason};
use crate::session::capture::Slot;
use crate::session::catalog::SessionCatalog;
use crate::session::error::SessionError;
use crate::session::live::{LiveSession, SessionObserver};
use crate::session::SessionBinding;
use crate::settings::{
    ContextOverflow, EngineSettings, SamplingSettings, TierSettings, DEFAULT_PAGE_TOKENS,
};
use crate::tiers::WarmPool;

/// The longest reply when `-n` is not given: a base model rarely emits an end token, and a
/// reply nobody stops must not run on until the context is full.
pub const DEFAULT_CHAT_MAX_TOKENS: u32 = 1024;

pub struct ChatOptions {
    pub paths: Paths,
    pub model: ModelChoice,
    pub engine: EngineSettings,
    pub sampling: SamplingSettings,
    /// The session to start in (None: an unsaved conversation; `/fork NAME` keeps it).
    pub session: Option<String>,
    pub system: Option<String>,
    pub overflow: ContextOverflow,
    /// The longest reply (None: [`DEFAULT_CHAT_MAX_TOKENS`]).
    pub max_tokens: Option<u32>,
    pub tiers: TierSettings,
    /// `--chat-template` (or the config key): replaces the model's own template.
    pub chat_template: Option<String>,
}

/// Starts the engine thread. `interrupt` stops the reply being generated (Ctrl-C) or
/// everything (a quit); it is a flag rather than a command because the engine is busy
/// generating when it matters. After a quit the engine saves every session and exits,
/// whether or not the front end still sends commands. Fails only when the operating
/// system refuses a new thread.
pub fn spawn(
    options: ChatOptions,
    events: Sender<EngineEvent>,
    interrupt: Interrupt,
) -> std::io::Result<(Sender<UserCommand>, JoinHandle<()>)> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("kvrun-engine".into())
        .spawn(move || {
            if let Err(e) = run(options, rx, &events, &interrupt) {
                let _ = events.send(EngineEvent::Error(crate::exit::one_line(&e)));
            }
            let _ = events.send(EngineEvent::Exited);
        })?;
    Ok((tx, handle))
}

/// A conversation resident in the context.
struct Open<'c, 'm> {
    name: Option<String>,
    live: Option<LiveSession<'c>>,
    conversation: Conversation<'m>,
    seq: i32,
    last_used: Instant,
}

struct Engine<'c, 'm, 'x> {
    options: &'x ChatOptions,
    model: &'m Model,
    catalog: &'c SessionCatalog,
    /// How sessions are opened here (the model fingerprinted once, at start).
    sessions: SessionBinding<'c>,
    warm: Arc<WarmPool>,
    events: &'x Sender<EngineEvent>,
    interrupt: &'x Interrupt,
    hot: Vec<Open<'c, 'm>>,
    active: usize,
    book: TierBook,
    last_prefill_tps: f64,
}

fn run(
    options: ChatOptions,
    commands: Receiver<UserCommand>,
    events: &Sender<EngineEvent>,
    interrupt: &Interrupt,
) -> Result<()> {
    let catalog = SessionCatalog::open(&options.paths)?;
    let warm = Arc::new(WarmPool::new(options.tiers.warm_budget));
    // Prefetch: the named session's pages start loading into RAM while the model loads.
    if let Some(name) = &options.session {
        if let Ok(m) = catalog.read_manifest(name) {
            warm.prefetch(catalog.store().clone(), m.restore_objects().collect());
        }
    }
    crate::models::validate(&options.model)?;
    let size = std::fs::metadata(&options.model.path)
        .map(|m| m.len())
        .unwrap_or(0);
    let _ = events.send(EngineEvent::Progress {
        kind: ProgressKind::LoadModel,
        done: 0,
        total: size,
        rate: 0.0,
    });
    let started = Instant::now();
    let mut model = Model::load(&options.model.path, options.engine.gpu_layers)
        .with_context(|| format!("loading {}", options.model.path.display()))?;
    if let Some(spec) = &options.chat_template {
        model.set_chat_template(spec)?;
    }
    let _ = events.send(EngineEvent::Progress {
        kind: ProgressKind::LoadModel,
        done: size,
        total: size,
        rate: size as f64 / started.elapsed().as_secs_f64().max(1e-9),
    });
    let hot_slots = options.tiers.hot_sessions.max(1);
    let mut ctx = Context::new(&model, &options.engine, DEFAULT_PAGE_TOKENS, hot_slots + 1)?;
    let _ = events.send(EngineEvent::Ready {
        model: model.facts().description.clone(),
        n_ctx: ctx.info().n_ctx,
        gpu: options.engine.gpu_layers > 0 && crate::engine::gpu_offload_supported(),
    });
    let sessions = SessionBinding::new(
        &catalog,
        &options.model.path,
        &model,
        &ctx,
        options.engine.clone(),
    )?
    .with_warm_pool(warm.clone());
    let mut engine = Engine {
        options: &options,
        model: &model,
        catalog: &catalog,
        sessions,
        warm,
        events,
        interrupt,
        hot: Vec::new(),
        active: 0,
        book: TierBook::new(),
        last_prefill_tps: 0.0,
    };
    match options.session.clone() {
        Some(name) => engine.switch(&mut ctx, &name)?,
        None => engine.open_unsaved(&mut ctx),
    }
    engine.send_memory(&ctx);
    engine.send_sessions();
    loop {
        // Once quitting, commands already queued still run (a message sent just before the
        // quit is kept; its turn stops before decoding), then the engine leaves without
        // waiting for a Quit that a vanished front end may never send.
        let next = if interrupt.quitting() {
            commands.try_recv().map_err(|e| match e {
                TryRecvError::Empty | TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            })
        } else {
            commands.recv_timeout(Duration::from_secs(1))
        };
        match next {
            Ok(UserCommand::Quit) | Err(RecvTimeoutError::Disconnected) => break,
            Ok(command) => {
                if let Err(e) = engine.handle(&mut ctx, command) {
                    let _ = events.send(EngineEvent::Error(crate::exit::one_line(&e)));
                    // A failed switch may have emptied the context: keep a conversation open.
                    if engine.hot.is_empty() {
                        engine.open_unsaved(&mut ctx);
                    }
                    engine.active = engine.active.min(engine.hot.len() - 1);
                }
                engine.send_memory(&ctx);
                // Every command ends with exactly one Context event: front ends wait for it.
                engine.send_context();
            }
            Err(RecvTimeoutError::Timeout) => {
                engine.idle(&mut ctx);
                engine.send_memory(&ctx);
            }
        }
    }
    engine.save_all(&mut ctx);
    Ok(())
}

impl<'c, 'm> Engine<'c, 'm, '_> {
    fn send(&self, event: EngineEvent) {
        let _ = self.events.send(event);
    }

    fn handle(&mut self, ctx: &mut Context<'m>, command: UserCommand) -> Result<()> {
        match command {
            UserCommand::Send(text) => self.turn(ctx, &text),
            UserCommand::Stop => Ok(()),
            UserCommand::Save => self.save_active(ctx),
            UserCommand::Fork(name) => self.fork(ctx, &name),
            UserCommand::Switch(name) => self.switch(ctx, &name),
            UserCommand::ListSessions => {
                self.send_sessions();
                Ok(())
            }
            UserCommand::Reset => {
                let open = &mut self.hot[self.active];
                open.conversation.reset(ctx);
                self.autosave(ctx)
            }
            UserCommand::Quit => Ok(()),
        }
    }

    /// An unsaved conversation in sequence 0.
    fn open_unsaved(&mut self, _ctx: &mut Context<'m>) {
        let conversation = Conversation::new(self.model, false, self.options.system.as_deref());
        self.hot.push(Open {
            name: None,
            live: None,
            conversation,
            seq: 0,
            last_used: Instant::now(),
        });
        self.active = 0;
        self.send(EngineEvent::Switched {
            session: String::new(),
            history: Vec::new(),
        });
    }

    fn free_seq(&self) -> Option<i32> {
        let slots = self.options.tiers.hot_sessions.max(1) as i32;
        (0..slots).find(|s| self.hot.iter().all(|o| o.seq != *s))
    }

    /// Makes `name` the active session: instant when it is hot, else restored from the warm
    /// or cold tier (or created).
    fn switch(&mut self, ctx: &mut Context<'m>, name: &str) -> Result<()> {
        crate::session::catalog::validate_name(name)?;
        if let Some(i) = self
            .hot
            .iter()
            .position(|o| o.name.as_deref() == Some(name))
        {
            self.active = i;
            self.hot[i].last_used = Instant::now();
            let tokens = self.hot[i].conversation.seq.kv_len();
            self.book.hits.hot += tokens as u64;
            self.send(EngineEvent::Restored {
                session: name.to_string(),
                tokens,
                ms: 0.0,
                from: Tier::Hot,
            });
            self.send_switched();
            return Ok(());
        }
        // Lock and read the session before anything leaves the context, so a session in use
        // elsewhere or unreadable changes nothing here.
        let (lock, manifest) = self.catalog.lock_and_read(name)?;
        // An unsaved conversation lives only while it is active (`/fork NAME` keeps one).
        if let Some(i) = self.hot.iter().position(|o| o.live.is_none()) {
            let open = self.hot.remove(i);
            ctx.clear_seq(open.seq);
            if !open.conversation.seq.is_empty() {
                self.send(EngineEvent::Info(
                    "the unsaved conversation was dropped (/fork NAME keeps one)".into(),
                ));
            }
            self.active = 0;
        }
        while self.free_seq().is_none() {
            self.demote_lru(ctx, None)?;
        }
        let seq = self.free_seq().context("no free sequence")?;
        let mut live =
            self.sessions
                .open(name, lock, manifest.clone(), self.options.sampling.clone());
        live.set_slot(Slot {
            seq,
            scratch: self.options.tiers.hot_sessions.max(1) as i32,
            exclusive: self.hot.is_empty(),
        });
        let before = self.warm.stats();
        let started = Instant::now();
        let conversation = match &manifest {
            Some(m) => {
                let (seq_log, report) = live.restore(ctx)?;
                for w in &report.warnings {
                    self.send(EngineEvent::Info(w.clone()));
                }
                let after = self.warm.stats();
                let (hits, loads) = (after.hits - before.hits, after.loads - before.loads);
                let from = if loads > 0 {
                    Tier::Cold
                } else if hits > 0 {
                    Tier::Warm
                } else {
                    Tier::Prefill
                };
                let restored = report.restored_tokens as u64;
                let warm_share = (restored * hits).checked_div(hits + loads).unwrap_or(0);
                self.book.hits.warm += warm_share;
                self.book.hits.cold += restored - warm_share;
                let ms = started.elapsed().as_secs_f64() * 1e3;
                self.book.last_move = Some(format!(
                    "{name}: {} tokens promoted {}→hot in {ms:.0} ms",
                    thousands(report.restored_tokens as u64),
                    from.as_str()
                ));
                self.book.warm_sessions.retain(|s| s != name);
                self.send(EngineEvent::Restored {
                    session: name.to_string(),
                    tokens: report.restored_tokens,
                    ms,
                    from,
                });
                Conversation::resumed(self.model, m, seq_log)
            }
            None => Conversation::new(self.model, false, self.options.system.as_deref()),
        };
        let mut conversation = conversation;
        conversation.seq = std::mem::take(&mut conversation.seq).in_seq(seq);
        self.hot.push(Open {
            name: Some(name.to_string()),
            live: Some(live),
            conversation,
            seq,
            last_used: Instant::now(),
        });
        self.active = self.hot.len() - 1;
        self.send_switched();
        self.send_sessions();
        Ok(())
    }

    /// Moves the least recently used hot session (not `keep`, not the active one unless it
    /// is the only one) out of the context: saved, its cells released, its pages left warm.
    fn demote_lru(&mut self, ctx: &mut Context<'m>, keep: Option<usize>) -> Result<()> {
        let victim = policy::demotion_victim(&self.policy_view(), self.active, keep)
            .context("no session can leave the context")?;
        self.demote(ctx, victim)
    }

    /// The hot sessions as the tier policy sees them.
    fn policy_view(&self) -> Vec<HotSession> {
        self.hot
            .iter()
            .map(|o| HotSession {
                last_used: o.last_used,
                saved: o.live.is_some(),
            })
            .collect()
    }

    fn demote(&mut self, ctx: &mut Context<'m>, index: usize) -> Result<()> {
        let started = Instant::now();
        let mut open = self.hot.remove(index);
        if index < self.active || (index == self.active && self.active > 0) {
            self.active = self.active.saturating_sub(1);
        }
        let tokens = open.conversation.seq.kv_len();
        if let Some(live) = &mut open.live {
            live.save(ctx, &open.conversation.seq, open.conversation.state())?;
            self.book.cold_changed();
            // Demotion writes only what the lower tier lacks: pages already on disk are read
            // back into RAM in the background, off the token path.
            if let Some(m) = live.saved() {
                self.warm
                    .prefetch(self.catalog.store().clone(), m.restore_objects().collect());
            }
        }
        ctx.clear_seq(open.seq);
        if let Some(name) = &open.name {
            self.book.warm_sessions.push(name.clone());
            self.book.last_move = Some(format!(
                "{name}: {} tokens demoted hot→warm in {:.0} ms",
                thousands(tokens as u64),
                started.elapsed().as_secs_f64() * 1e3
            ));
        }
        Ok(())
    }

    fn turn(&mut self, ctx: &mut Context<'m>, text: &str) -> Result<()> {
        let n_ctx = ctx.info().n_ctx as usize;
        let active = self.active;
        let note = self.hot[active]
            .conversation
            .add_user(ctx, text, self.options.overflow)?;
        if let Some(note) = note {
            self.send(EngineEvent::Info(note));
        }
        // Demand eviction: other hot sessions leave when the active one needs their cells.
        let needed = self.hot[active].conversation.seq.len() + 64;
        while self.hot.len() > 1
            && self
                .hot
                .iter()
                .map(|o| o.conversation.seq.kv_len())
                .sum::<usize>()
                + needed
                - self.hot[self.active].conversation.seq.kv_len()
                > n_ctx
        {
            let keep = self.active;
            self.demote_lru(ctx, Some(keep))?;
        }
        let active = self.active;
        let open = &mut self.hot[active];
        open.last_used = Instant::now();
        if let Some(live) = &mut open.live {
            let mut reuse = live.reuse_prefix(ctx, &mut open.conversation.seq)?;
            if reuse.restored_tokens > 0 {
                self.book.hits.cold += reuse.restored_tokens as u64;
            }
            reuse.warnings.clear();
        }
        let room = n_ctx.saturating_sub(open.conversation.seq.len());
        let limit = self.options.max_tokens.unwrap_or(DEFAULT_CHAT_MAX_TOKENS) as usize;
        let options = GenerateOptions {
            max_tokens: limit.min(room),
            logprobs: None,
        };
        let mut sampler = Sampler::new(
            self.model,
            &self.options.sampling,
            open.conversation.seq.tokens(),
        );
        let cancel = self.interrupt.begin_turn();
        let others = self
            .hot
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != active)
            .fold(OtherHot::default(), |acc, (_, o)| OtherHot {
                tokens: acc.tokens + o.conversation.seq.kv_len() as u64,
                bytes: acc.bytes + ctx.state_size(o.seq) as u64,
            });
        let page_tokens = ctx.info().page_tokens as u64;
        let open = &mut self.hot[active];
        let mut progress = TurnEvents::new(self.events, cancel, others, page_tokens);
        let events = self.events;
        let mut emit = |piece: &str| -> std::io::Result<()> {
            let _ = events.send(EngineEvent::Token(piece.to_string()));
            Ok(())
        };
        let result = match &mut open.live {
            Some(live) => {
                let mut observer = SessionObserver {
                    session: live,
                    inner: &mut progress,
                };
                open.conversation.seq.generate(
                    ctx,
                    &mut sampler,
                    &options,
                    cancel,
                    &mut observer,
                    &mut emit,
                )
            }
            None => open.conversation.seq.generate(
                ctx,
                &mut sampler,
                &options,
                cancel,
                &mut progress,
                &mut emit,
            ),
        };
        let generated = result?;
        let interrupted = generated.stop == StopReason::Cancelled;
        open.conversation.add_assistant(generated.text.clone());
        if let Some(live) = &mut open.live {
            live.set_interrupted(interrupted);
        }
        let rate = |n: usize, d: Duration| n as f64 / d.as_secs_f64().max(1e-9);
        self.book.hits.prefill += generated.prefilled as u64;
        self.last_prefill_tps = rate(generated.prefilled, generated.prefill_time);
        self.send(EngineEvent::TurnDone {
            prefilled: generated.prefilled,
            prefill_tokens_per_s: self.last_prefill_tps,
            generated: generated.tokens.len(),
            decode_tokens_per_s: rate(generated.tokens.len(), generated.decode_time),
            stopped: generated.stop == StopReason::Cancelled,
        });
        match generated.stop {
            StopReason::ContextFull => self.send(EngineEvent::Info(
                "the context is full; /reset to start over".into(),
            )),
            StopReason::MaxTokens if self.options.max_tokens.is_none() => {
                self.send(EngineEvent::Info(format!(
                    "the reply reached {DEFAULT_CHAT_MAX_TOKENS} tokens, the default limit; \
                     -n N sets another"
                )))
            }
            _ => {}
        }
        self.autosave(ctx)?;
        self.send_sessions();
        Ok(())
    }

    /// Saves the active conversation if it is a session (after every turn).
    fn autosave(&mut self, ctx: &mut Context<'m>) -> Result<()> {
        if self.hot[self.active].live.is_some() {
            self.save_active(ctx)?;
        }
        Ok(())
    }

    fn save_active(&mut self, ctx: &mut Context<'m>) -> Result<()> {
        let active = self.active;
        let open = &mut self.hot[active];
        let Some(live) = &mut open.live else {
            self.send(EngineEvent::Info(
                "not a session: /fork NAME keeps this conversation as one".into(),
            ));
            return Ok(());
        };
        let report = live.save(ctx, &open.conversation.seq, open.conversation.state())?;
        self.book.cold_changed();
        let name = live.name.clone();
        for w in report.warnings {
            self.send(EngineEvent::Info(w));
        }
        self.send(EngineEvent::Saved {
            session: name,
            ms: report.save_ms,
            bytes: report.bytes_written,
        });
        self.enforce_cold_budget()
    }

    /// Past the cold budget, objects no session references go first; pages a session still
    /// needs are never dropped.
    fn enforce_cold_budget(&mut self) -> Result<()> {
        let Some(budget) = self.options.tiers.cold_budget else {
            return Ok(());
        };
        let (_, used) = self.catalog.store().usage()?;
        if used <= budget {
            return Ok(());
        }
        self.catalog.gc()?;
        self.book.cold_changed();
        let (_, used) = self.catalog.store().usage()?;
        if used > budget {
            self.send(EngineEvent::Error(format!(
                "the cold tier holds {} of pages sessions still need, over its {} budget; raise \
                 --cold-budget or remove sessions (`kvrun session rm`)",
                crate::format::human_bytes(used),
                crate::format::human_bytes(budget)
            )));
        }
        Ok(())
    }

    fn fork(&mut self, ctx: &mut Context<'m>, name: &str) -> Result<()> {
        crate::session::catalog::validate_name(name)?;
        let active = self.active;
        match self.hot[active].name.clone() {
            Some(_) => {
                self.save_active(ctx)?;
                // This process holds the source's lock, so copy its manifest here rather
                // than through `SessionCatalog::fork` (which takes both locks itself).
                let Some(mut manifest) = self.hot[active]
                    .live
                    .as_ref()
                    .and_then(|l| l.saved().cloned())
                else {
                    return Ok(());
                };
                let _lock = self.catalog.lock(name)?;
                if self.catalog.exists(name)? {
                    return Err(SessionError::Exists { name: name.into() }.into());
                }
                manifest.name = name.to_string();
                let _store = self.catalog.store().lock_shared()?;
                self.catalog.write_manifest(&manifest)?;
            }
            None => {
                // Keep the unsaved conversation under a name.
                let lock = self.catalog.lock(name)?;
                if self.catalog.exists(name)? {
                    return Err(SessionError::Exists { name: name.into() }.into());
                }
                let mut live = self
                    .sessions
                    .open(name, lock, None, self.options.sampling.clone());
                let open = &mut self.hot[active];
                live.set_slot(Slot {
                    seq: open.seq,
                    scratch: self.options.tiers.hot_sessions.max(1) as i32,
                    exclusive: false,
                });
                open.live = Some(live);
                open.name = Some(name.to_string());
                self.save_active(ctx)?;
                self.send_switched();
                self.send_sessions();
                return Ok(());
            }
        }
        self.send(EngineEvent::Info(format!("forked into '{name}'")));
        self.switch(ctx, name)
    }

    fn save_all(&mut self, ctx: &mut Context<'m>) {
        for i in 0..self.hot.len() {
            let open = &mut self.hot[i];
            if let Some(live) = &mut open.live {
                if let Err(e) = live.save(ctx, &open.conversation.seq, open.conversation.state()) {
                    // The front end may be gone (a lost terminal): the log has it too.
                    let text = format!(
                        "saving session '{}' failed (its previous save is intact): {}",
                        live.name,
                        crate::exit::one_line(&e)
                    );
                    tracing::error!("{text}");
                    let _ = self.events.send(EngineEvent::Error(text));
                }
            }
        }
    }

    /// Idle timeouts: hot sessions other than the active one leave the context after
    /// `hot_idle`; pages unused for `warm_idle` leave RAM.
    fn idle(&mut self, ctx: &mut Context<'m>) {
        if let Some(idle) = self.options.tiers.hot_idle {
            while let Some(i) =
                policy::idle_victim(&self.policy_view(), self.active, idle, Instant::now())
            {
                if let Err(e) = self.demote(ctx, i) {
                    self.send(EngineEvent::Error(format!("{e:#}")));
                    break;
                }
                self.send_sessions();
            }
        }
        if let Some(idle) = self.options.tiers.warm_idle {
            if self.warm.evict_idle(idle) > 0 {
                self.book.warm_sessions.clear();
            }
        }
    }
}
