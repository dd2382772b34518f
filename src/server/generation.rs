//! One generation through the service: submit, wait until the engine has taken the prompt
//! (so a refused request still gets a proper status code), then read its tokens. Dropping
//! a [`Generation`] (a client that went away) cancels it: the cancel token is set and the
//! reply receiver is dropped, which the engine treats as a cancel too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use axum::http::HeaderValue;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

use super::counters::ServerCounters;
use super::errors::ApiError;
use super::request_log::RequestLog;
use super::state::AppState;
use crate::llama::Grammar;
use crate::service::protocol::{
    Ask, CancelToken, ConversationKey, FinishReason, Reply, Request, RequestId, SaveStatus,
    Started, TokenPiece, Usage,
};
use crate::service::Lease;
use crate::settings::Durability;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A generation the engine has taken.
pub struct Generation {
    pub id: RequestId,
    pub started: Started,
    replies: UnboundedReceiver<Reply>,
    cancel: CancelToken,
    counters: Arc<ServerCounters>,
    /// The log line of the HTTP request that started it, told the usage at the end.
    log: Option<RequestLog>,
    /// Keeps its model loaded until the reply is read.
    _lease: Lease,
}

impl Drop for Generation {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// A finished generation, read whole.
#[derive(Debug, Clone)]
pub struct Collected {
    pub text: String,
    pub tokens: Vec<TokenPiece>,
    pub usage: Usage,
}

/// One step of a generation being read.
pub enum Step {
    Token(TokenPiece),
    Done(Usage),
}

/// Submits `ask` to `lease`'s model and waits for its engine to start it.
pub async fn start(state: &AppState, lease: &Lease, ask: Ask) -> Result<Generation, ApiError> {
    let (replies_tx, mut replies) = unbounded_channel();
    let cancel = CancelToken::new();
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let prompt_for_history = ask.prompt.clone();
    let family = match &ask.conversation {
        ConversationKey::Family(family) => Some(family.clone()),
        _ => None,
    };
    // llguidance's tables are built once per model, on first use (they walk the whole
    // vocabulary: half a second for Gemma 3's). Built here, off the engine thread, the first
    // request with tools does not stall the replies decoding beside it.
    if matches!(&ask.grammar, Some(g) if matches!(g.grammar, Grammar::Lark(_))) {
        let model = lease.model().clone();
        let _ = tokio::task::spawn_blocking(move || model.guidance().map(|_| ())).await;
    }
    lease.handle().submit(Request {
        id,
        ask,
        transcript: None,
        progress: false,
        cancel: cancel.clone(),
        replies: replies_tx,
        received: Instant::now(),
        save_before_done: state.durability == Durability::Before,
    })?;
    let started = match replies.recv().await {
        Some(Reply::Started(started)) => started,
        Some(Reply::Failed(e)) => return Err(e.into()),
        Some(other) => {
            return Err(ApiError::internal(format!(
                "the engine replied {other:?} before starting the request"
            )))
        }
        None => return Err(ApiError::internal("the engine dropped the request")),
    };
    state.prompts.observe(
        &started.session,
        family.as_deref(),
        &prompt_for_history,
        started.cached.total(),
        lease.model(),
        &state.counters,
    );
    Ok(Generation {
        id,
        started,
        replies,
        cancel,
        counters: state.counters.clone(),
        log: RequestLog::current(),
        _lease: lease.clone(),
    })
}

impl Generation {
    /// The next token, or the end.
    pub async fn next(&mut self) -> Result<Step, ApiError> {
        loop {
            return match self.replies.recv().await {
                Some(Reply::Token(piece)) => Ok(Step::Token(piece)),
                Some(Reply::Done(usage)) => {
                    self.counters.record_usage(&usage);
                    if let Some(log) = &self.log {
                        log.finished(&usage);
                    }
                    // A client that leaves drops its Generation, so a cancelled reply that
                    // is still read here was cut short by shutdown. Each API says so in its
                    // own error shape (an `error` event, `response.failed`, a 503), never
                    // as a reply that ended by itself.
                    if usage.finish == FinishReason::Cancelled {
                        return Err(ApiError::interrupted(&usage.session));
                    }
                    Ok(Step::Done(usage))
                }
                Some(Reply::Failed(e)) => Err(e.into()),
                // Sent only to requests that ask for it; none of the APIs does.
                Some(Reply::Progress { .. }) => continue,
                Some(Reply::Started(_)) => Err(ApiError::internal("the engine started twice")),
                None => Err(ApiError::internal("the engine dropped the request")),
            };
        }
    }

    /// Reads the whole reply.
    pub async fn collect(mut self) -> Result<Collected, ApiError> {
        let mut text = String::new();
        let mut tokens = Vec::new();
        loop {
            match self.next().await? {
                Step::Token(piece) => {
                    text.push_str(&piece.text);
                    tokens.push(piece);
                }
                Step::Done(usage) => {
                    return Ok(Collected {
                        text,
                        tokens,
                        usage,
                    })
                }
            }
        }
    }
}

/// A fresh id for a response object: `prefix` plus 24 hex digits, unique across restarts
/// (time, process and a counter hashed).
pub fn response_id(prefix: &str) -> String {
    let nanos = crate::clock::unix_nanos();
    let seed = format!(
        "{nanos}-{}-{}",
        std::process::id(),
        NEXT_ID.fetch_add(1, Ordering::Relaxed)
    );
    format!("{prefix}{}", &blake3::hash(seed.as_bytes()).to_hex()[..24])
}

/// Names the session a conversation is persisted as, in the `x-kvrun-session` header.
pub fn with_session_header(
    mut response: axum::response::Response,
    session: &str,
) -> axum::response::Response {
    if let Ok(value) = session.parse() {
        response.headers_mut().insert("x-kvrun-session", value);
    }
    response
}

/// For a reply that waited for its save (`--durability before`): `x-kvrun-save: ok` or
/// `failed`, and the failure's one line in `x-kvrun-save-error`.
pub fn with_save_headers(
    mut response: axum::response::Response,
    usage: &Usage,
) -> axum::response::Response {
    let headers = response.headers_mut();
    match &usage.saved {
        None => {}
        Some(SaveStatus::Saved) => {
            headers.insert("x-kvrun-save", HeaderValue::from_static("ok"));
        }
        Some(SaveStatus::Failed(reason)) => {
            headers.insert("x-kvrun-save", HeaderValue::from_static("failed"));
            // A header holds visible ASCII only.
            let ascii: String = reason
                .chars()
                .map(|c| {
                    if c.is_ascii_graphic() || c == ' ' {
                        c
                    } else {
                        '?'
                    }
                })
                .collect();
            if let Ok(value) = HeaderValue::from_str(&ascii) {
                headers.insert("x-kvrun-save-error", value);
            }
        }
    }
    response
}

/// What a stream's final event adds under `kvrun` for a reply that waited for its save (its
/// headers are long sent): `{"session", "saved", "save_error"?}`. SDKs ignore the field.
pub fn save_extension(usage: &Usage) -> Option<serde_json::Value> {
    let mut object = serde_json::json!({"session": usage.session});
    match usage.saved.as_ref()? {
        SaveStatus::Saved => object["saved"] = true.into(),
        SaveStatus::Failed(reason) => {
            object["saved"] = false.into();
            object["save_error"] = reason.as_str().into();
        }
    }
    Some(object)
}
