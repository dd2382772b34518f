//! The chat engine: a worker thread that owns the model, the context and the open sessions,
//! and speaks its [`protocol`] with a front end (the TUI or the line-mode REPL).
//! Generation and restores run here, off the UI thread, so the screen keeps redrawing.

mod engine;
mod policy;
mod progress;
pub mod protocol;
pub mod slash;
mod tiers;

pub use engine::{spawn, ChatOptions, DEFAULT_CHAT_MAX_TOKENS};
