//! The messages between the service engine and its clients. Nothing here names llama.cpp,
//! HTTP or a terminal: the server's API layers translate their wire formats to and from
//! these types.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use tokio::sync::mpsc::UnboundedSender;

use crate::llama::{ChatMessage, Grammar, TokenId, TokenLogprob};
use crate::session::live::ConversationState;
use crate::session::CacheMiss;
use crate::settings::SamplingSettings;
use crate::template::TemplateIdentity;

/// Unique per process; the API layers derive their response ids from it.
pub type RequestId = u64;

/// Which conversation (and so which persisted session) a request belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConversationKey {
    /// This session, exactly (a chat, `run --session`): a prompt that leaves its log cuts
    /// the log back to where they part.
    Named(String),
    /// A client's key (a session-id header, `prompt_cache_key`, `metadata.user_id`, ...),
    /// which names a family of conversations ([`crate::session::family`]): the request
    /// continues the member whose log its prompt extends, or starts a new member. Every
    /// member is a kept session.
    Family(String),
    /// No name: the engine finds the conversation by content (the longest cached prefix),
    /// or starts one under a generated name that is collected first under the cold budget.
    Anonymous,
}

/// What a chat front end keeps with a conversation's log: its messages and how the chat
/// template rendered them. The HTTP APIs send none (their clients keep the messages), so
/// their sessions record only the log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transcript {
    pub messages: Vec<ChatMessage>,
    /// Length of the template's rendering of `messages` (without the reply's opener).
    pub rendered_len: usize,
    /// Plain text, no chat template.
    pub raw: bool,
    /// Where the last turn's prompt stopped extending the log, if it did.
    pub cache_miss: Option<CacheMiss>,
}

impl Transcript {
    /// The log of a client that keeps no messages (the HTTP APIs).
    pub fn raw() -> Self {
        Self {
            raw: true,
            ..Self::default()
        }
    }

    /// As a session save records it, with the template that rendered the turns.
    pub fn state(&self, template: Option<TemplateIdentity>) -> ConversationState<'_> {
        ConversationState {
            messages: &self.messages,
            rendered_len: self.rendered_len,
            raw: self.raw,
            template,
            cache_miss: self.cache_miss.as_ref(),
        }
    }
}

/// Stops a request's generation within one token. Dropping the reply receiver (a client
/// that disconnected) cancels too: the engine treats a failed send as a cancel.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    /// A token raised whenever `flag` is (a chat's Ctrl-C flag, shared with its requests).
    pub fn watching(flag: Arc<AtomicBool>) -> Self {
        Self(flag)
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// What a front end asks the engine to generate: continue `prompt` (already rendered and
/// tokenized by the caller) in `conversation`, so long and so sampled. The API layers build
/// one per request; [`Request`] adds what the engine needs to answer it.
#[derive(Debug, Clone)]
pub struct Ask {
    pub conversation: ConversationKey,
    /// The whole prompt, from the first token: the engine restores the longest cached
    /// prefix of it from any tier and prefills only the rest.
    pub prompt: Vec<TokenId>,
    pub sampling: SamplingSettings,
    /// The most tokens to generate (the caller has already capped it by the context); 0
    /// prefills the prompt and samples nothing.
    pub max_tokens: usize,
    /// Generation stops when the text ends with one of these; the stop text is not sent.
    pub stop: Vec<String>,
    /// A grammar the reply must match: a tool call or a JSON schema.
    pub grammar: Option<ReplyGrammar>,
    /// Report log-probabilities with this many alternatives.
    pub logprobs: Option<usize>,
    /// The chat template that rendered `prompt` (`None` for plain text): the session
    /// records it.
    pub template: Option<TemplateIdentity>,
}

impl Ask {
    /// Up to `max_tokens` of reply to `prompt` in `conversation`: greedy, with no stop
    /// strings, grammar, log-probabilities or template until a `with_…` says otherwise.
    /// Every front end builds its asks here, so a new field has one default.
    pub fn new(conversation: ConversationKey, prompt: Vec<TokenId>, max_tokens: usize) -> Self {
        Self {
            conversation,
            prompt,
            sampling: SamplingSettings::greedy(),
            max_tokens,
            stop: Vec::new(),
            grammar: None,
            logprobs: None,
            template: None,
        }
    }

    pub fn with_sampling(mut self, sampling: SamplingSettings) -> Self {
        self.sampling = sampling;
        self
    }

    pub fn with_stop(mut self, stop: Vec<String>) -> Self {
        self.stop = stop;
        self
    }

    pub fn with_grammar(mut self, grammar: Option<ReplyGrammar>) -> Self {
        self.grammar = grammar;
        self
    }

    pub fn with_logprobs(mut self, logprobs: Option<usize>) -> Self {
        self.logprobs = logprobs;
        self
    }

    pub fn with_template(mut self, template: Option<TemplateIdentity>) -> Self {
        self.template = template;
        self
    }
}

/// One generation as the engine takes it: the [`Ask`], and its id, reply channel and
/// cancel token.
#[derive(Debug)]
pub struct Request {
    pub id: RequestId,
    pub ask: Ask,
    /// The messages to record with the log when the reply is saved (`None`: a raw log).
    pub transcript: Option<Transcript>,
    /// Send [`Reply::Progress`] while the prompt is prefilled.
    pub progress: bool,
    pub cancel: CancelToken,
    pub replies: UnboundedSender<Reply>,
    /// When the front end received the request (queue time counts from here).
    pub received: Instant,
    /// Send `Done` only once the reply's save is durable, with its outcome in
    /// [`Usage::saved`] (`serve --durability before`): a client that has read the end of
    /// a reply can count on the turn surviving a crash. Tokens stream as they come either
    /// way.
    pub save_before_done: bool,
}

/// A grammar a reply must match: GBNF for a JSON schema, Lark (llguidance) for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplyGrammar {
    pub grammar: Grammar,
    /// Lazy: the reply is free until it contains this text, and the grammar (which starts
    /// with it) holds from there: `tool_choice: auto` with a format whose calls open
    /// distinctively.
    pub after: Option<String>,
}

