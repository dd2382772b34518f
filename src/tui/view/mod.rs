//! Drawing. Everything here takes `&App` and changes nothing; the layout is a pure function
//! of the screen size and the state, so `update` can ask it how tall the conversation is.

mod conversation;
mod help;
mod memory;
mod sessions;
mod status;
mod widgets;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Block;
use ratatui::Frame;

use super::app::{App, Focus, Viewport};
use widgets::pane_block;

/// Below this the memory panel and the sessions list no longer fit beside the conversation:
/// the memory panel collapses to one summary line and the sessions list takes the
/// conversation's place while it has focus.
const MIN_FULL_WIDTH: u16 = 80;
const MIN_FULL_HEIGHT: u16 = 20;
/// Rows the input box may grow to before it scrolls.
const INPUT_ROWS_FULL: usize = 8;
const INPUT_ROWS_COMPACT: usize = 3;

/// Where each part goes on a screen of a given size.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Areas {
    pub status: Rect,
    /// The one-line memory summary of a small screen.
    pub memory_line: Option<Rect>,
    /// The conversation, or on a small screen whichever of conversation/sessions has focus.
    pub main: Rect,
    pub progress: Option<Rect>,
    pub input: Rect,
    pub memory: Option<Rect>,
    pub sessions: Option<Rect>,
    pub footer: Rect,
    pub compact: bool,
}

pub(crate) fn layout(area: Rect, app: &App) -> Areas {
    let compact = area.width < MIN_FULL_WIDTH || area.height < MIN_FULL_HEIGHT;
    // The progress gauge spans the whole width, under everything but the footer, so the
    // bar has room next to its numbers.
    let [status, memory_line, body, progress, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(u16::from(compact)),
        Constraint::Min(0),
        Constraint::Length(u16::from(app.progress.is_some())),
        Constraint::Length(1),
    ])
    .areas(area);

    let (left, right) = if compact {
        (body, None)
    } else {
        let side = (area.width * 2 / 5).clamp(34, 48);
        let [left, right] =
            Layout::horizontal([Constraint::Min(0), Constraint::Length(side)]).areas(body);
        (left, Some(right))
    };

    // The input box: its text rows plus the border (all four sides, or the top one only).
    let (max_rows, border_rows, border_cols) = if compact {
        (INPUT_ROWS_COMPACT, 1, 0)
    } else {
        (INPUT_ROWS_FULL, 2, 2)
    };
    let (rows, _) = app.input.layout(left.width.saturating_sub(border_cols));
    // A monitor (`kvrun top`) has no input box.
    let input_height = if app.read_only {
        0
    } else {
        rows.len().clamp(1, max_rows) as u16 + border_rows
    };
    let [main, input] =
        Layout::vertical([Constraint::Min(1), Constraint::Length(input_height)]).areas(left);

    let (memory, sessions) = match right {
        Some(right) => {
            // The memory panel is why this TUI exists: it gets the rows it needs, as long as
            // the sessions list keeps a few.
            let wanted = memory::height(app, right.width.saturating_sub(2));
            let limit = right.height.saturating_sub(6);
            let [m, s] =
                Layout::vertical([Constraint::Length(wanted.min(limit)), Constraint::Min(0)])
                    .areas(right);
            (Some(m), Some(s))
        }
        None => (None, None),
    };
    Areas {
        status,
        memory_line: compact.then_some(memory_line),
        main,
        progress: app.progress.is_some().then_some(progress),
        input,
        memory,
        sessions,
        footer,
        compact,
    }
}

/// What scrolling needs to know about the current screen (the app's geometry).
pub(crate) fn viewport(app: &App) -> Viewport {
    let (w, h) = app.size;
    let areas = layout(Rect::new(0, 0, w, h), app);
    let inner = conversation_inner(areas.main, areas.compact);
    Viewport {
        conversation_rows: inner.height as usize,
        conversation_total: conversation::rows(app, inner.width as usize).len(),
        help_max_scroll: help::max_scroll(Rect::new(0, 0, w, h)),
    }
}

fn conversation_inner(main: Rect, compact: bool) -> Rect {
    if compact {
        main
    } else {
        Block::bordered().inner(main)
    }
}

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &App) {
    let areas = layout(frame.area(), app);
    status::draw_status(frame, areas.status, app, areas.compact);
    if let Some(line) = areas.memory_line {
        memory::draw_summary(frame, line, app);
    }
    if areas.compact && app.focus == Focus::Sessions {
        sessions::draw(frame, areas.main, app, true);
    } else {
        let block = (!areas.compact)
            .then(|| pane_block(conversation::title(app), app.focus == Focus::Conversation));
        conversation::draw(frame, areas.main, block, app);
    }
    if let Some(progress) = areas.progress {
        status::draw_progress(frame, progress, app);
    }
    if !app.read_only {
        status::draw_input(frame, areas.input, app, areas.compact);
    }
    if let Some(memory) = areas.memory {
        memory::draw_panel(frame, memory, app);
    }
    if let Some(sessions) = areas.sessions {
        sessions::draw(frame, sessions, app, false);
    }
    status::draw_footer(frame, areas.footer, app, areas.compact);
    if app.help {
        help::draw(frame, frame.area(), app.help_scroll);
    }
}

#[cfg(test)]
mod tests {
    use super::widgets::{ago, compact_count, sanitize};

    #[test]
    fn small_formats() {
        assert_eq!(compact_count(18432), "18.4k");
        assert_eq!(ago(1000, 1000 + 180), "3m ago");
        assert_eq!(ago(1000, 1000 + 7_300), "2h ago");
        assert_eq!(ago(2000, 1000), "now");
        assert_eq!(sanitize("a\tb\x1b[2Jc"), "a    b[2Jc");
    }
}
