//! What can happen to the TUI's state. Keys, pastes, the clock and chat events all become
//! an [`Action`]; [`super::App::update`] is the only place state changes, and it answers
//! with at most one [`Effect`] for the loop to carry out.

use std::time::Instant;

use crate::chat::protocol::{ChatEvent, UserCommand};

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    // Editing the input box.
    Insert(char),
    /// A bracketed paste, inserted whole.
    Paste(String),
    Newline,
    Backspace,
    Delete,
    Left,
    Right,
    Home,
    End,
    DeleteWordBack,
    ClearToLineStart,
    /// Up/Down in the input: to the line above/below, else through the history.
    InputUp,
    InputDown,
    /// Enter in the input: send the message or run the /command.
    Submit,

    // Moving around.
    FocusNext,
    FocusPrev,
    /// Scroll the conversation by lines (mouse wheel, arrows in the conversation pane).
    ScrollUp(usize),
    ScrollDown(usize),
    PageUp,
    PageDown,
    ScrollTop,
    ScrollBottom,
    SessionUp,
    SessionDown,
    /// Enter on the sessions list: switch to the selected row.
    SessionOpen,
    RefreshSessions,
    OpenHelp,
    /// Esc: close the overlay, or leave a pane for the input box.
    Escape,

    /// Ctrl-C, stamped with when it was pressed so two quick presses can mean "quit".
    Interrupt(Instant),
    /// Ctrl-L.
    Redraw,
    Resize(u16, u16),
    /// The wall clock, for "3m ago"; injected so drawing never reads the clock itself.
    Tick {
        now_unix: u64,
    },
    /// SIGTERM/SIGHUP: leave as on /quit (the chat thread saves), without asking.
    Terminate,
    Chat(ChatEvent),
}

impl Action {
    /// Whether this edits the message being typed (a monitor has none).
    pub fn edits_the_message(&self) -> bool {
        matches!(
            self,
            Action::Insert(_)
                | Action::Paste(_)
                | Action::Newline
                | Action::Backspace
                | Action::Delete
                | Action::Left
                | Action::Right
                | Action::Home
                | Action::End
                | Action::DeleteWordBack
                | Action::ClearToLineStart
                | Action::InputUp
                | Action::InputDown
                | Action::Submit
        )
    }
}

/// What the loop must do after an update, beyond redrawing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Send this to the chat thread.
    Command(UserCommand),
    /// Clear the terminal and draw everything again (Ctrl-L).
    ClearScreen,
}
