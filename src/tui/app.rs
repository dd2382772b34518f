//! The TUI's state and the one function that changes it, [`App::update`]. Drawing (in
//! `view/`) only reads this.

use std::time::{Duration, Instant};

use super::action::{Action, Effect};
use super::input::InputEditor;
use super::options::TuiOptions;
use crate::chat::protocol::{
    ChatEvent, MemorySnapshot, ProgressKind, SessionRow, ShownMessage, Tier, UserCommand,
};
use crate::chat::slash::{self, Slash};

/// Two Ctrl-C presses closer than this quit, even while a reply is still being stopped.
const DOUBLE_INTERRUPT: Duration = Duration::from_millis(1000);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Input,
    Conversation,
    Sessions,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    System,
    /// A chat thread error, shown inline so it is seen where the user is looking.
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// The reply was cut short by Ctrl-C.
    pub stopped: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TurnStats {
    pub prefill_tokens_per_s: f64,
    pub decode_tokens_per_s: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RestoreInfo {
    pub ms: f64,
    pub tokens: usize,
    pub from: Tier,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    pub kind: ProgressKind,
    pub done: u64,
    pub total: u64,
    pub rate: f64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub text: String,
    pub error: bool,
}

/// Everything the screen shows. Fields are read by the views; only `update` writes them.
#[derive(Debug, Clone)]
pub struct App {
    pub(crate) title: String,
    pub(crate) model: Option<String>,
    pub(crate) gpu: Option<bool>,
    pub(crate) session: Option<String>,
    pub(crate) messages: Vec<Message>,
    pub(crate) input: InputEditor,
    pub(crate) focus: Focus,
    pub(crate) help: bool,
    pub(crate) help_scroll: u16,
    /// The top row of the conversation when the user has scrolled; None follows the tail, so
    /// streamed tokens stay in view, while a pinned row keeps still as text arrives below.
    pub(crate) scroll: Option<usize>,
    pub(crate) memory: Option<MemorySnapshot>,
    pub(crate) sessions: Vec<SessionRow>,
    pub(crate) selected: usize,
    pub(crate) context: Option<(usize, u32)>,
    pub(crate) last_turn: Option<TurnStats>,
    pub(crate) last_restore: Option<RestoreInfo>,
    pub(crate) last_save_ms: Option<f64>,
    pub(crate) progress: Option<Progress>,
    pub(crate) note: Option<Note>,
    pub(crate) generating: bool,
    /// The last message is a reply still receiving tokens.
    reply_open: bool,
    pub(crate) quitting: bool,
    /// Chat thread errors after Quit was sent (a failed final save).
    quit_errors: Vec<String>,
    exited: bool,
    exit_now: bool,
    last_interrupt: Option<Instant>,
    pub(crate) size: (u16, u16),
    pub(crate) now_unix: u64,
    /// A monitor: nothing is typed, so focus never rests on the (absent) input box.
    pub(crate) read_only: bool,
    /// Asks the view what scrolling needs to know about the screen.
    geometry: Geometry,
}

/// What scrolling needs to know about the screen: the rows the conversation shows, the rows
/// it has in all, and how far the help overlay can scroll.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Viewport {
    pub conversation_rows: usize,
    pub conversation_total: usize,
    pub help_max_scroll: u16,
}

/// The view's measure of the screen for an app ([`crate::tui::new_app`] passes the real one).
/// App asks through this function instead of naming the view, so that the view can read App
/// and data still flows one way.
pub type Geometry = fn(&App) -> Viewport;

impl App {
    pub fn new(options: TuiOptions, geometry: Geometry) -> Self {
        App {
            geometry,
            title: options.title,
            model: None,
            gpu: None,
            session: options.session,
            messages: Vec::new(),
            input: InputEditor::default(),
            focus: if options.read_only {
                Focus::Sessions
            } else {
                Focus::Input
            },
            help: false,
            help_scroll: 0,
            scroll: None,
            memory: None,
            sessions: Vec::new(),
            selected: 0,
            context: None,
            last_turn: None,
            last_restore: None,
            last_save_ms: None,
            progress: None,
            note: None,
            generating: false,
            reply_open: false,
            quitting: false,
            quit_errors: Vec::new(),
            exited: false,
            exit_now: false,
            last_interrupt: None,
            size: (80, 24),
            now_unix: 0,
            read_only: options.read_only,
        }
    }

    pub fn focus(&self) -> Focus {
        self.focus
    }

