use crate::llama::TokenId;
use crate::sequence::Sequence;
use crate::session::live::LiveSession;
use std::time::Instant;

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
