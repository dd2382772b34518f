//! The chat front ends' side of the engine: a thread that keeps the active conversation
//! (its messages, rendered by the chat template into the token log) and turns each
//! [`UserCommand`] into requests to the service engine, the same engine `kvrun serve`
//! runs. The engine owns the context, the sessions and the tiers; this thread owns only
//! what the user sees: which session is active, its messages, and the events for the UI.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;

mod live;
mod model_switch;
mod reports;

use super::memory::TierBook;
use crate::chat::protocol::{ChatEvent, ProgressKind, Tier, UserCommand};
use crate::dialogue::Dialogue;
use crate::format::thousands;
use crate::interrupt::Interrupt;
use crate::llama::Model;
use crate::models::ModelChoice;
use crate::paths::Paths;
use crate::sequence::Sequence;
use crate::service::engine::{ContextSizing, ServiceOptions};
use crate::service::handle::{OpenSession, Opened, ServiceHandle};
use crate::service::protocol::{
    Ask, CancelToken, ConversationKey, FinishReason, Reply, Request, ServiceError, Transcript,
};
use crate::settings::{ContextOverflow, LlamaSettings, SamplingSettings, TierSettings};

/// The longest reply when `-n` is not given: a base model rarely emits an end token, and a
/// reply nobody stops must not run on until the context is full.
pub const DEFAULT_CHAT_MAX_TOKENS: u32 = 1024;

pub struct ChatOptions {
    pub paths: Paths,
    pub model: ModelChoice,
    pub llama: LlamaSettings,
    pub sampling: SamplingSettings,
    /// The session to start in (None: a new unnamed session, collected first under the
    /// cold budget; `/fork NAME` keeps it under a name).
    pub session: Option<String>,
    pub system: Option<String>,
    pub overflow: ContextOverflow,
    /// The longest reply (None: [`DEFAULT_CHAT_MAX_TOKENS`]).
    pub max_tokens: Option<u32>,
    pub tiers: TierSettings,
    /// `--chat-template` (or the config key): replaces the model's own template.
    pub chat_template: Option<String>,
    /// `--ctx-size auto`: the context holds the live tokens and grows with them.
    pub sizing: ContextSizing,
}

/// Starts the chat thread (which starts the engine). `interrupt` stops the reply being
/// generated (Ctrl-C) or everything (a quit); it is a flag rather than a command because
/// a reply is being generated when it matters. After a quit every session is saved and
/// the thread exits, whether or not the front end still sends commands. Fails only when
/// the operating system refuses a new thread.
pub fn spawn(
    options: ChatOptions,
    events: Sender<ChatEvent>,
    interrupt: Interrupt,
) -> std::io::Result<(Sender<UserCommand>, JoinHandle<()>)> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("kvrun-chat".into())
        .spawn(move || {
            if let Err(e) = run(options, rx, &events, &interrupt) {
                let _ = events.send(ChatEvent::Error(crate::format::one_line_of(e.as_ref())));
            }
            let _ = events.send(ChatEvent::Exited);
        })?;
    Ok((tx, handle))
}

/// The conversation the user sees, persisted as session `name`.
struct Active<'m> {
    name: String,
    conversation: Dialogue<'m>,
}

struct Chat<'m, 'x> {
    options: &'x ChatOptions,
    service: &'x ServiceHandle,
    model: &'m Model,
    n_ctx: usize,
    page_tokens: usize,
    events: &'x Sender<ChatEvent>,
    interrupt: &'x Interrupt,
    catalog: crate::session::catalog::SessionCatalog,
    active: Active<'m>,
    book: TierBook,
    /// The active session's last save failed: it is tried again on the way out.
    save_failed: bool,
    /// Set by `/model`: the chat leaves this model's engine for another's.
    leaving_for: Option<Carried>,
}

/// A conversation on its way to another model (`/model`).
struct Carried {
    model: ModelChoice,
    /// The new session, and the one it was forked from.
    session: String,
    from: String,
    messages: Vec<crate::llama::ChatMessage>,
}

/// Why a model's chat loop ended.
enum Leaving {
    Quit,
    /// `/model`: start the other model's engine and continue there.
    Model(Box<Carried>),
}

fn run(
    mut options: ChatOptions,
    commands: Receiver<UserCommand>,
    events: &Sender<ChatEvent>,
    interrupt: &Interrupt,
) -> Result<()> {
    let mut carried = None;
    loop {
        match run_model(&options, &commands, events, interrupt, carried.take())? {
            Leaving::Quit => return Ok(()),
            Leaving::Model(to) => {
                options.model = to.model.clone();
                options.session = Some(to.session.clone());
                carried = Some(*to);
            }
        }
    }
}

