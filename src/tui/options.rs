//! What the TUI is started with.

/// What the TUI starts with, before the chat thread says more.
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    /// Shown in the status line until the chat thread's Ready names the model.
    pub title: String,
    /// The session being opened, if any.
    pub session: Option<String>,
    /// A monitor (`kvrun top`): no input box, and keys that would edit a message do not
    /// exist; Enter on a session shows its conversation.
    pub read_only: bool,
}
