//! The conversation pane. Text is wrapped here, row by row, rather than by ratatui's
//! Paragraph, for two reasons: fenced code must not be rewrapped (it is clipped instead, and
//! the clip is marked), and scrolling needs to know exactly how many rows there are.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::super::app::{App, Message, Role};
use super::widgets::{sanitize, wrap};

/// Message text is indented under its role label.
const INDENT: &str = "  ";

pub(super) fn title(app: &App) -> String {
    match &app.session {
        Some(name) => format!(" conversation · {name} "),
        None => " conversation ".to_string(),
    }
}

pub(super) fn draw(frame: &mut Frame, area: Rect, block: Option<Block<'static>>, app: &App) {
    let inner = match &block {
        Some(b) => b.inner(area),
        None => area,
    };
    if let Some(b) = block {
        frame.render_widget(b, area);
    }
    let rows = rows(app, inner.width as usize);
    let height = inner.height as usize;
    let bottom = rows.len().saturating_sub(height);
    let top = app.scroll.unwrap_or(bottom).min(bottom);
    let visible: Vec<Line> = rows.into_iter().skip(top).take(height).collect();
    frame.render_widget(Paragraph::new(visible), inner);
    if top < bottom {
        // Say that there is more below, and how to get there.
        let hint = format!(" ↓ {} more · End ", bottom - top);
        let w = hint.width() as u16;
        if inner.width > w && inner.height > 0 {
            let at = Rect::new(inner.right() - w, inner.bottom() - 1, w, 1);
            frame.render_widget(
                Paragraph::new(hint).style(Style::new().fg(Color::Black).bg(Color::Yellow)),
                at,
            );
        }
    }
}

/// Every row of the conversation at `width` columns, top to bottom.
pub(crate) fn rows(app: &App, width: usize) -> Vec<Line<'static>> {
    let width = width.max(4);
    let mut out = Vec::new();
    if app.messages.is_empty() && !app.generating {
        // A monitor (`kvrun top`) takes no messages: it shows a session picked in the list.
        let hint = if app.read_only {
            "Pick a session (↑↓, Enter) to see its conversation. ? shows the keys."
        } else {
            "Type a message and press Enter. ? shows the keys."
        };
        out.push(Line::styled(hint, Style::new().fg(Color::DarkGray)));
        return out;
    }
    for (i, message) in app.messages.iter().enumerate() {
        if i > 0 {
            out.push(Line::default());
        }
        out.push(label(message.role, message.stopped));
        message_rows(message, width, &mut out);
    }
    // The reply has been asked for but nothing has arrived yet (prefill): show that it is
    // coming.
    if app.generating
        && app
            .messages
            .last()
            .is_none_or(|m| m.role != Role::Assistant)
    {
        out.push(Line::default());
        out.push(label(Role::Assistant, false));
        out.push(Line::styled(
            format!("{INDENT}…"),
            Style::new().fg(Color::DarkGray),
        ));
    }
    out
}

fn label(role: Role, stopped: bool) -> Line<'static> {
    let (text, color) = match role {
        Role::User => ("▌you", Color::Cyan),
        Role::Assistant => ("▌model", Color::Green),
        Role::System => ("▌system", Color::Yellow),
        Role::Error => ("▌error", Color::Red),
    };
    let mut spans = vec![Span::styled(
        text,
        Style::new().fg(color).add_modifier(Modifier::BOLD),
    )];
    if stopped {
        spans.push(Span::styled(" (stopped)", Style::new().fg(Color::DarkGray)));
    }
    Line::from(spans)
}

fn message_rows(message: &Message, width: usize, out: &mut Vec<Line<'static>>) {
    let text_style = match message.role {
        Role::Error => Style::new().fg(Color::Red),
        Role::System => Style::new().fg(Color::Yellow),
        _ => Style::new(),
    };
    let code_style = Style::new()
        .fg(Color::LightYellow)
        .bg(Color::Rgb(30, 30, 30));
    let fence_style = Style::new().fg(Color::DarkGray);
    let avail = width.saturating_sub(INDENT.len()).max(1);
    let mut in_code = false;
    for line in sanitize(&message.content).split('\n') {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            out.push(Line::styled(format!("{INDENT}{line}"), fence_style));
        } else if in_code {
            out.push(code_row(line, avail, code_style));
        } else {
            for row in wrap(line, avail) {
                out.push(Line::styled(format!("{INDENT}{row}"), text_style));
            }
        }
    }
}

/// One row of code, never wrapped: a longer line is clipped and ends in a dim '›'.
fn code_row(line: &str, avail: usize, style: Style) -> Line<'static> {
    if line.width() <= avail {
        return Line::from(vec![
            Span::raw(INDENT),
            Span::styled(line.to_string(), style),
        ]);
    }
    let mut kept = String::new();
    let mut w = 0;
    for c in line.chars() {
        let cw = c.width().unwrap_or(0);
        if w + cw > avail - 1 {
            break;
        }
        kept.push(c);
        w += cw;
    }
    Line::from(vec![
        Span::raw(INDENT),
        Span::styled(kept, style),
        Span::styled("›", Style::new().fg(Color::DarkGray)),
    ])
}

#[cfg(test)]
mod tests {
    use super::super::widgets::wrap;
    use super::*;

    #[test]
    fn wrap_breaks_at_words_and_keeps_indent() {
        assert_eq!(wrap("the quick brown fox", 10), ["the quick", "brown fox"]);
        assert_eq!(wrap("  - item one two", 10), ["  - item", "  one two"]);
        assert_eq!(wrap("abcdefghijkl", 5), ["abcde", "fghij", "kl"]);
        assert_eq!(wrap("", 5), [""]);
    }

    #[test]
    fn long_code_is_clipped_not_wrapped() {
        let line = code_row("let x = 1234567890;", 10, Style::new());
        let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "  let x = 1›");
    }
}
