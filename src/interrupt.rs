//! Stopping work that is under way: a reply (Ctrl-C), or everything (quit, a signal, a lost
//! terminal). Generation checks one flag between tokens; a quit also raises it for every
//! turn still to come, so the engine reaches its final save within a token.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Shared between the engine and its front ends; clones share the flags.
#[derive(Debug, Clone, Default)]
pub struct Interrupt {
    flags: Arc<Flags>,
}

#[derive(Debug, Default)]
struct Flags {
    /// Stop the reply being generated (shared with the requests a chat sends the engine).
    stop: Arc<AtomicBool>,
    /// Leave: no reply may run any more.
    quit: AtomicBool,
}

impl Interrupt {
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops the reply being generated; the conversation goes on.
    pub fn stop_reply(&self) {
        self.flags.stop.store(true, Ordering::SeqCst);
    }

    /// Stops the reply now and every turn that would start later.
    pub fn quit(&self) {
        // Quit first: `begin_turn` clears `stop` and then reads `quit`, so one of the two
        // orders always leaves `stop` raised.
        self.flags.quit.store(true, Ordering::SeqCst);
        self.flags.stop.store(true, Ordering::SeqCst);
    }

    pub fn quitting(&self) -> bool {
        self.flags.quit.load(Ordering::SeqCst)
    }

    /// A turn starts: a Ctrl-C from before it no longer applies, a quit still does. Returns
    /// the flag generation watches.
    pub fn begin_turn(&self) -> &AtomicBool {
        self.flags.stop.store(false, Ordering::SeqCst);
        if self.quitting() {
            self.flags.stop.store(true, Ordering::SeqCst);
        }
        &self.flags.stop
    }

    /// The flag generation watches, as it stands.
    pub fn flag(&self) -> &AtomicBool {
        &self.flags.stop
    }

    /// The same flag, shared: a request's cancel token watches it.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        self.flags.stop.clone()
    }
}

/// The signals that end an interactive command (or, for SIGINT, may only stop a reply).
pub const EXIT_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// Calls `on_signal` on a thread of its own for each SIGINT, SIGTERM and SIGHUP, instead of
/// the default action (ending the process before anything is saved).
pub fn on_signals(on_signal: impl FnMut(i32) + Send + 'static) -> std::io::Result<()> {
    let installing = |e: std::io::Error| {
        std::io::Error::new(e.kind(), format!("installing signal handlers: {e}"))
    };
    let mut signals = signal_hook::iterator::Signals::new(EXIT_SIGNALS).map_err(installing)?;
    let mut on_signal = on_signal;
    std::thread::Builder::new()
        .name("kvrun-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                on_signal(signal);
            }
        })
        .map_err(installing)?;
    Ok(())
}

/// The shell's convention for a process ended by a signal: 128 + its number.
pub fn signal_exit_code(signal: i32) -> ExitCode {
    ExitCode::from(128u8.saturating_add(signal.clamp(0, 127) as u8))
}

/// A signal's name for messages.
pub fn signal_name(signal: i32) -> &'static str {
    match signal {
        signal_hook::consts::SIGINT => "SIGINT",
        signal_hook::consts::SIGTERM => "SIGTERM",
        signal_hook::consts::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quit_outlives_the_start_of_a_turn_and_a_stop_does_not() {
        let i = Interrupt::new();
        i.stop_reply();
        assert!(
            !i.begin_turn().load(Ordering::SeqCst),
            "an old Ctrl-C stopped a new turn"
        );
        i.stop_reply();
        assert!(i.flag().load(Ordering::SeqCst));
        i.quit();
        assert!(
            i.begin_turn().load(Ordering::SeqCst),
            "a turn started after a quit"
        );
        assert!(i.clone().quitting());
    }

    #[test]
    fn signal_exit_codes_follow_the_shell() {
        assert_eq!(signal_exit_code(2), ExitCode::from(130));
        assert_eq!(signal_exit_code(15), ExitCode::from(143));
        assert_eq!(signal_exit_code(1), ExitCode::from(129));
    }
}
