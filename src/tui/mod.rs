//! The full-screen chat TUI (`kvrun chat` on a terminal).
//!
//! The shape follows gitui and the ratatui component template: every input (keys, pastes,
//! the clock, chat events) becomes an [`Action`]; [`App::update`] is the only code that
//! changes state; `view` draws from `&App`. The loop, [`run_loop`], is generic over the
//! ratatui backend and the input source, so the tests run it on a `TestBackend` with
//! synthetic events, and [`run_terminal`] runs it on the real terminal.
//!
//! The chat thread is a worker thread elsewhere: it sends [`ChatEvent`]s and receives
//! [`UserCommand`]s (see [`crate::chat::protocol`]). Nothing here blocks on it.

mod action;
mod app;
mod input;
mod keys;
mod options;
mod terminal;
mod view;

#[cfg(test)]
mod tests;

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::time::{Duration, Instant};

use crossterm::event::Event;
use ratatui::backend::Backend;
use ratatui::Terminal;

use crate::chat::protocol::{ChatEvent, UserCommand};

pub use action::{Action, Effect};
pub use app::{App, Focus};
pub use options::TuiOptions;
pub use terminal::run_terminal;
pub use view::draw;

/// Redraw no more often than this while tokens stream in (about 33 frames a second)...
const FRAME: Duration = Duration::from_millis(30);
/// ...and at least this often, so the clock-driven parts ("3m ago") stay true.
const MAX_IDLE: Duration = Duration::from_secs(1);
/// After Quit, how long to wait for the chat thread's Exited (it saves the session first).
const QUIT_TIMEOUT: Duration = Duration::from_secs(5);

/// A new app whose scrolling measures the screen with the real view.
pub fn new_app(options: TuiOptions) -> App {
    App::new(options, view::viewport)
}

/// One thing from outside the TUI other than the chat thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    Terminal(Event),
    /// SIGTERM/SIGHUP/SIGINT arrived: leave cleanly (the chat thread saves first).
    Terminate,
}

/// Where terminal input and the wall clock come from: crossterm on a real terminal, a
/// channel in tests.
pub trait InputSource {
    /// The next input, waiting at most `timeout`; None if nothing came.
    fn next_input(&mut self, timeout: Duration) -> anyhow::Result<Option<Input>>;

    /// Seconds since the Unix epoch, for the sessions list's "3m ago".
    fn now_unix(&self) -> u64 {
        crate::clock::unix_now()
    }
}

/// Synthetic terminal events, for tests and for driving the TUI from another thread.
impl InputSource for Receiver<Event> {
    fn next_input(&mut self, timeout: Duration) -> anyhow::Result<Option<Input>> {
        match self.recv_timeout(timeout) {
            Ok(event) => Ok(Some(Input::Terminal(event))),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            // No more input will come; keep waiting out the timeout so the loop still
            // paces itself on chat events (and the Quit timeout).
            Err(RecvTimeoutError::Disconnected) => {
                std::thread::sleep(timeout);
                Ok(None)
            }
        }
    }
}

/// Runs the TUI on any backend until the chat thread exits (after Quit), the Quit timeout
/// passes, or the user insists (Ctrl-C while quitting).
pub fn run_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    app: &mut App,
    inputs: &mut impl InputSource,
    events: &Receiver<ChatEvent>,
    commands: &Sender<UserCommand>,
) -> anyhow::Result<()> {
    let size = terminal.size()?;
    app.update(Action::Resize(size.width, size.height));
    let mut last_draw: Option<Instant> = None;
    let mut dirty = true;
    let mut quit_sent: Option<Instant> = None;
    let mut clock = 0;

    loop {
        dirty |= drain_chat(app, events);
        let now_unix = inputs.now_unix();
        if now_unix != clock {
            clock = now_unix;
            app.update(Action::Tick { now_unix });
        }
        if app.should_exit() || quit_sent.is_some_and(|t| t.elapsed() >= QUIT_TIMEOUT) {
            return Ok(());
        }

        let since_draw = last_draw.map(|t| t.elapsed());
        let due = match since_draw {
            None => true,
            Some(since) => (dirty && since >= FRAME) || since >= MAX_IDLE,
        };
        if due {
            terminal.draw(|frame| view::draw(frame, app))?;
            last_draw = Some(Instant::now());
            dirty = false;
        }

        // Wait for input only until the next frame is due, so chat events that arrive
        // meanwhile are drawn within a frame.
        let wait = match (dirty, since_draw) {
            (true, Some(since)) if !due => FRAME.saturating_sub(since),
            _ => FRAME,
        }
        .max(Duration::from_millis(1));
        let Some(input) = inputs.next_input(wait)? else {
            continue;
        };
        // Chat events that came before this key are applied before it (a Ctrl-C after
        // the reply finished means "quit", not "stop").
        drain_chat(app, events);
        let effect = match input {
            Input::Terminal(event) => keys::handle_event(app, event, Instant::now()),
            Input::Terminate => app.update(Action::Terminate),
        };
        dirty = true;
        match effect {
            Some(Effect::Command(command)) => {
                let quitting = command == UserCommand::Quit;
                if quitting {
                    quit_sent = Some(Instant::now());
                }
                if commands.send(command).is_err() {
                    // The chat thread is gone; there is nothing left to wait for.
                    app.update(Action::Chat(ChatEvent::Exited));
                }
            }
            Some(Effect::ClearScreen) => terminal.clear()?,
            None => {}
        }
    }
}

/// Applies every chat event waiting now; a token stream never queues behind the screen.
/// Returns whether there were any.
fn drain_chat(app: &mut App, events: &Receiver<ChatEvent>) -> bool {
    let mut any = false;
    loop {
        match events.try_recv() {
            Ok(event) => {
                app.update(Action::Chat(event));
                any = true;
            }
            Err(TryRecvError::Empty) => return any,
            Err(TryRecvError::Disconnected) => {
                // The chat thread thread ended (or panicked) without saying Exited.
                app.update(Action::Chat(ChatEvent::Exited));
                return true;
            }
        }
    }
}