/// One model's engine and the chat on it, until a quit or a `/model`. `carried`: the
/// conversation a `/model` brought over (its new session is opened empty and its messages
/// rendered with this model's template).
fn run_model(
    options: &ChatOptions,
    commands: &Receiver<UserCommand>,
    events: &Sender<ChatEvent>,
    interrupt: &Interrupt,
    carried: Option<Carried>,
) -> Result<Leaving> {
    let catalog = crate::session::catalog::SessionCatalog::open(&options.paths)?;
    let size = std::fs::metadata(&options.model.path).map_or(0, |m| m.len());
    let _ = events.send(ChatEvent::Progress {
        kind: ProgressKind::LoadModel,
        done: 0,
        total: size,
        rate: 0.0,
    });
    let started = Instant::now();
    let (service, engine) = crate::service::engine::start(ServiceOptions {
        paths: options.paths.clone(),
        model: options.model.clone(),
        llama: options.llama.clone(),
        tiers: options.tiers.clone(),
        // The hot tier: one sequence per session kept in the context.
        parallel: options.tiers.hot_sessions.max(1) as usize,
        max_queue: 4,
        chat_template: options.chat_template.clone(),
        alias: None,
        warm: None,
        prefetch: options.session.clone(),
        // The active conversation stays hot however long the user is away.
        keep_latest_hot: true,
        sizing: options.sizing,
    })?;
    let (model, info) = match service.wait_until_ready(&engine) {
        Some(ready) => ready,
        None => {
            engine.join()?;
            anyhow::bail!("the engine stopped before the model was loaded");
        }
    };
    let _ = events.send(ChatEvent::Progress {
        kind: ProgressKind::LoadModel,
        done: size,
        total: size,
        rate: size as f64 / started.elapsed().as_secs_f64().max(1e-9),
    });
    let _ = events.send(ChatEvent::Ready {
        model: model.facts().description.clone(),
        n_ctx: info.n_ctx as u32,
        gpu: options.llama.gpu_layers > 0 && crate::llama::gpu_offload_supported(),
    });
    let first = OpenSession {
        name: options.session.clone(),
        sampling: options.sampling.clone(),
    };
    let result = (|| {
        let opened = service.open_blocking(first).map_err(anyhow::Error::from)?;
        let mut chat = Chat {
            options,
            service: &service,
            model: &model,
            n_ctx: info.n_ctx,
            page_tokens: info.page_tokens,
            events,
            interrupt,
            catalog,
            active: Active {
                name: String::new(),
                conversation: Dialogue::new(&model, false, None),
            },
            book: TierBook::new(),
            save_failed: false,
            leaving_for: None,
        };
        match carried {
            Some(carried) => chat.carry_in(opened, carried),
            None => chat.activate(opened),
        }
        chat.serve(commands);
        chat.save_on_the_way_out();
        Ok(chat
            .leaving_for
            .take()
            .map_or(Leaving::Quit, |to| Leaving::Model(Box::new(to))))
    })();
    service.shutdown();
    engine.join()?;
    result
}

