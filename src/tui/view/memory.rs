//! The memory panel: the three devices (VRAM per GPU or "no GPU", RAM with kvrun's share,
//! NVMe with the store's), then one gauge per tier (hot, warm, cold) against its budget and
//! where it lives, then pages, hits and the last move. The hot tier's budget is the
//! context's cells. On a small screen it collapses to one summary line.

use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

use super::super::app::App;
use super::widgets::compact_count;
use crate::chat::protocol::{MemorySnapshot, TierUsage};
use crate::format::{human_bytes, thousands};

const HOT: Color = Color::Red;
const WARM: Color = Color::Yellow;
const COLD: Color = Color::Blue;
const DEVICE: Color = Color::Cyan;
/// The widest gauge label ("pages", "VRAM", "NVMe", "warm") and a space, as `labelled`'s.
const LABEL_WIDTH: usize = 6;

/// Rows the panel wants (with its border) at `width` inner columns.
pub(super) fn height(app: &App, width: u16) -> u16 {
    lines(app, width).len() as u16 + 2
}

pub(super) fn draw_panel(frame: &mut Frame, area: Rect, app: &App) {
    let block = Block::bordered()
        .border_style(Style::new().fg(Color::DarkGray))
        .title(" memory ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(Paragraph::new(lines(app, inner.width)), inner);
}

fn lines(app: &App, width: u16) -> Vec<Line<'static>> {
    let Some(m) = &app.memory else {
        return vec![Line::styled(
            "waiting for the chat thread…",
            Style::new().fg(Color::DarkGray),
        )];
    };
    // "NVMe  " + bar + " 100%"
    let bar_width = width.saturating_sub(LABEL_WIDTH as u16 + 5).max(4) as usize;
    let mut out = vec![heading("devices")];

    // The three devices, always: VRAM (each GPU, or none), RAM, NVMe.
    if m.gpus.is_empty() {
        out.push(labelled("VRAM", "no GPU".to_string()));
    }
    for gpu in &m.gpus {
        let used = gpu.total_bytes.saturating_sub(gpu.free_bytes);
        out.push(bar("VRAM", used, gpu.total_bytes, bar_width, DEVICE));
        out.push(detail(gpu.name.chars().take(28).collect()));
        out.push(detail(format!(
            "{} used of {}",
            human_bytes(used),
            human_bytes(gpu.total_bytes)
        )));
    }
    let ram_used = m.ram_total_bytes.saturating_sub(m.ram_available_bytes);
    out.push(bar("RAM", ram_used, m.ram_total_bytes, bar_width, DEVICE));
    out.push(detail(format!(
        "kvrun {} · used {} of {}",
        short_bytes(m.process_rss_bytes),
        short_bytes(ram_used),
        short_bytes(m.ram_total_bytes)
    )));
    let disk_used = m.disk_total_bytes.saturating_sub(m.disk_free_bytes);
    out.push(bar(
        "NVMe",
        disk_used,
        m.disk_total_bytes,
        bar_width,
        DEVICE,
    ));
    out.push(detail(format!(
        "store {} · {} free of {}",
        short_bytes(m.cold.used_bytes),
        short_bytes(m.disk_free_bytes),
        short_bytes(m.disk_total_bytes)
    )));

    // The tiers, each on its device, against its budget.
    out.push(heading("tiers"));
    // The hot tier's budget is the context's cells; its gauge is their share in use.
    out.push(bar("hot", m.hot_cells_used, m.hot_cells, bar_width, HOT));
    let hot_device = if m.gpus.is_empty() { "RAM" } else { "VRAM" };
    out.push(detail(format!(
        "in {hot_device} · {} of {} cells",
        thousands(m.hot_cells_used),
        thousands(m.hot_cells)
    )));
    // An elastic context (`--ctx-size auto`) holds what its tokens need and grows to this.
    if m.hot_cells_ceiling > m.hot_cells {
        out.push(detail(format!(
            "allocated; grows to {}",
            thousands(m.hot_cells_ceiling)
        )));
    }
    // In bytes the budget is only known once cells hold tokens (bytes per cell vary by model).
    out.push(match m.hot.budget_bytes {
        Some(_) => used_of_budget(&m.hot),
        None => detail(format!("{} in use", human_bytes(m.hot.used_bytes))),
    });
    out.push(gauge("warm", &m.warm, m.ram_total_bytes, bar_width, WARM));
    out.push(detail(format!("in RAM · {}", short_budget(&m.warm))));
    out.push(gauge("cold", &m.cold, m.disk_total_bytes, bar_width, COLD));
    out.push(detail(format!("on NVMe · {}", short_budget(&m.cold))));

    // A server's models against the one budget they share (`kvrun top`).
    if !m.models.is_empty() {
        out.push(heading("models"));
        let used: u64 = m.models.iter().map(|r| r.bytes).sum();
        out.push(bar("budget", used, m.model_budget_bytes, bar_width, DEVICE));
        out.push(detail(format!(
            "{} of {}",
            short_bytes(used),
            short_bytes(m.model_budget_bytes)
        )));
        for row in &m.models {
            let name: String = row.id.chars().take(24).collect();
            let what = match (row.state.as_str(), row.idle_secs) {
                ("loaded", Some(idle)) => format!("{} idle {idle}s", short_bytes(row.bytes)),
                ("loaded", None) => format!("{} busy", short_bytes(row.bytes)),
                (state, _) => state.to_string(),
            };
            out.push(detail(format!("{name} {what}")));
        }
    }
    out.push(labelled(
        "pages",
        format!(
            "hot {} · warm {} · cold {}",
            thousands(m.hot.pages),
            thousands(m.warm.pages),
            thousands(m.cold.pages)
        ),
    ));
    out.push(labelled(
        "hits",
        format!(
            "hot {} · warm {} · cold {}",
            compact_count(m.hot.hit_tokens),
            compact_count(m.warm.hit_tokens),
            compact_count(m.cold.hit_tokens),
        ),
    ));
    out.push(labelled(
        "",
        format!("prefill {} tokens", compact_count(m.prefill_tokens)),
    ));
    if let Some(last) = &m.last_move {
        // The last move is the panel's story ("18,432 tokens promoted cold→hot in 412 ms"):
        // wrap it rather than clip it.
        let avail = (width as usize).saturating_sub(6).max(8);
        for (i, row) in super::widgets::wrap(&super::widgets::sanitize(last), avail)
            .into_iter()
            .enumerate()
        {
            out.push(labelled(if i == 0 { "last" } else { "" }, row));
        }
    }
    out
}