    pub fn help_open(&self) -> bool {
        self.help
    }

    pub fn input_is_empty(&self) -> bool {
        self.input.is_empty()
    }

    /// Quit was sent to the chat thread; the loop waits for Exited (or a timeout).
    pub fn quitting(&self) -> bool {
        self.quitting
    }

    /// Chat thread errors that came after Quit was sent: the screen is about to go, so the
    /// caller prints them.
    pub fn errors_while_quitting(&self) -> &[String] {
        &self.quit_errors
    }

    /// The loop should end now: the chat thread has exited, or the user insisted.
    pub fn should_exit(&self) -> bool {
        self.exited || self.exit_now
    }

    /// The only place state changes.
    pub fn update(&mut self, action: Action) -> Option<Effect> {
        // Once Quit is sent the chat thread is saving: nothing typed now could be acted on.
        if self.quitting
            && !matches!(
                action,
                Action::Interrupt(_)
                    | Action::Chat(_)
                    | Action::Tick { .. }
                    | Action::Resize(..)
                    | Action::Redraw
                    | Action::Terminate
            )
        {
            return None;
        }
        if self.read_only && action.edits_the_message() {
            return None;
        }
        match action {
            Action::Insert(c) => self.edit(|e| e.insert_char(c)),
            Action::Paste(text) => {
                // A paste means "this goes in the message", whichever pane had focus.
                self.focus = Focus::Input;
                self.edit(|e| e.insert_str(&text))
            }
            Action::Newline => self.edit(|e| e.insert_char('\n')),
            Action::Backspace => self.edit(InputEditor::backspace),
            Action::Delete => self.edit(InputEditor::delete),
            Action::Left => self.edit(InputEditor::left),
            Action::Right => self.edit(InputEditor::right),
            Action::Home => self.edit(InputEditor::home),
            Action::End => self.edit(InputEditor::end),
            Action::DeleteWordBack => self.edit(InputEditor::delete_word_back),
            Action::ClearToLineStart => self.edit(InputEditor::clear_to_line_start),
            Action::InputUp => self.edit(InputEditor::up),
            Action::InputDown => self.edit(InputEditor::down),
            Action::Submit => return self.submit(),

            Action::FocusNext | Action::FocusPrev => {
                let order: &[Focus] = if self.read_only {
                    &[Focus::Conversation, Focus::Sessions]
                } else {
                    &[Focus::Input, Focus::Conversation, Focus::Sessions]
                };
                let i = order.iter().position(|f| *f == self.focus).unwrap_or(0);
                let step = if action == Action::FocusNext {
                    1
                } else {
                    order.len() - 1
                };
                self.focus = order[(i + step) % order.len()];
                if self.focus == Focus::Sessions {
                    // The list may be stale; the chat thread answers with a Sessions event.
                    return Some(Effect::Command(UserCommand::ListSessions));
                }
            }
            Action::ScrollUp(n) => self.scroll_by(-(n as isize)),
            Action::ScrollDown(n) => self.scroll_by(n as isize),
            Action::PageUp => self.scroll_by(-(self.page_rows() as isize)),
            Action::PageDown => self.scroll_by(self.page_rows() as isize),
            Action::ScrollTop => self.scroll = Some(0),
            Action::ScrollBottom => self.scroll = None,
            Action::SessionUp => self.selected = self.selected.saturating_sub(1),
            Action::SessionDown => {
                self.selected = (self.selected + 1).min(self.sessions.len().saturating_sub(1))
            }
            Action::SessionOpen => {
                let row = self.sessions.get(self.selected)?;
                if !self.read_only {
                    self.focus = Focus::Input;
                }
                return Some(Effect::Command(UserCommand::Switch(row.name().to_string())));
            }
            Action::RefreshSessions => return Some(Effect::Command(UserCommand::ListSessions)),
            Action::OpenHelp => self.open_help(),
            Action::Escape => {
                if self.help {
                    self.help = false;
                } else if !self.read_only {
                    self.focus = Focus::Input;
                }
            }

            Action::Interrupt(at) => return self.interrupt(at),
            Action::Redraw => return Some(Effect::ClearScreen),
            Action::Resize(w, h) => self.size = (w, h),
            Action::Tick { now_unix } => self.now_unix = now_unix,
            Action::Terminate => return self.quit(),
            Action::Chat(event) => self.chat_event(event),
        }
        None
    }