impl<'m> Chat<'m, '_> {
    fn send(&self, event: ChatEvent) {
        let _ = self.events.send(event);
    }

    fn serve(&mut self, commands: &Receiver<UserCommand>) {
        self.send_memory();
        self.send_sessions();
        while self.leaving_for.is_none() {
            // Once quitting, commands already queued still run (a message sent just before
            // the quit is kept; its turn stops before decoding), then the chat leaves
            // without waiting for a Quit that a vanished front end may never send.
            let next = if self.interrupt.quitting() {
                commands.try_recv().map_err(|e| match e {
                    TryRecvError::Empty | TryRecvError::Disconnected => {
                        RecvTimeoutError::Disconnected
                    }
                })
            } else {
                commands.recv_timeout(Duration::from_secs(1))
            };
            match next {
                Ok(UserCommand::Quit) | Err(RecvTimeoutError::Disconnected) => break,
                Ok(command) => {
                    if let Err(e) = self.handle(command) {
                        self.send(ChatEvent::Error(e));
                    }
                    self.send_memory();
                    // Every command ends with exactly one Context event: front ends wait
                    // for it.
                    self.send_context();
                }
                Err(RecvTimeoutError::Timeout) => self.send_memory(),
            }
        }
    }

    fn handle(&mut self, command: UserCommand) -> Result<(), String> {
        match command {
            UserCommand::Send(text) => self.turn(&text),
            UserCommand::Stop | UserCommand::Quit => Ok(()),
            UserCommand::Save => self.save(),
            UserCommand::Fork(name) => self.fork(&name),
            UserCommand::Switch(name) => self.switch(&name),
            UserCommand::Model(model) => self.leave_for_model(&model),
            UserCommand::ListSessions => {
                self.send_sessions();
                Ok(())
            }
            UserCommand::Reset => {
                self.active.conversation.reset();
                let saved = self
                    .service
                    .reset_blocking(&self.active.name, self.transcript())
                    .map_err(|e| describe(&e))?;
                self.send_saved(saved);
                Ok(())
            }
        }
    }

    /// What the session records besides its log.
    fn transcript(&self) -> Transcript {
        let c = &self.active.conversation;
        Transcript {
            messages: c.messages.clone(),
            rendered_len: c.rendered_len,
            raw: c.raw,
            cache_miss: c.cache_miss.clone(),
        }
    }

    /// Makes an opened session the active conversation.
    fn activate(&mut self, opened: Opened) {
        let fresh = opened.log.is_empty() && opened.transcript.messages.is_empty();
        let conversation = if fresh {
            Dialogue::new(self.model, false, self.options.system.as_deref())
        } else {
            let t = opened.transcript;
            let restored = opened.cached.total();
            Dialogue::from_parts(
                self.model,
                (t.messages, t.rendered_len, t.raw),
                opened.template,
                Sequence::restored(opened.log, restored),
            )
        };
        for w in &opened.warnings {
            self.send(ChatEvent::Info(w.clone()));
        }
        let restored = opened.cached.total();
        if restored > 0 || !fresh {
            let from = if opened.cached.hot > 0 {
                Tier::Hot
            } else if opened.cached.cold > 0 {
                Tier::Cold
            } else if opened.cached.warm > 0 {
                Tier::Warm
            } else {
                Tier::Prefill
            };
            if from != Tier::Hot {
                // With the restore-or-recompute choice, e.g. "loaded (est. 40 ms vs
                // prefill 9000 ms)".
                let choice = opened
                    .decision
                    .map(|d| format!("; {}", d.describe()))
                    .unwrap_or_default();
                self.book.last_move = Some(format!(
                    "{}: {} tokens promoted {}→hot in {:.0} ms{choice}",
                    opened.session,
                    thousands(restored as u64),
                    from.as_str(),
                    opened.restore_ms
                ));
            }
            self.send(ChatEvent::Restored {
                session: opened.session.clone(),
                tokens: restored,
                ms: opened.restore_ms,
                from,
            });
        }
        self.active = Active {
            name: opened.session,
            conversation,
        };
        self.send_switched();
        self.send_sessions();
    }

    /// Makes `name` the active session: instant when it is hot, else restored from the warm
    /// or cold tier (or created). The session left stays open in the engine, hot until
    /// another needs its cells.
    fn switch(&mut self, name: &str) -> Result<(), String> {
        crate::session::name::validate_name(name).map_err(|e| e.to_string())?;
        let opened = self
            .service
            .open_blocking(OpenSession {
                name: Some(name.to_string()),
                sampling: self.options.sampling.clone(),
            })
            .map_err(|e| describe(&e))?;
        self.activate(opened);
        Ok(())
    }

    fn turn(&mut self, text: &str) -> Result<(), String> {
        let note = self
            .active
            .conversation
            .add_user(self.n_ctx, text, self.options.overflow)
            .map_err(|e| e.to_string())?;
        if let Some(note) = note {
            self.send(ChatEvent::Info(note));
        }
        let conversation = &self.active.conversation;
        let prompt = conversation.seq.tokens().to_vec();
        let room = self.n_ctx.saturating_sub(prompt.len());
        let limit = self.options.max_tokens.unwrap_or(DEFAULT_CHAT_MAX_TOKENS) as usize;
        let (replies_tx, mut replies) = tokio::sync::mpsc::unbounded_channel();
        self.interrupt.begin_turn();
        let request = Request {
            id: 0,
            ask: Ask::new(
                ConversationKey::Named(self.active.name.clone()),
                prompt,
                limit.min(room),
            )
            .with_sampling(self.options.sampling.clone())
            .with_template(conversation.template()),
            transcript: Some(self.transcript()),
            progress: true,
            cancel: CancelToken::watching(self.interrupt.stop_flag()),
            replies: replies_tx,
            received: Instant::now(),
            save_before_done: false,
        };
        let prompt_len = request.ask.prompt.len();
        if let Err(e) = self.service.submit(request) {
            self.resync();
            return Err(describe(&e));
        }
        let hot = self
            .service
            .stats_blocking()
            .ok()
            .map(|s| (s.hot_cells_used, s.hot.used));
        let own = self.active.conversation.seq.kv_len() as u64;
        let mut live = live::LiveFigures::new(hot, own, prompt_len, self.page_tokens);
        let mut text = String::new();
        let mut started_at = Instant::now();
        let usage = loop {
            match replies.blocking_recv() {
                Some(Reply::Started(_)) => started_at = Instant::now(),
                Some(Reply::Progress { done, total }) => {
                    let rate = done as f64 / started_at.elapsed().as_secs_f64().max(1e-9);
                    self.send(ChatEvent::Progress {
                        kind: ProgressKind::Prefill,
                        done: done as u64,
                        total: total as u64,
                        rate,
                    });
                }
                Some(Reply::Token(piece)) => {
                    if !piece.text.is_empty() {
                        text.push_str(&piece.text);
                        self.send(ChatEvent::Token(piece.text));
                    }
                    if let Some(event) = live.token() {
                        self.send(event);
                    }
                }
                Some(Reply::Done(usage)) => break usage,
                Some(Reply::Failed(e)) => {
                    self.resync();
                    return Err(describe(&e));
                }
                None => {
                    self.resync();
                    return Err("the engine stopped".into());
                }
            }
        };
        let conversation = &mut self.active.conversation;
        conversation.seq.append(&usage.tokens);
        conversation.add_assistant(text);
        let rate = |n: usize, d: Duration| n as f64 / d.as_secs_f64().max(1e-9);
        self.send(ChatEvent::TurnDone {
            prefilled: usage.prefilled,
            prefill_tokens_per_s: rate(usage.prefilled, usage.time_to_first_token),
            generated: usage.generated,
            decode_tokens_per_s: rate(usage.generated, usage.decode),
            stopped: usage.finish == FinishReason::Cancelled,
        });
        match usage.finish {
            FinishReason::ContextFull => self.send(ChatEvent::Info(
                "the context is full; /reset to start over".into(),
            )),
            FinishReason::MaxTokens if self.options.max_tokens.is_none() => {
                self.send(ChatEvent::Info(format!(
                    "the reply reached {DEFAULT_CHAT_MAX_TOKENS} tokens, the default limit; \
                     -n N sets another"
                )))
            }
            _ => {}
        }
        // The engine saved the log and the pages; this records the reply's message too.
        self.save()?;
        self.send_sessions();
        Ok(())
    }

    /// After a failed turn the engine's log is the truth: take it back.
    fn resync(&mut self) {
        let open = OpenSession {
            name: Some(self.active.name.clone()),
            sampling: self.options.sampling.clone(),
        };
        match self.service.open_blocking(open) {
            Ok(opened) => self.activate(opened),
            Err(e) => self.send(ChatEvent::Error(describe(&e))),
        }
    }

    fn save(&mut self) -> Result<(), String> {
        let result = self
            .service
            .save_blocking(&self.active.name, self.transcript());
        self.save_failed = result.is_err();
        self.send_saved(result.map_err(|e| describe(&e))?);
        Ok(())
    }

    /// Every reply was saved as it ended; a session whose last save failed (a full disk)
    /// gets one more try, and the front end hears if that fails too (the process then
    /// exits 1; the previous snapshot is intact, manifests are replaced whole).
    fn save_on_the_way_out(&mut self) {
        if self.save_failed {
            if let Err(e) = self.save() {
                let name = &self.active.name;
                self.send(ChatEvent::Error(format!(
                    "saving session '{name}' failed (its previous save is intact): {e}"
                )));
            }
        }
    }

    fn send_saved(&mut self, saved: crate::service::handle::Saved) {
        self.book.cold_changed();
        for w in saved.warnings {
            self.send(ChatEvent::Info(w));
        }
        self.send(ChatEvent::Saved {
            session: self.active.name.clone(),
            ms: saved.ms,
            bytes: saved.bytes,
        });
    }

    /// Copies the active session to a new one (their pages are shared) and continues there.
    fn fork(&mut self, name: &str) -> Result<(), String> {
        crate::session::name::validate_name(name).map_err(|e| e.to_string())?;
        self.save()?;
        self.service
            .fork_blocking(&self.active.name, name)
            .map_err(|e| describe(&e))?;
        self.send(ChatEvent::Info(format!("forked into '{name}'")));
        self.switch(name)
    }
}

/// A service error as the chat shows it: a session's own refusal reads best alone.
fn describe(e: &ServiceError) -> String {
    match e {
        ServiceError::SessionInUse { detail, .. } | ServiceError::Incompatible { detail, .. } => {
            detail.clone()
        }
        other => other.to_string(),
    }
}
