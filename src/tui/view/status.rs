//! The status line (top), the progress gauge, the input box and the footer (notes, errors
//! and key hints).

use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;
use unicode_width::UnicodeWidthStr;

use super::super::app::{App, Focus, Progress};
use super::widgets::pane_block;
use crate::chat::protocol::ProgressKind;
use crate::format::{human_bytes, thousands};

/// Model, context use, the last turn's speeds, and the last restore and save. On a small
/// screen the session comes first (there is no conversation title to name it) and the
/// model last, since its name is long.
pub(super) fn draw_status(frame: &mut Frame, area: Rect, app: &App, compact: bool) {
    let bar = Style::new().bg(Color::Blue).fg(Color::White);
    let model = app.model.as_deref().unwrap_or(&app.title);
    let mut parts: Vec<String> = Vec::new();
    if compact {
        parts.extend(app.session.clone());
    }
    if let Some((used, n_ctx)) = app.context {
        parts.push(format!(
            "ctx {}/{}",
            thousands(used as u64),
            thousands(u64::from(n_ctx))
        ));
    }
    if app.generating {
        parts.push("● generating".to_string());
    }
    if let Some(t) = app.last_turn {
        parts.push(format!(
            "prefill {:.0} · decode {:.1} tok/s",
            t.prefill_tokens_per_s, t.decode_tokens_per_s
        ));
    }
    if let Some(r) = &app.last_restore {
        parts.push(format!("restore {:.0} ms ({})", r.ms, r.from.as_str()));
    }
    if let Some(ms) = app.last_save_ms {
        parts.push(format!("save {ms:.0} ms"));
    }
    if compact {
        parts.push(model.to_string());
    } else {
        parts.insert(0, model.to_string());
    }
    let mut spans = Vec::new();
    for (i, part) in parts.into_iter().enumerate() {
        if i > 0 {
            spans.push(Span::styled("│", bar.fg(Color::LightBlue)));
        }
        // The first part (model, or session when small) stands out.
        let style = if i == 0 {
            bar.add_modifier(Modifier::BOLD)
        } else {
            bar
        };
        spans.push(Span::styled(format!(" {part} "), style));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)).style(bar), area);
}

/// A gauge for a long operation, with its rate and time left, so a slow load or restore is
/// visibly moving: "restore ▕████░░░░▏ 25% 120.0 MiB/480.0 MiB · 900.0 MiB/s · ETA 1s".
pub(super) fn draw_progress(frame: &mut Frame, area: Rect, app: &App) {
    let Some(p) = app.progress else { return };
    let ratio = if p.total == 0 {
        0.0
    } else {
        (p.done as f64 / p.total as f64).clamp(0.0, 1.0)
    };
    let (what, details) = progress_text(&p);
    // The numbers matter more than the bar: on a narrow screen the bar shrinks, then goes.
    let fixed = what.len() + details.width() + 7;
    let bar = (area.width as usize).saturating_sub(fixed).min(30);
    let bar = if bar < 5 { 0 } else { bar };
    let filled = (ratio * bar as f64).round() as usize;
    let line = Line::from(vec![
        Span::styled(
            format!("{what} "),
            Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD),
        ),
        Span::styled("█".repeat(filled), Style::new().fg(Color::Cyan)),
        Span::styled("░".repeat(bar - filled), Style::new().fg(Color::DarkGray)),
        Span::raw(format!(" {:>3.0}% {details}", ratio * 100.0)),
    ]);
    frame.render_widget(Paragraph::new(line), area);
}

