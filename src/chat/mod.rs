//! The chat front ends' client of the engine: a thread that keeps the active conversation
//! and speaks its [`protocol`] with a front end (the TUI or the line-mode REPL), while the
//! service engine (the same one `kvrun serve` runs) owns the model, the context, the
//! sessions and the tiers. Generation and restores run off the UI thread, so the screen
//! keeps redrawing.

mod client;
mod memory;
pub mod protocol;
pub mod slash;

pub use client::{spawn, ChatOptions, DEFAULT_CHAT_MAX_TOKENS};
