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
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
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

/// `text` with each absolute path cut to its last two components (`.../objects/ab`): an
/// error a client sees says what failed without telling it the server's folders.
pub fn without_paths(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('/') {
        let starts_path = rest[..at]
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || "\"'`([{=<".contains(c));
        if !starts_path {
            out.push_str(&rest[..=at]);
            rest = &rest[at + 1..];
            continue;
        }
        out.push_str(&rest[..at]);
        let path_len = rest[at..]
            .find(|c: char| c.is_whitespace() || "\"'`)]}>,;".contains(c))
            .unwrap_or(rest.len() - at);
        let mut path = &rest[at..at + path_len];
        // A colon or period that ends the path ends its sentence instead.
        let trailing = path.len() - path.trim_end_matches([':', '.']).len();
        path = &path[..path.len() - trailing];
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        let tail = parts[parts.len().saturating_sub(2)..].join("/");
        out.push_str(if parts.len() > 2 { ".../" } else { "/" });
        out.push_str(&tail);
        rest = &rest[at + path_len - trailing..];
    }
    out.push_str(rest);
    out
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

    #[test]
    fn without_paths_keeps_the_last_two_components_only() {
        assert_eq!(
            without_paths("cannot create /root/.cache/kvrun/kv/objects/ab: Not a directory"),
            "cannot create .../objects/ab: Not a directory"
        );
        assert_eq!(
            without_paths("writing '/home/u/x/sessions/s1/manifest.json.tmp' failed."),
            "writing '.../s1/manifest.json.tmp' failed."
        );
        assert_eq!(without_paths("at /tmp."), "at /tmp.");
        assert_eq!(without_paths("3/4 pages, a/b"), "3/4 pages, a/b");
        assert_eq!(without_paths("no paths here"), "no paths here");
    }
}
