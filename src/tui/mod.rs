//! The interactive TUI (placeholder until the front end lands).
pub mod protocol;