/// What is in progress, and "done/total · rate · ETA".
pub(crate) fn progress_text(p: &Progress) -> (&'static str, String) {
    let (what, amounts, rate) = match p.kind {
        ProgressKind::Prefill => (
            "prefill",
            format!("{}/{} tokens", thousands(p.done), thousands(p.total)),
            format!("{:.0} tok/s", p.rate),
        ),
        ProgressKind::LoadModel | ProgressKind::Restore => (
            if p.kind == ProgressKind::Restore {
                "restore"
            } else {
                "loading model"
            },
            format!("{}/{}", human_bytes(p.done), human_bytes(p.total)),
            format!("{}/s", human_bytes(p.rate as u64)),
        ),
    };
    let eta = if p.rate > 0.0 {
        let secs = (p.total.saturating_sub(p.done) as f64 / p.rate).ceil() as u64;
        format!(" · ETA {}", duration(secs))
    } else {
        String::new()
    };
    (what, format!("{amounts} · {rate}{eta}"))
}

fn duration(secs: u64) -> String {
    match secs {
        0..60 => format!("{secs}s"),
        60..3_600 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3_600, secs % 3_600 / 60),
    }
}

/// The input box. It grows with its text up to a limit, then scrolls to keep the cursor in
/// view, so a large paste is all there without taking over the screen.
pub(super) fn draw_input(frame: &mut Frame, area: Rect, app: &App, compact: bool) {
    let focused = app.focus == Focus::Input && !app.help;
    let title = if app.generating {
        " message · Ctrl-C stops the reply "
    } else {
        " message · Enter send · Alt-Enter newline "
    };
    let block = if compact {
        Block::new()
            .borders(Borders::TOP)
            .border_style(Style::new().fg(if focused {
                Color::Yellow
            } else {
                Color::DarkGray
            }))
    } else {
        pane_block(title.to_string(), focused)
    };
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let (rows, (cursor_row, cursor_col)) = app.input.layout(inner.width);
    let height = inner.height as usize;
    let top = (cursor_row + 1).saturating_sub(height);
    let lines: Vec<Line> = rows
        .into_iter()
        .skip(top)
        .take(height)
        .map(|row| Line::from(super::widgets::sanitize(&row)))
        .collect();
    frame.render_widget(Paragraph::new(lines), inner);
    if focused && inner.height > 0 {
        frame.set_cursor_position(Position::new(
            inner.x + cursor_col.min(inner.width.saturating_sub(1)),
            inner.y + (cursor_row - top) as u16,
        ));
    }
}

/// The latest note or error; when there is none, the keys that matter most.
pub(super) fn draw_footer(frame: &mut Frame, area: Rect, app: &App, compact: bool) {
    let line = match &app.note {
        Some(note) if note.error => Line::from(vec![
            Span::styled(
                " error ",
                Style::new()
                    .bg(Color::Red)
                    .fg(Color::White)
                    .add_modifier(Modifier::BOLD),
            ),
            Span::styled(format!(" {}", note.text), Style::new().fg(Color::Red)),
        ]),
        Some(note) => Line::styled(format!(" {}", note.text), Style::new().fg(Color::Gray)),
        None => Line::styled(
            match (app.read_only, compact) {
                (true, true) => " Enter show · Tab focus · q quit",
                (true, false) => {
                    " ↑↓ sessions · Enter show its conversation · Tab focus · PgUp/PgDn scroll · q quit"
                }
                (false, true) => " ? help · Tab focus · Ctrl-C stop/quit",
                (false, false) => {
                    " Enter send · Tab focus · PgUp/PgDn scroll · ? help · Ctrl-C stop/quit"
                }
            },
            Style::new().fg(Color::DarkGray),
        ),
    };
    frame.render_widget(Paragraph::new(line), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_text_has_rate_and_eta() {
        let p = Progress {
            kind: ProgressKind::Restore,
            done: 100 << 20,
            total: 400 << 20,
            rate: (100 << 20) as f64,
        };
        assert_eq!(
            progress_text(&p),
            (
                "restore",
                "100.0 MiB/400.0 MiB · 100.0 MiB/s · ETA 3s".into()
            )
        );
        let p = Progress {
            kind: ProgressKind::Prefill,
            done: 1024,
            total: 4096,
            rate: 40.0,
        };
        assert_eq!(
            progress_text(&p),
            (
                "prefill",
                "1,024/4,096 tokens · 40 tok/s · ETA 1m17s".into()
            )
        );
    }
}