fn heading(text: &str) -> Line<'static> {
    Line::styled(
        text.to_string(),
        Style::new()
            .fg(Color::DarkGray)
            .add_modifier(Modifier::BOLD),
    )
}

fn labelled(label: &str, text: String) -> Line<'static> {
    Line::from(vec![
        Span::styled(
            format!("{label:<6}"),
            Style::new().add_modifier(Modifier::BOLD),
        ),
        Span::raw(text),
    ])
}

fn detail(text: String) -> Line<'static> {
    Line::from(format!("     {text}"))
}

/// "1.0 GiB / 4.0 GiB budget", or "1.0 GiB, no budget".
fn used_of_budget(tier: &TierUsage) -> Line<'static> {
    detail(match tier.budget_bytes {
        Some(b) => format!(
            "{} / {} budget",
            human_bytes(tier.used_bytes),
            human_bytes(b)
        ),
        None => format!("{}, no budget", human_bytes(tier.used_bytes)),
    })
}

/// "1.0G / 4.0G budget", or "1.0G, no budget": short, after the tier's device.
fn short_budget(tier: &TierUsage) -> String {
    match tier.budget_bytes {
        Some(b) => format!(
            "{} / {} budget",
            short_bytes(tier.used_bytes),
            short_bytes(b)
        ),
        None => format!("{}, no budget", short_bytes(tier.used_bytes)),
    }
}

