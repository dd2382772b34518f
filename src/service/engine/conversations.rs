//! The engine's conversations: one it has open ([`Open`]), one on disk it may open
//! ([`StoredLog`]), and the part of the engine that holds them ([`Conversations`]).
//!
//! A conversation here is a persisted session the engine serves requests into; a front
//! end's messages and their rendering are a [`crate::dialogue::Dialogue`].

use std::collections::HashSet;
use std::time::Instant;

use crate::clock::unix_now;
use crate::llama::{Context, TokenId};
use crate::sequence::Sequence;
use crate::session::live::LiveSession;
use crate::tiers::evict::{self, Residency};

/// A session this server has open: it holds the lock until shutdown or removal.
pub struct Open<'c> {
    pub live: LiveSession<'c>,
    /// The token log; its KV is in the context only while `hot` is set.
    pub seq: Sequence,
    /// The context sequence holding its cells: [`Conversations`] alone moves it.
    hot: Option<i32>,
    /// A client named it (else it has a generated name and is collected first).
    pub named: bool,
    pub pinned: bool,
    /// Tokens of the log the last prompt covered: a prompt that extends at least this far
    /// continues this conversation.
    pub prompt_len: usize,
    pub last_used: Instant,
    pub last_used_unix: u64,
    /// A request of this conversation is decoding; the next one waits for it. Set and
    /// cleared by [`Conversations::begin_request`] and [`Conversations::end_request`].
    busy: bool,
    /// Warnings of the saves that ended its requests, for the client's
    /// next Save: a chat and `run --session` show them. At most [`MAX_UNHEARD_WARNINGS`].
    pub unheard_warnings: Vec<String>,
}

impl<'c> Open<'c> {
    /// A conversation just opened: out of the context, idle, used now.
    pub fn new(
        live: LiveSession<'c>,
        seq: Sequence,
        named: bool,
        pinned: bool,
        prompt_len: usize,
    ) -> Self {
        Self {
            live,
            seq,
            hot: None,
            named,
            pinned,
            prompt_len,
            last_used: Instant::now(),
            last_used_unix: unix_now(),
            busy: false,
            unheard_warnings: Vec::new(),
        }
    }

    /// The context sequence holding its cells, if it is in the context.
    pub fn hot(&self) -> Option<i32> {
        self.hot
    }

    /// A request of this conversation is decoding.
    pub fn is_busy(&self) -> bool {
        self.busy
    }
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
///
/// The open ones are reached by index (`conversations[i]`); an index is good until the next
/// [`Conversations::close`] or [`Conversations::close_all`].
#[derive(Default)]
pub struct Conversations<'c> {
    /// Sessions this server has open (and holds the locks of), hot or not.
    open: Vec<Open<'c>>,
    /// Unnamed sessions on disk not opened yet: an anonymous prompt may continue one.
    stored_unnamed: Vec<StoredLog>,
    /// Members of the families requests named, on disk and not opened yet.
    stored_members: Vec<StoredLog>,
    /// Families whose stored members are in `stored_members` (read once each).
    indexed_families: HashSet<String>,
}

impl<'c> std::ops::Index<usize> for Conversations<'c> {
    type Output = Open<'c>;
    fn index(&self, index: usize) -> &Open<'c> {
        &self.open[index]
    }
}

impl<'c> std::ops::IndexMut<usize> for Conversations<'c> {
    fn index_mut(&mut self, index: usize) -> &mut Open<'c> {
        &mut self.open[index]
    }
}

impl<'c> Conversations<'c> {
    /// Open conversations.
    pub fn len(&self) -> usize {
        self.open.len()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Open<'c>> {
        self.open.iter()
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, Open<'c>> {
        self.open.iter_mut()
    }

    /// Adds a conversation just opened and returns its index.
    pub fn add(&mut self, open: Open<'c>) -> usize {
        self.open.push(open);
        self.open.len() - 1
    }

    /// Takes conversation `index` out of the context and closes it (dropping it waits for
    /// its own commits before its lock goes). Later indices move down by one.
    pub fn close(&mut self, ctx: &mut Context<'_>, index: usize) {
        self.cool(ctx, index);
        self.open.remove(index);
    }

    /// Closes every conversation (at shutdown, once every commit has landed).
    pub fn close_all(&mut self) {
        self.open.clear();
    }

    /// Conversation `index` holds sequence `seq` (its cells are in the context now).
    pub fn place(&mut self, index: usize, seq: i32) {
        self.open[index].hot = Some(seq);
    }

    /// A request of conversation `index` begins decoding in sequence `seq`.
    pub fn begin_request(&mut self, index: usize, seq: i32) {
        self.place(index, seq);
        self.open[index].busy = true;
    }

    /// Conversation `index`'s request ended (or never began): the next one may start.
    pub fn end_request(&mut self, index: usize) {
        self.open[index].busy = false;
    }

    /// Unnamed sessions on disk not opened yet.
    pub fn stored_unnamed(&self) -> &[StoredLog] {
        &self.stored_unnamed
    }

    /// Stored members of the families indexed so far, not opened yet.
    pub fn stored_members(&self) -> &[StoredLog] {
        &self.stored_members
    }

    /// Notes an unnamed session on disk that an anonymous prompt may continue.
    pub fn note_stored_unnamed(&mut self, log: StoredLog) {
        self.stored_unnamed.push(log);
    }

    /// Notes a family member on disk that a request of its family may continue.
    pub fn note_stored_member(&mut self, log: StoredLog) {
        self.stored_members.push(log);
    }

    /// Takes stored unnamed session `j` out of the index (it is being opened).
    pub fn take_stored_unnamed(&mut self, j: usize) -> StoredLog {
        self.stored_unnamed.remove(j)
    }

    /// Takes stored member `j` out of the index (it is being opened).
    pub fn take_stored_member(&mut self, j: usize) -> StoredLog {
        self.stored_members.remove(j)
    }

    /// Session `name` is no longer only on disk (opened, or removed).
    pub fn forget_stored(&mut self, name: &str) {
        self.stored_unnamed.retain(|s| s.name != name);
        self.stored_members.retain(|s| s.name != name);
    }

    /// Records that a stored session was pinned or unpinned on disk.
    pub fn set_stored_pinned(&mut self, name: &str, pinned: bool) {
        for s in self.stored_unnamed.iter_mut().filter(|s| s.name == name) {
            s.pinned = pinned;
        }
    }

    /// Marks `family` indexed; false when it was already (its members are read once).
    pub fn mark_family_indexed(&mut self, family: &str) -> bool {
        self.indexed_families.insert(family.to_string())
    }

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
