//! The engine's conversations: one it has open ([`Open`]), one on disk it may open
//! ([`StoredLog`]), and the part of the engine that holds them ([`Conversations`]).

use std::collections::HashSet;
use std::time::Instant;

use crate::llama::{Context, TokenId};
use crate::sequence::Sequence;
use crate::session::live::LiveSession;
use crate::tiers::evict::{self, Residency};

/// A session this server has open: it holds the lock until shutdown or removal.
pub struct Open<'c> {
    pub live: LiveSession<'c>,
    /// The token log; its KV is in the context only while `hot` is set.
    pub seq: Sequence,
    /// The context sequence holding its cells.
    pub hot: Option<i32>,
    /// A client named it (else it has a generated name and is collected first).
    pub named: bool,
    pub pinned: bool,
    /// Tokens of the log the last prompt covered: a prompt that extends at least this far
    /// continues this conversation.
    pub prompt_len: usize,
    pub last_used: Instant,
    pub last_used_unix: u64,
    /// A request of this conversation is decoding; the next one waits for it.
    pub busy: bool,
    /// Warnings of the saves that ended its requests, for the client's
    /// next Save: a chat and `run --session` show them. At most [`MAX_UNHEARD_WARNINGS`].
    pub unheard_warnings: Vec<String>,
}

/// A client that never sends Save (the HTTP APIs) hears only the log's copy; these bound
/// what waits for one.
pub const MAX_UNHEARD_WARNINGS: usize = 8;

/// An unnamed session on disk this server has not opened.
pub struct StoredLog {
    pub name: String,
    pub tokens: Vec<TokenId>,
    pub prompt_tokens: usize,
    pub pinned: bool,
    pub updated_unix: u64,
}

/// Which conversation a request goes to.
pub enum Target {
    /// An open conversation (index into `conversations`).
    Open(usize),
    /// The conversation is busy with another request: wait.
    Busy,
}

/// The engine's conversations: those it has open (hot or not) and the sessions on disk a
/// prompt may continue. This part owns the hot tier's residency: which conversation holds
/// which context sequence. Its methods touch nothing else.
#[derive(Default)]
pub struct Conversations<'c> {
    /// Sessions this server has open (and holds the locks of), hot or not.
    pub open: Vec<Open<'c>>,
    /// Unnamed sessions on disk not opened yet: an anonymous prompt may continue one.
    pub stored_unnamed: Vec<StoredLog>,
    /// Members of the families requests named, on disk and not opened yet.
    pub stored_members: Vec<StoredLog>,
    /// Families whose stored members are in `stored_members` (read once each).
    pub indexed_families: HashSet<String>,
}

impl<'c> Conversations<'c> {
    pub fn find(&self, name: &str) -> Option<usize> {
        self.open.iter().position(|o| o.live.name == name)
    }

    /// The first of the context's `parallel` sequences no conversation holds.
    pub fn free_seq(&self, parallel: usize) -> Option<i32> {
        (0..parallel as i32).find(|s| self.open.iter().all(|o| o.hot != Some(*s)))
    }

    /// Takes conversation `index` out of the context (its pages were saved after its
    /// reply, so nothing is lost; a later request restores them from the warm tier).
    pub fn cool(&mut self, ctx: &mut Context<'_>, index: usize) {
        let open = &mut self.open[index];
        if let Some(seq) = open.hot.take() {
            ctx.clear_seq(seq);
        }
        open.seq = std::mem::take(&mut open.seq).forgotten();
    }

    /// The least recently used idle hot conversation other than `keep`.
    pub fn coolest(&self, keep: usize) -> Option<usize> {
        evict::coolest(&self.residency(), keep)
    }

    /// The open conversations as the hot tier's policy sees them.
    pub fn residency(&self) -> Vec<Residency> {
        self.open
            .iter()
            .map(|o| Residency {
                last_used: o.last_used,
                hot: o.hot.is_some(),
                busy: o.busy,
            })
            .collect()
    }

    /// Cells the hot sequences hold.
    pub fn hot_cells(&self) -> usize {
        self.open
            .iter()
            .filter(|o| o.hot.is_some())
            .map(|o| o.seq.kv_len())
            .sum()
    }
}
