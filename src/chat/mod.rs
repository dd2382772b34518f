//! The chat engine: a worker thread that owns the model, the context and the open sessions,
//! and speaks the [`crate::tui::protocol`] with a front end (the TUI or the line-mode REPL).
//! Generation and restores run here, off the UI thread, so the screen keeps redrawing.

mod engine;
mod progress;
mod tiers;

pub use engine::{spawn, ChatOptions, TierSettings, DEFAULT_CHAT_MAX_TOKENS};
pub use tiers::gpu_memory;
