//! Number formats shared by every front end (the CLI, the TUI) and the engines' notes, and
//! the one-line form of an error: pure functions, so a figure or an error reads the same
//! wherever it is shown.

/// Human units for byte counts (binary prefixes).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// 18432 → "18,432".
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// An error and its causes on one line, `outer: inner: root`, each cause once (the line a
/// CLI prints, and the message an API error carries).
pub fn one_line_of(err: &(dyn std::error::Error + 'static)) -> String {
    let mut line = String::new();
    let chain = std::iter::successors(Some(err), |e| e.source());
    for cause in chain {
        let text = cause.to_string().replace('\n', " ");
        if line.contains(text.trim()) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text.trim());
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(thousands(18432), "18,432");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1_000_000), "1,000,000");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
