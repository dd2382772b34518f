//! The help overlay (`?` on an empty input, F1, or /help): every key and every /command.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Padding, Paragraph};
use ratatui::Frame;

use super::widgets::wrap;
use crate::chat::slash::COMMANDS;

const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the message"),
    ("Alt-Enter", "new line (also Shift-Enter, Ctrl-J)"),
    ("Up/Down", "input history (lines in a long input)"),
    ("PgUp/PgDn", "scroll the conversation (or wheel)"),
    ("Tab", "focus: input, conversation, sessions"),
    ("Enter", "on a session: switch to it"),
    ("Home/End", "in the conversation: top/bottom"),
    ("? / F1", "this help (? on an empty input)"),
    ("Esc", "close help, back to the input"),
    ("Ctrl-C", "stop the reply; at rest, quit"),
    ("Ctrl-C ×2", "quit (saves the session)"),
    ("Ctrl-L", "redraw the screen"),
];

const KEY_COLUMN: usize = 14;

/// The help text at `width` columns: key and meaning side by side when they fit, else the
/// meaning on its own line under the key.
pub(crate) fn lines(width: u16) -> Vec<Line<'static>> {
    let key_style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
    let heading = Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
    let all = || KEYS.iter().chain(COMMANDS.iter());
    let widest = all().map(|(_, w)| w.len()).max().unwrap_or(0) + KEY_COLUMN;
    let side_by_side = widest <= width as usize;
    let mut lines = Vec::new();
    for (section, entries) in [("Keys", KEYS), ("Commands", COMMANDS)] {
        lines.push(Line::styled(section, heading));
        for (key, what) in entries {
            if side_by_side {
                lines.push(Line::from(vec![
                    Span::styled(format!("{key:<KEY_COLUMN$}"), key_style),
                    Span::raw(*what),
                ]));
            } else {
                lines.push(Line::styled(*key, key_style));
                let rows = wrap(what, (width as usize).saturating_sub(2));
                lines.extend(rows.into_iter().map(|r| Line::from(format!("  {r}"))));
            }
        }
    }
    lines
}

/// Rows the help text runs past the overlay on this screen, which is how far it scrolls.
pub(crate) fn max_scroll(screen: Rect) -> u16 {
    let (area, inner_width) = overlay_area(screen);
    let total = lines(inner_width).len() as u16;
    total.saturating_sub(area.height.saturating_sub(2))
}

/// The overlay's rectangle, and the text width inside it.
fn overlay_area(screen: Rect) -> (Rect, u16) {
    // Borders and one column of padding on each side.
    const FRAME_COLS: u16 = 4;
    let fits = lines(screen.width.saturating_sub(FRAME_COLS));
    let widest = fits.iter().map(Line::width).max().unwrap_or(0) as u16;
    let width = (widest + FRAME_COLS).min(screen.width);
    let height = (fits.len() as u16 + 2).min(screen.height);
    let area = Rect::new(
        screen.x + (screen.width - width) / 2,
        screen.y + (screen.height - height) / 2,
        width,
        height,
    );
    (area, width.saturating_sub(FRAME_COLS))
}

pub(super) fn draw(frame: &mut Frame, screen: Rect, scroll: u16) {
    let (area, inner_width) = overlay_area(screen);
    let scroll = scroll.min(max_scroll(screen));
    let title = if max_scroll(screen) > 0 {
        " help · ↑↓ scroll · Esc closes "
    } else {
        " help · Esc closes "
    };
    let block = Block::bordered()
        .title(title)
        .border_style(Style::new().fg(Color::Yellow))
        .padding(Padding::horizontal(1));
    frame.render_widget(Clear, area);
    frame.render_widget(
        Paragraph::new(lines(inner_width))
            .block(block)
            .scroll((scroll, 0)),
        area,
    );
}
