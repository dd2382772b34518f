//! How a chat ends: the outcome the front ends report, and the exit path that waits for
//! the final save (bounded) before the process leaves.

use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::interrupt::{signal_name, Interrupt};

/// How a front end ended.
pub(super) struct Outcome {
    pub code: ExitCode,
    /// Chat thread errors it saw while quitting (a failed final save), for stderr.
    pub errors: Vec<String>,
}

/// A way out by signal: the exit code to leave with, and a watchdog that ends the process
/// if the front end cannot return (a vanished terminal can leave it blocked) once the
/// chat has saved.
#[derive(Clone)]
pub(super) struct Leaving {
    interrupt: Interrupt,
    signal: Arc<AtomicI32>,
    chat: Arc<Mutex<Option<JoinHandle<()>>>>,
}

impl Leaving {
    pub(super) fn new(interrupt: Interrupt, chat: JoinHandle<()>) -> Self {
        Self {
            interrupt,
            signal: Arc::new(AtomicI32::new(0)),
            chat: Arc::new(Mutex::new(Some(chat))),
        }
    }

    /// A signal asked to leave: stop the reply now and make sure the process ends.
    pub(super) fn signalled(&self, signal: i32) {
        self.interrupt.quit();
        if self.signal.swap(signal, Ordering::SeqCst) != 0 {
            return;
        }
        tracing::info!("{}: stopping, saving and leaving", signal_name(signal));
        let chat = self.chat.clone();
        std::thread::spawn(move || {
            let started = Instant::now();
            let chat_done = || {
                chat.lock()
                    .map(|h| h.as_ref().is_none_or(JoinHandle::is_finished))
                    .unwrap_or(true)
            };
            while !chat_done() && started.elapsed() < SAVE_DEADLINE {
                std::thread::sleep(Duration::from_millis(20));
            }
            std::thread::sleep(FRONT_END_GRACE);
            tracing::warn!(
                "the front end did not return after {}; leaving",
                signal_name(signal)
            );
            std::process::exit(i32::from(128u8.saturating_add(signal as u8)));
        });
    }

    pub(super) fn signal(&self) -> Option<i32> {
        Some(self.signal.load(Ordering::SeqCst)).filter(|s| *s != 0)
    }

    pub(super) fn join_chat(&self) {
        let handle = self.chat.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

/// After a signal, how long the chat thread may take to stop and save before the process ends
/// anyway (saves are atomic: an unfinished one leaves the previous snapshot).
const SAVE_DEADLINE: Duration = Duration::from_secs(30);

/// Once the chat thread is done, how long the front end has to restore the terminal and return.
const FRONT_END_GRACE: Duration = Duration::from_secs(1);
