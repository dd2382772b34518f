//! One session as a list shows it ([`SessionRow`]): the server's `/v1/kvrun/sessions`,
//! `kvrun sessions --remote` reading that back, and a chat's sessions pane. It lives here,
//! below the service and every front end, so that all of them use this one type.

use serde::{Deserialize, Serialize};

use super::catalog::SessionSummary;
use crate::tiers::Tier;

/// A session: what the catalog knows of it, and how the service holding it sees it.
///
/// On the wire it is the summary's fields, then `tier`, `served`, `named` and `pinned`;
/// `last_used_unix` and `active` are a front end's own and are not sent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionRow {
    #[serde(flatten)]
    pub summary: SessionSummary,
    /// Where its KV is now (the nearest tier holding it); a session no service has touched
    /// is cold.
    pub tier: Tier,
    /// A service has it open (and holds its lock).
    #[serde(default)]
    pub served: bool,
    #[serde(default)]
    pub named: bool,
    #[serde(default)]
    pub pinned: bool,
    /// Seconds since the Unix epoch that it was last used.
    #[serde(skip)]
    pub last_used_unix: u64,
    /// The session a chat is in now.
    #[serde(skip)]
    pub active: bool,
}

impl SessionRow {
    /// A row of `summary` in `tier`, last used when it was last saved.
    pub fn new(summary: SessionSummary, tier: Tier) -> Self {
        Self {
            last_used_unix: summary.updated_unix,
            summary,
            tier,
            ..Self::default()
        }
    }

    pub fn name(&self) -> &str {
        &self.summary.name
    }

    /// Length of its token log.
    pub fn tokens(&self) -> usize {
        self.summary.tokens
    }
}
