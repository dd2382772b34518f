//! Terminal events to [`Action`]s. This reads the state (which pane has focus, whether an
//! overlay is open) but never changes it: that is [`super::App::update`]'s job.

use std::time::Instant;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEventKind};

use super::action::{Action, Effect};
use super::app::{App, Focus};

/// Lines one mouse-wheel notch scrolls.
const WHEEL_LINES: usize = 3;

/// The action for one terminal event, if it means anything here. `now` stamps Ctrl-C.
/// A terminal event, through the key map and into [`App::update`].
pub fn handle_event(app: &mut App, event: Event, now: Instant) -> Option<Effect> {
    let action = map_event(app, event, now)?;
    app.update(action)
}

pub fn map_event(app: &App, event: Event, now: Instant) -> Option<Action> {
    match event {
        Event::Key(key) => map_key(app, key, now),
        Event::Paste(text) => Some(Action::Paste(text)),
        Event::Mouse(mouse) => match mouse.kind {
            // (While help is open, update() applies these to the help text.)
            MouseEventKind::ScrollUp => Some(Action::ScrollUp(WHEEL_LINES)),
            MouseEventKind::ScrollDown => Some(Action::ScrollDown(WHEEL_LINES)),
            _ => None,
        },
        Event::Resize(w, h) => Some(Action::Resize(w, h)),
        Event::FocusGained | Event::FocusLost => None,
    }
}

fn map_key(app: &App, key: KeyEvent, now: Instant) -> Option<Action> {
    // Windows and the kitty protocol also report releases; act on presses (and repeats) only.
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);

    // Keys that mean the same everywhere, overlays included.
    match key.code {
        KeyCode::Char('c') if ctrl => return Some(Action::Interrupt(now)),
        KeyCode::Char('l') if ctrl => return Some(Action::Redraw),
        _ => {}
    }
    if app.help_open() {
        return match key.code {
            KeyCode::Esc | KeyCode::Enter | KeyCode::Char('q') | KeyCode::Char('?') => {
                Some(Action::Escape)
            }
            // Scrolling while help is open scrolls the help (it can be taller than a small
            // screen).
            KeyCode::Up | KeyCode::Char('k') => Some(Action::ScrollUp(1)),
            KeyCode::Down | KeyCode::Char('j') => Some(Action::ScrollDown(1)),
            KeyCode::PageUp => Some(Action::PageUp),
            KeyCode::PageDown => Some(Action::PageDown),
            _ => None,
        };
    }
    match key.code {
        KeyCode::Tab => return Some(Action::FocusNext),
        KeyCode::BackTab => return Some(Action::FocusPrev),
        KeyCode::Esc => return Some(Action::Escape),
        KeyCode::PageUp => return Some(Action::PageUp),
        KeyCode::PageDown => return Some(Action::PageDown),
        KeyCode::F(1) => return Some(Action::OpenHelp),
        _ => {}
    }

    // A monitor has nothing to type, so q can leave it.
    if app.read_only && key.code == KeyCode::Char('q') {
        return Some(Action::Terminate);
    }
    match app.focus() {
        Focus::Input => input_key(app, key, ctrl, alt),
        Focus::Conversation => match key.code {
            KeyCode::Up | KeyCode::Char('k') => Some(Action::ScrollUp(1)),
            KeyCode::Down | KeyCode::Char('j') => Some(Action::ScrollDown(1)),
            KeyCode::Home | KeyCode::Char('g') => Some(Action::ScrollTop),
            KeyCode::End | KeyCode::Char('G') => Some(Action::ScrollBottom),
            KeyCode::Char('?') => Some(Action::OpenHelp),
            _ => None,
        },
        Focus::Sessions => match key.code {
            KeyCode::Up | KeyCode::Char('k') => Some(Action::SessionUp),
            KeyCode::Down | KeyCode::Char('j') => Some(Action::SessionDown),
            KeyCode::Enter => Some(Action::SessionOpen),
            KeyCode::Char('r') => Some(Action::RefreshSessions),
            KeyCode::Char('?') => Some(Action::OpenHelp),
            _ => None,
        },
    }
}

fn input_key(app: &App, key: KeyEvent, ctrl: bool, alt: bool) -> Option<Action> {
    let shift = key.modifiers.contains(KeyModifiers::SHIFT);
    Some(match key.code {
        // Alt-Enter everywhere; Shift-Enter where the terminal reports it (kitty keyboard
        // protocol); Ctrl-J is what many terminals send for Ctrl-Enter.
        KeyCode::Enter if alt || shift || ctrl => Action::Newline,
        KeyCode::Char('j') if ctrl => Action::Newline,
        KeyCode::Enter => Action::Submit,
        KeyCode::Char('?') if app.input_is_empty() && !ctrl && !alt => Action::OpenHelp,
        KeyCode::Char('a') if ctrl => Action::Home,
        KeyCode::Char('e') if ctrl => Action::End,
        KeyCode::Char('u') if ctrl => Action::ClearToLineStart,
        KeyCode::Char('w') if ctrl => Action::DeleteWordBack,
        KeyCode::Backspace if alt || ctrl => Action::DeleteWordBack,
        KeyCode::Char('h') if ctrl => Action::Backspace,
        // Other control/alt chords are not text.
        KeyCode::Char(_) if ctrl || alt => return None,
        KeyCode::Char(c) => Action::Insert(c),
        KeyCode::Backspace => Action::Backspace,
        KeyCode::Delete => Action::Delete,
        KeyCode::Left => Action::Left,
        KeyCode::Right => Action::Right,
        KeyCode::Home => Action::Home,
        KeyCode::End => Action::End,
        KeyCode::Up => Action::InputUp,
        KeyCode::Down => Action::InputDown,
        _ => return None,
    })
}
