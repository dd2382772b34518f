//! How long an idle model stays loaded: Ollama's `keep_alive` (a request's field) and
//! `serve --keep-alive` (the default).

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepAlive {
    /// Never unloaded for idling (`-1`); the memory budget may still unload it.
    Forever,
    /// Unloaded once idle this long (`0`: as soon as its last request ends).
    For(Duration),
}

impl KeepAlive {
    /// `5m`, `300` (seconds), `0`, or any negative number (`-1`, `-1s`) for forever.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        if t.starts_with('-') {
            return Ok(KeepAlive::Forever);
        }
        crate::tiers::parse_duration(t).map(KeepAlive::For)
    }

    /// A request's `keep_alive`: a duration string or a number of seconds (negative:
    /// forever); `null` or absent leaves the server's default.
    pub fn from_json(value: Option<&serde_json::Value>) -> Result<Option<Self>, String> {
        match value {
            None | Some(serde_json::Value::Null) => Ok(None),
            Some(serde_json::Value::Number(n)) => match n.as_f64() {
                Some(s) if s < 0.0 => Ok(Some(KeepAlive::Forever)),
                Some(s) if s.is_finite() && s < 1e12 => {
                    Ok(Some(KeepAlive::For(Duration::from_secs_f64(s))))
                }
                _ => Err(format!("keep_alive {n} is not a number of seconds")),
            },
            Some(serde_json::Value::String(s)) => Self::parse(s).map(Some),
            Some(other) => Err(format!(
                "keep_alive must be a duration such as \"5m\" or a number of seconds, not {other}"
            )),
        }
    }

    /// Whether a model idle for `idle` has outstayed this.
    pub fn expired(&self, idle: Duration) -> bool {
        match self {
            KeepAlive::Forever => false,
            KeepAlive::For(d) => idle >= *d,
        }
    }
}

impl std::fmt::Display for KeepAlive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeepAlive::Forever => f.write_str("-1"),
            KeepAlive::For(d) => write!(f, "{}s", d.as_secs()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ollama_forms_parse() {
        assert_eq!(KeepAlive::parse("-1"), Ok(KeepAlive::Forever));
        assert_eq!(KeepAlive::parse("0"), Ok(KeepAlive::For(Duration::ZERO)));
        assert_eq!(
            KeepAlive::parse("5m"),
            Ok(KeepAlive::For(Duration::from_secs(300)))
        );
        assert!(KeepAlive::parse("soon").is_err());
        let j = |v| KeepAlive::from_json(Some(&v));
        assert_eq!(j(json!(0)), Ok(Some(KeepAlive::For(Duration::ZERO))));
        assert_eq!(j(json!(-1)), Ok(Some(KeepAlive::Forever)));
        assert_eq!(
            j(json!("10s")),
            Ok(Some(KeepAlive::For(Duration::from_secs(10))))
        );
        assert_eq!(j(json!(null)), Ok(None));
        assert!(j(json!(true)).is_err());
        assert!(KeepAlive::For(Duration::ZERO).expired(Duration::ZERO));
        assert!(!KeepAlive::Forever.expired(Duration::MAX));
    }
}