/// A bar of `used` against `total`.
fn bar(label: &str, used: u64, total: u64, width: usize, color: Color) -> Line<'static> {
    let usage = TierUsage {
        used_bytes: used,
        budget_bytes: Some(total),
        ..TierUsage::default()
    };
    gauge(label, &usage, total, width, color)
}

/// A bar of used against the budget (or the device when the tier has none) and the percent.
fn gauge(
    device: &str,
    tier: &TierUsage,
    device_bytes: u64,
    width: usize,
    color: Color,
) -> Line<'static> {
    let limit = tier.budget_bytes.unwrap_or(device_bytes);
    let ratio = if limit == 0 {
        0.0
    } else {
        (tier.used_bytes as f64 / limit as f64).clamp(0.0, 1.0)
    };
    let filled = (ratio * width as f64).round() as usize;
    // A tier in use never looks empty, however small its share.
    let filled = if tier.used_bytes > 0 {
        filled.max(1)
    } else {
        0
    };
    Line::from(vec![
        Span::styled(
            format!("{device:<LABEL_WIDTH$}"),
            Style::new().fg(color).add_modifier(Modifier::BOLD),
        ),
        Span::styled("█".repeat(filled), Style::new().fg(color)),
        Span::styled(
            "░".repeat(width.saturating_sub(filled)),
            Style::new().fg(Color::DarkGray),
        ),
        Span::raw(format!(" {:>3.0}%", ratio * 100.0)),
    ])
}

/// One line for a small screen: each tier's use and its share of the budget.
pub(super) fn draw_summary(frame: &mut Frame, area: Rect, app: &App) {
    let line = match &app.memory {
        None => Line::styled("memory: waiting…", Style::new().fg(Color::DarkGray)),
        Some(m) => summary(m, area.width),
    };
    frame.render_widget(Paragraph::new(line), area);
}

fn summary(m: &MemorySnapshot, width: u16) -> Line<'static> {
    let tier = |name: &str, t: &TierUsage, color: Color| {
        let share = match t.budget_bytes {
            Some(b) if b > 0 => format!(" {:.0}%", t.used_bytes as f64 * 100.0 / b as f64),
            _ => String::new(),
        };
        vec![
            Span::styled(format!("{name} "), Style::new().fg(color)),
            Span::raw(format!("{}{share} ", short_bytes(t.used_bytes))),
        ]
    };
    let mut spans = tier("hot", &m.hot, HOT);
    spans.extend(tier("warm", &m.warm, WARM));
    spans.extend(tier("cold", &m.cold, COLD));
    let mut line = Line::from(spans);
    // Where the hot tier lives, when there is room to say it.
    if m.gpus.is_empty() && line.width() + 7 <= width as usize {
        line.spans
            .insert(1, Span::styled("(RAM) ", Style::new().fg(HOT)));
    }
    line
}

/// "1.5G", "512M", "24G": bytes in at most four characters.
fn short_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "K", "M", "G", "T"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value < 10.0 && unit > 0 {
        format!("{value:.1}{}", UNITS[unit])
    } else {
        format!("{value:.0}{}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_bytes_fit_four_chars() {
        assert_eq!(short_bytes(512), "512B");
        assert_eq!(short_bytes(1536 * 1024 * 1024), "1.5G");
        assert_eq!(short_bytes(512 * 1024 * 1024), "512M");
        assert_eq!(short_bytes(24 * 1024 * 1024 * 1024), "24G");
    }

    #[test]
    fn gauge_never_hides_a_used_tier() {
        let t = TierUsage {
            used_bytes: 1,
            budget_bytes: Some(1 << 40),
            ..Default::default()
        };
        let text: String = gauge("warm", &t, 0, 10, WARM)
            .spans
            .iter()
            .map(|s| s.content.as_ref())
            .collect();
        assert_eq!(text, "warm  █░░░░░░░░░   0%");
    }
}