    /// Typing always lands in the input box, whichever pane had focus.
    fn edit(&mut self, f: impl FnOnce(&mut InputEditor)) {
        self.focus = Focus::Input;
        f(&mut self.input);
    }

    fn submit(&mut self) -> Option<Effect> {
        if self.input.text().trim().is_empty() {
            return None;
        }
        let text = self.input.take();
        let command = match slash::parse(&text) {
            Slash::Message(message) => {
                if self.generating {
                    // The chat thread handles one turn at a time; keep the text for later.
                    self.input.insert_str(&text);
                    self.set_note("still answering: Ctrl-C stops the reply", true);
                    return None;
                }
                self.messages.push(Message {
                    role: Role::User,
                    content: message.clone(),
                    stopped: false,
                });
                self.generating = true;
                self.reply_open = false;
                self.scroll = None;
                UserCommand::Send(message)
            }
            Slash::Command(command) => {
                if command == UserCommand::Reset {
                    self.messages.clear();
                    self.scroll = None;
                }
                if command == UserCommand::ListSessions {
                    self.focus = Focus::Sessions;
                }
                if command == UserCommand::Quit {
                    return self.quit();
                }
                command
            }
            Slash::Help => {
                self.open_help();
                return None;
            }
            Slash::Stats { .. } => {
                // The panel shows the tiers all the time; this puts the totals in one line.
                let line = self.memory.as_ref().map_or_else(
                    || "no figures from the chat thread yet".to_string(),
                    MemorySnapshot::summary,
                );
                self.set_note(&line, false);
                return None;
            }
            Slash::Invalid(why) => {
                self.set_note(&why, true);
                return None;
            }
        };
        Some(Effect::Command(command))
    }

    /// Ctrl-C: stop a reply; at rest, clear the input, then quit; twice quickly always quits.
    fn interrupt(&mut self, at: Instant) -> Option<Effect> {
        let quick = self
            .last_interrupt
            .is_some_and(|last| at.saturating_duration_since(last) < DOUBLE_INTERRUPT);
        self.last_interrupt = Some(at);
        if self.quitting {
            // The chat thread has not answered Quit and the user insists.
            self.exit_now = true;
            return None;
        }
        if self.generating && !quick {
            self.set_note("stopping… (Ctrl-C again to quit)", false);
            return Some(Effect::Command(UserCommand::Stop));
        }
        if !self.input.is_empty() && !quick {
            self.input.clear();
            self.set_note("input cleared (Ctrl-C again to quit)", false);
            return None;
        }
        self.quit()
    }

    fn quit(&mut self) -> Option<Effect> {
        if self.quitting {
            return None;
        }
        self.quitting = true;
        self.help = false;
        self.set_note("saving and quitting…", false);
        Some(Effect::Command(UserCommand::Quit))
    }

