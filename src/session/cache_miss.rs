//! The "why did this miss" record a session keeps: where a turn's prompt stopped extending
//! the previous one. Written into manifests, so it belongs to the session's data, below the
//! conversation that finds it.

/// Where a turn's prompt stopped extending the previous one, and why (the "why did this
/// miss" diagnostic; sessions keep the last one).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CacheMiss {
    /// The first diverging token of the log (tokens before it match).
    pub position: usize,
    /// Byte offset of the divergence in the prompt text.
    pub byte: usize,
    /// The previous rendering around the divergence, and the new one.
    pub before: String,
    pub after: String,
    pub reason: MissReason,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissReason {
    /// The template renders earlier turns differently once another follows (some drop
    /// reasoning from history): a server that re-renders each request misses its cache
    /// from here. kvrun keeps the earlier turns as first rendered (the token log is the
    /// truth), so its KV still hits.
    HistoryRewritten,
    /// The session was rendered again with another chat template: its cache holds only
    /// the pages before this point.
    TemplateChanged,
}

impl std::fmt::Display for MissReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::HistoryRewritten => {
                "the chat template renders earlier turns differently once another follows"
            }
            Self::TemplateChanged => "the session was rendered again with another chat template",
        })
    }
}
