//! Small pieces every pane uses: the pane border, text made safe to draw, word wrap, and
//! compact counts and ages.

use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::{Block, Borders};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A bordered pane whose border lights up when it has focus.
pub(crate) fn pane_block(title: String, focused: bool) -> Block<'static> {
    let style = if focused {
        Style::new().fg(Color::Yellow).add_modifier(Modifier::BOLD)
    } else {
        Style::new().fg(Color::DarkGray)
    };
    Block::new()
        .borders(Borders::ALL)
        .border_style(style)
        .title(title)
}

/// Model text may hold tabs or terminal escapes; a cell must hold neither (a raw ESC would
/// reach the terminal and redraw it from under us).
pub(crate) fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push_str("    "),
            '\n' => out.push('\n'),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// "18.4k", "2.1M": counts where a column is narrow.
pub(crate) fn compact_count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.1}M", n as f64 / 1e6),
    }
}

/// "3m ago", relative to the injected clock.
pub(crate) fn ago(then_unix: u64, now_unix: u64) -> String {
    let s = now_unix.saturating_sub(then_unix);
    match s {
        0..10 => "now".to_string(),
        10..60 => format!("{s}s ago"),
        60..3_600 => format!("{}m ago", s / 60),
        3_600..86_400 => format!("{}h ago", s / 3_600),
        _ => format!("{}d ago", s / 86_400),
    }
}

/// Word-wraps one line of prose to `width` columns. Continuation rows keep the line's own
/// indentation, so list items stay readable; words longer than a row are split.
pub(crate) fn wrap(line: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let indent_len = line.len() - line.trim_start_matches(' ').len();
    let indent = " ".repeat(indent_len.min(width / 2));
    let mut rows = Vec::new();
    let mut row = String::new();
    let mut row_w = 0;
    for word in line.split_inclusive(' ') {
        let word_w = word.trim_end_matches(' ').width();
        if row_w + word_w > width && row.trim() != "" {
            rows.push(row.trim_end().to_string());
            row = indent.clone();
            row_w = indent.len();
        }
        for c in word.chars() {
            let cw = c.width().unwrap_or(0);
            if row_w + cw > width {
                if c == ' ' {
                    continue; // a space at the end of a full row is not drawn
                }
                rows.push(row.trim_end().to_string());
                row = indent.clone();
                row_w = indent.len();
            }
            row.push(c);
            row_w += cw;
        }
    }
    rows.push(row.trim_end().to_string());
    rows
}
