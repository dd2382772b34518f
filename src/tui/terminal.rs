//! The real terminal: raw mode and the alternate screen on the way in, and the way back out
//! on every exit path (normal quit, error, panic, SIGTERM/SIGHUP).

use std::io::{self, IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex, Once};
use std::thread::ThreadId;
use std::time::Duration;

use anyhow::Context;
use crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    KeyboardEnhancementFlags, PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, supports_keyboard_enhancement, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use crossterm::{cursor, execute};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

use super::{run_loop, Input, InputSource, TuiOptions};
use crate::chat::protocol::{ChatEvent, UserCommand};

/// The terminal is in TUI mode (raw, alternate screen); whoever restores it first clears this.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether the kitty keyboard flags were pushed (they must be popped, or the shell after us
/// receives escape codes for ordinary keys).
static KEYBOARD_PUSHED: AtomicBool = AtomicBool::new(false);
/// The thread running the TUI. A panic there restores the terminal; a panic on the chat thread's
/// thread does not (the TUI is still drawing, and sees the chat thread's channel close instead).
static UI_THREAD: Mutex<Option<ThreadId>> = Mutex::new(None);

/// Runs the TUI on the real terminal until quit. Chat events arrive on `events`;
/// commands go out on `commands`. Returns the chat thread errors that came while quitting (a
/// failed final save), which the screen no longer shows once it is restored.
pub fn run_terminal(
    options: TuiOptions,
    events: &Receiver<ChatEvent>,
    commands: Sender<UserCommand>,
) -> anyhow::Result<Vec<String>> {
    install_panic_hook();
    let terminate = Arc::new(AtomicBool::new(false));
    let signals = register_signals(&terminate)?;

    let result = (|| {
        let _guard = TerminalGuard::enter()?;
        let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))
            .context("starting the terminal UI")?;
        terminal.clear()?;
        let mut app = super::new_app(options);
        let mut inputs = CrosstermInput { terminate };
        run_loop(&mut terminal, &mut app, &mut inputs, events, &commands)?;
        Ok(app.errors_while_quitting().to_vec())
    })();

    for id in signals {
        signal_hook::low_level::unregister(id);
    }
    *UI_THREAD.lock().unwrap_or_else(|e| e.into_inner()) = None;
    result
}

/// Keys, mouse and pastes from crossterm, and the signal flag.
struct CrosstermInput {
    terminate: Arc<AtomicBool>,
}

impl InputSource for CrosstermInput {
    fn next_input(&mut self, timeout: Duration) -> anyhow::Result<Option<Input>> {
        if self.terminate.swap(false, Ordering::SeqCst) || !io::stdin().is_terminal() {
            return Ok(Some(Input::Terminate));
        }
        if event::poll(timeout).context("reading the terminal")? {
            return Ok(Some(Input::Terminal(
                event::read().context("reading the terminal")?,
            )));
        }
        Ok(None)
    }
}

/// SIGTERM and SIGHUP (and a SIGINT sent with kill: in raw mode Ctrl-C is a key, not a
/// signal) set a flag the loop reads, so the terminal is restored. Stopping the chat thread is
/// the caller's part (it watches the same signals), and so is ending the process when the
/// terminal is gone and this loop cannot return.
fn register_signals(flag: &Arc<AtomicBool>) -> anyhow::Result<Vec<signal_hook::SigId>> {
    let mut ids = Vec::new();
    for s in crate::interrupt::EXIT_SIGNALS {
        ids.push(
            signal_hook::flag::register(s, Arc::clone(flag))
                .with_context(|| format!("installing a handler for signal {s}"))?,
        );
    }
    Ok(ids)
}

/// Puts the terminal into TUI mode; dropping it puts it back, whatever happened in between.
struct TerminalGuard;

impl TerminalGuard {
    fn enter() -> anyhow::Result<Self> {
        *UI_THREAD.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::thread::current().id());
        // The guard exists before the first change, so a failure half-way still restores.
        ACTIVE.store(true, Ordering::SeqCst);
        let guard = TerminalGuard;
        enable_raw_mode().context("switching the terminal to raw mode")?;
        let mut out = io::stdout();
        execute!(
            out,
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture
        )
        .context("setting up the terminal")?;
        // Shift-Enter is only told apart from Enter under the kitty keyboard protocol.
        if matches!(supports_keyboard_enhancement(), Ok(true)) {
            execute!(
                out,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            )?;
            KEYBOARD_PUSHED.store(true, Ordering::SeqCst);
        }
        Ok(guard)
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Undoes everything `enter` did. Safe to call twice (the panic hook and the guard may both
/// try); errors are ignored because there is nothing better to do on the way out.
fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = io::stdout();
    if KEYBOARD_PUSHED.swap(false, Ordering::SeqCst) {
        let _ = execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        out,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        cursor::Show
    );
    let _ = disable_raw_mode();
    let _ = out.flush();
}

/// Restores the terminal before the panic message prints, so the message is readable and
/// the shell is usable (gitui does the same). Installed once; it chains to the hook that was
/// there before.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let ui_thread = *UI_THREAD.lock().unwrap_or_else(|e| e.into_inner());
            if ui_thread == Some(std::thread::current().id()) {
                restore();
            }
            previous(info);
        }));
    });
}
