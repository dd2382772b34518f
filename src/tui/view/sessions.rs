//! The sessions list: name, tokens, tier, last used. Enter on a row switches to it.

use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Row, Table, TableState};
use ratatui::Frame;

use super::super::app::{App, Focus};
use super::widgets::{ago, compact_count, pane_block};
use crate::chat::protocol::Tier;

/// Draws the list in `area`. `alone` is the small-screen case where it replaces the
/// conversation, so it says how to get back.
pub(super) fn draw(frame: &mut Frame, area: Rect, app: &App, alone: bool) {
    let focused = app.focus == Focus::Sessions;
    let title = if alone {
        " sessions · Enter switch · Esc back ".to_string()
    } else {
        " sessions ".to_string()
    };
    let block = pane_block(title, focused);
    if app.sessions.is_empty() {
        let text = Line::styled(
            "no sessions yet: /session NAME",
            Style::new().fg(Color::DarkGray),
        );
        frame.render_widget(Paragraph::new(text).block(block), area);
        return;
    }
    let rows = app.sessions.iter().enumerate().map(|(i, s)| {
        let style = if s.active {
            Style::new().add_modifier(Modifier::BOLD)
        } else {
            Style::new()
        };
        // The marker column: › the row Enter would open, ● the active session.
        let cursor = if focused && i == app.selected {
            "›"
        } else {
            " "
        };
        let active = if s.active { "●" } else { " " };
        Row::new(vec![
            Line::from(format!("{cursor}{active}")),
            Line::from(s.name().to_string()),
            Line::from(compact_count(s.tokens() as u64)).right_aligned(),
            Line::styled(tier_name(s.tier), Style::new().fg(tier_color(s.tier))),
            Line::from(ago(s.last_used_unix, app.now_unix)).right_aligned(),
        ])
        .style(style)
    });
    let header = Row::new(vec!["", "name", "tokens", "tier", "used"])
        .style(Style::new().fg(Color::DarkGray));
    let widths = [
        Constraint::Length(2),
        Constraint::Min(6),
        Constraint::Length(6),
        Constraint::Length(4),
        Constraint::Length(7),
    ];
    let highlight = if focused {
        Style::new().bg(Color::DarkGray)
    } else {
        Style::new()
    };
    let table = Table::new(rows, widths)
        .header(header)
        .block(block)
        .column_spacing(1)
        .row_highlight_style(highlight);
    // A TableState made fresh from `app.selected`: drawing keeps no state of its own.
    let mut state = TableState::new().with_selected(Some(app.selected));
    frame.render_stateful_widget(table, area, &mut state);
}

/// Four columns: "prefill" (not cached in any tier) reads "none" here.
fn tier_name(tier: Tier) -> &'static str {
    match tier {
        Tier::Prefill => "none",
        t => t.as_str(),
    }
}

fn tier_color(tier: Tier) -> Color {
    match tier {
        Tier::Hot => Color::Red,
        Tier::Warm => Color::Yellow,
        Tier::Cold => Color::Blue,
        Tier::Prefill => Color::DarkGray,
    }
}