impl ReplyGrammar {
    /// The whole reply must match (a forced tool call, a JSON schema).
    pub fn forced(grammar: Grammar) -> Self {
        Self {
            grammar,
            after: None,
        }
    }
}

/// What the engine sends back for one request, in this order: `Started`, any number of
/// `Progress` (only when the request asked), any number of `Token`s, then exactly one of
/// `Done` or `Failed`.
#[derive(Debug, Clone)]
pub enum Reply {
    /// The prompt's cached prefix is restored and prefill begins.
    Started(Started),
    /// `done` of the `total` prompt tokens to prefill are in the cache.
    Progress {
        done: usize,
        total: usize,
    },
    /// One sampled token and the text it completes (may be empty mid-UTF-8).
    Token(TokenPiece),
    Done(Usage),
    Failed(ServiceError),
}

#[derive(Debug, Clone, Serialize)]
pub struct Started {
    /// The session this conversation is persisted as.
    pub session: String,
    pub prompt_tokens: usize,
    pub cached: CachedTokens,
}

#[derive(Debug, Clone)]
pub struct TokenPiece {
    pub id: TokenId,
    pub text: String,
    pub logprob: Option<TokenLogprob>,
}

/// Prompt tokens served from each tier instead of being prefilled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct CachedTokens {
    /// Already in the context (this conversation's or another's sequence).
    pub hot: usize,
    /// Restored from pages in RAM.
    pub warm: usize,
    /// Restored from pages on disk.
    pub cold: usize,
}

impl CachedTokens {
    pub fn total(&self) -> usize {
        self.hot + self.warm + self.cold
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model ended its turn (an end-of-generation token).
    EndOfGeneration,
    /// One of the request's stop strings matched.
    StopString,
    MaxTokens,
    ContextFull,
    /// Cancelled by the client (or its disconnect) or by shutdown.
    Cancelled,
}

#[derive(Debug, Clone, Serialize)]
pub struct Usage {
    pub session: String,
    pub prompt_tokens: usize,
    pub cached: CachedTokens,
    /// Prompt tokens decoded by this request (not served from a tier).
    pub prefilled: usize,
    pub generated: usize,
    /// The generated token ids as the log holds them, an end-of-generation token included
    /// (it sends no text, so no `Token` carries it).
    pub tokens: Vec<TokenId>,
    pub finish: FinishReason,
    /// The stop string that ended the reply (Anthropic's `stop_sequence`).
    pub stop_sequence: Option<String>,
    /// From `received` until the engine took the request.
    pub queued: Duration,
    /// Restore plus prefill, until the first token was sampled.
    pub time_to_first_token: Duration,
    pub decode: Duration,
    /// How the reply's save ended, for a request that waited for it
    /// ([`Request::save_before_done`]); `None` when `Done` did not wait.
    pub saved: Option<SaveStatus>,
}

/// The outcome of the save that ends a reply, as its client hears it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SaveStatus {
    /// The token log and manifest are durable.
    Saved,
    /// The save failed (the session's previous save is intact); one line, with no
    /// absolute path in it.
    Failed(String),
}

/// Why a request failed; the API layers map each variant to a status code.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ServiceError {
    #[error(
        "the prompt is {tokens} tokens, and the context holds {n_ctx} (with room for a reply)"
    )]
    PromptTooLong { tokens: usize, n_ctx: usize },
    #[error("the prompt is empty")]
    EmptyPrompt,
    #[error("token id {0} is outside the model's vocabulary")]
    BadToken(TokenId),
    /// A sampling setting outside its range (the message names it and the range).
    #[error("{0}")]
    InvalidSetting(String),
    #[error("the grammar was refused: {0}")]
    Grammar(String),
    #[error("too many requests are waiting ({0}); retry shortly")]
    QueueFull(usize),
    #[error("session '{name}' is in use by another process: {detail}")]
    SessionInUse { name: String, detail: String },
    #[error("session '{name}' cannot be used with this server: {detail}")]
    Incompatible { name: String, detail: String },
    /// A session operation the catalog refused: an invalid name, a name already taken.
    #[error("{0}")]
    Refused(String),
    #[error("the server is shutting down")]
    ShuttingDown,
    #[error("{0}")]
    Internal(String),
}