    fn chat_event(&mut self, event: ChatEvent) {
        match event {
            ChatEvent::Ready { model, n_ctx, gpu } => {
                self.model = Some(model);
                self.gpu = Some(gpu);
                self.context.get_or_insert((0, n_ctx)).1 = n_ctx;
                self.end_progress(ProgressKind::LoadModel);
            }
            ChatEvent::Progress {
                kind,
                done,
                total,
                rate,
            } => {
                self.progress = (done < total).then_some(Progress {
                    kind,
                    done,
                    total,
                    rate,
                });
            }
            ChatEvent::Token(piece) => {
                self.end_progress(ProgressKind::Prefill);
                self.generating = true;
                match self.messages.last_mut() {
                    Some(m) if m.role == Role::Assistant && self.reply_open => {
                        m.content.push_str(&piece)
                    }
                    _ => {
                        self.reply_open = true;
                        self.messages.push(Message {
                            role: Role::Assistant,
                            content: piece,
                            stopped: false,
                        })
                    }
                }
            }
            ChatEvent::TurnDone {
                prefill_tokens_per_s,
                decode_tokens_per_s,
                stopped,
                ..
            } => {
                if stopped {
                    if let Some(m) = self
                        .messages
                        .last_mut()
                        .filter(|m| m.role == Role::Assistant)
                    {
                        m.stopped = true;
                    }
                    // Replaces "stopping…", which would otherwise outlive the reply.
                    self.set_note("reply stopped", false);
                }
                self.generating = false;
                self.reply_open = false;
                self.end_progress(ProgressKind::Prefill);
                self.last_turn = Some(TurnStats {
                    prefill_tokens_per_s,
                    decode_tokens_per_s,
                });
            }
            ChatEvent::Context { used, n_ctx } => {
                self.context = Some((used, n_ctx));
                // The chat thread ends every command with one Context event, failed turns
                // included (they send Error, not TurnDone).
                self.generating = false;
                self.reply_open = false;
            }
            ChatEvent::Saved { session, ms, bytes } => {
                self.last_save_ms = Some(ms);
                let size = crate::format::human_bytes(bytes);
                self.set_note(&format!("saved '{session}' ({size}) in {ms:.0} ms"), false);
            }
            ChatEvent::Restored {
                session,
                tokens,
                ms,
                from,
            } => {
                self.end_progress(ProgressKind::Restore);
                self.last_restore = Some(RestoreInfo { ms, tokens, from });
                self.set_note(
                    &format!(
                        "restored '{session}': {tokens} tokens from {} in {ms:.0} ms",
                        from.as_str()
                    ),
                    false,
                );
            }
            ChatEvent::Switched { session, history } => {
                self.session = Some(session);
                self.messages = history.into_iter().map(Message::from).collect();
                self.scroll = None;
                self.generating = false;
                self.reply_open = false;
                // A monitor's selection is the user's: "active" there means decoding now.
                if let (false, Some(i)) =
                    (self.read_only, self.sessions.iter().position(|r| r.active))
                {
                    self.selected = i;
                }
            }
            ChatEvent::Memory(snapshot) => self.memory = Some(*snapshot),
            ChatEvent::Live {
                used,
                hot_cells,
                hot_bytes,
                hot_pages,
            } => {
                if let Some((u, _)) = &mut self.context {
                    *u = used;
                }
                if let Some(m) = &mut self.memory {
                    m.hot_cells_used = hot_cells;
                    m.hot.used_bytes = hot_bytes;
                    m.hot.pages = hot_pages;
                }
            }
            ChatEvent::Sessions(rows) => {
                // Keep the cursor on the same session when the list is refreshed.
                let selected = self
                    .sessions
                    .get(self.selected)
                    .map(|r| r.name().to_string());
                self.selected = selected
                    .and_then(|name| rows.iter().position(|r| r.name() == name))
                    .or_else(|| rows.iter().position(|r| r.active))
                    .unwrap_or(0);
                self.sessions = rows;
            }
            ChatEvent::Error(text) => {
                if self.quitting {
                    self.quit_errors.push(text.clone());
                }
                self.progress = None;
                // In the conversation where the user is looking, unless a reply is still
                // streaming: the error would split it in two. The footer shows it either way.
                if !self.reply_open {
                    self.generating = false;
                    self.messages.push(Message {
                        role: Role::Error,
                        content: text.clone(),
                        stopped: false,
                    });
                }
                self.set_note(&text, true);
            }
            ChatEvent::Info(text) => self.set_note(&text, false),
            ChatEvent::Exited => self.exited = true,
        }
    }

    fn end_progress(&mut self, kind: ProgressKind) {
        if self.progress.is_some_and(|p| p.kind == kind) {
            self.progress = None;
        }
    }

    fn set_note(&mut self, text: &str, error: bool) {
        self.note = Some(Note {
            text: text.to_string(),
            error,
        });
    }

    /// Rows of conversation the screen shows now, for paging.
    fn page_rows(&self) -> usize {
        let rows = (self.geometry)(self).conversation_rows;
        rows.saturating_sub(2).max(1)
    }

    fn open_help(&mut self) {
        self.help = true;
        self.help_scroll = 0;
    }

    /// Scrolls the help overlay while it is open, else the conversation.
    fn scroll_by(&mut self, delta: isize) {
        let viewport = (self.geometry)(self);
        if self.help {
            let max = viewport.help_max_scroll;
            self.help_scroll = (self.help_scroll as isize + delta).clamp(0, max as isize) as u16;
            return;
        }
        let (height, total) = (viewport.conversation_rows, viewport.conversation_total);
        let bottom = total.saturating_sub(height);
        let top = self.scroll.unwrap_or(bottom).min(bottom);
        let new_top = top.saturating_add_signed(delta).min(bottom);
        self.scroll = (new_top < bottom).then_some(new_top);
    }
}

impl From<ShownMessage> for Message {
    fn from(m: ShownMessage) -> Self {
        let role = match m.role.as_str() {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            _ => Role::System,
        };
        Message {
            role,
            content: m.content,
            stopped: false,
        }
    }
}
