//! Ollama's replies: one JSON object per line (NDJSON) while streaming, or one object
//! whole. Chat chunks carry a `message`, generate chunks a `response`; the last chunk has
//! `done: true`, the finish and Ollama's counts and durations from kvrun's own figures,
//! and kvrun's session, cache and save under `kvrun`. A failure mid-stream is a line
//! `{"error": "..."}`, which Ollama's clients raise. A client that leaves drops the
//! producer's [`Generation`], which cancels the engine request.

use std::convert::Infallible;
use std::future::Future;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::llama::TokenId;
use crate::server::generation::{save_extension, Generation, Step};
use crate::server::render::ReplyReader;
use crate::service::protocol::{FinishReason, Usage};
use crate::tools::{ParsedCall, ReplyEvent};

/// Lines buffered between the producer and the connection.
const BUFFER: usize = 64;

/// The client went away.
pub struct Disconnected;

/// Where a producer writes its lines.
pub struct LineSink {
    tx: mpsc::Sender<Bytes>,
}

impl LineSink {
    pub async fn send(&self, value: &Value) -> Result<(), Disconnected> {
        let mut line = value.to_string().into_bytes();
        line.push(b'\n');
        self.tx.send(line.into()).await.map_err(|_| Disconnected)
    }
}

/// An `application/x-ndjson` response whose lines `produce` writes.
pub fn respond<F, Fut>(produce: F) -> Response
where
    F: FnOnce(LineSink) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(produce(LineSink { tx }));
    let body = Body::from_stream(ReceiverStream::new(rx).map(Ok::<_, Infallible>));
    ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response()
}

/// Which endpoint's chunks these are.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Chat,
    Generate,
}

/// What shaping a reply needs.
pub struct Shape {
    pub kind: Kind,
    /// The name the client asked for (Ollama answers with it).
    pub model: String,
    /// How to read the reply (calls and reasoning); `None` for raw text.
    pub reader: Option<ReplyReader>,
    /// When the request arrived, and how long its model took to be had.
    pub received: Instant,
    pub load: Duration,
    /// Generate's `context`: the prompt's tokens, to which the reply's are added.
    pub context: Option<Vec<TokenId>>,
}

/// A piece of a reply.
#[derive(Default)]
struct Piece {
    content: String,
    thinking: String,
    calls: Vec<ParsedCall>,
}

impl Piece {
    fn add(&mut self, event: ReplyEvent) {
        match event {
            ReplyEvent::Content(text) => self.content.push_str(&text),
            ReplyEvent::Reasoning(text) => self.thinking.push_str(&text),
            ReplyEvent::ToolCall(call) => self.calls.push(call),
        }
    }

    fn is_empty(&self) -> bool {
        self.content.is_empty() && self.thinking.is_empty() && self.calls.is_empty()
    }
}

/// Ollama's `tool_calls` entry: arguments as an object.
fn tool_call(call: &ParsedCall, index: usize) -> Value {
    json!({"id": call.id, "function": {
        "index": index, "name": call.name, "arguments": call.arguments,
    }})
}

/// Now, as Ollama's `created_at`.
pub fn timestamp() -> String {
    rfc3339(crate::clock::unix_nanos())
}

/// A time (nanoseconds since the Unix epoch) in RFC 3339, UTC, with nanoseconds.
pub fn rfc3339(nanos: u128) -> String {
    let secs = (nanos / 1_000_000_000) as i64;
    let whole = crate::template::time::strftime("%Y-%m-%dT%H:%M:%S", secs);
    format!("{whole}.{:09}Z", nanos % 1_000_000_000)
}

impl Shape {
    fn chunk(&self, piece: &Piece, calls_before: usize, done: bool) -> Value {
        let mut chunk = json!({"model": self.model, "created_at": timestamp()});
        match self.kind {
            Kind::Chat => {
                let mut message = json!({"role": "assistant", "content": piece.content});
                if !piece.thinking.is_empty() {
                    message["thinking"] = piece.thinking.clone().into();
                }
                if !piece.calls.is_empty() {
                    let calls = piece.calls.iter().enumerate();
                    let calls: Vec<Value> =
                        calls.map(|(i, c)| tool_call(c, calls_before + i)).collect();
                    message["tool_calls"] = calls.into();
                }
                chunk["message"] = message;
            }
            Kind::Generate => {
                chunk["response"] = piece.content.clone().into();
                if !piece.thinking.is_empty() {
                    chunk["thinking"] = piece.thinking.clone().into();
                }
            }
        }
        chunk["done"] = done.into();
        chunk
    }

    /// The last chunk's fields: the finish, Ollama's counts and durations (nanoseconds),
    /// and kvrun's session, cached and prefilled tokens and save.
    fn finish(&self, chunk: &mut Value, usage: &Usage) {
        let nanos = |d: Duration| d.as_nanos() as u64;
        chunk["done_reason"] = match usage.finish {
            FinishReason::MaxTokens | FinishReason::ContextFull => "length",
            _ => "stop",
        }
        .into();
        chunk["total_duration"] = nanos(self.received.elapsed()).into();
        chunk["load_duration"] = nanos(self.load).into();
        // As Ollama counts it: the prompt tokens evaluated, not those its cache served
        // (`kvrun.cached_tokens` says how many the store restored).
        chunk["prompt_eval_count"] = usage.prefilled.into();
        chunk["prompt_eval_duration"] = nanos(usage.time_to_first_token).into();
        chunk["eval_count"] = usage.generated.into();
        chunk["eval_duration"] = nanos(usage.decode).into();
        if let Some(prompt) = &self.context {
            let all: Vec<TokenId> = prompt.iter().chain(&usage.tokens).copied().collect();
            chunk["context"] = all.into();
        }
        let mut kvrun = save_extension(usage).unwrap_or_else(|| json!({"session": usage.session}));
        kvrun["cached_tokens"] = usage.cached.total().into();
        kvrun["prefilled_tokens"] = usage.prefilled.into();
        chunk["kvrun"] = kvrun;
    }

    /// The whole reply as one object.
    pub async fn whole(
        &self,
        generation: Generation,
    ) -> Result<(Value, Usage), crate::server::errors::ApiError> {
        let collected = generation.collect().await?;
        let mut piece = Piece::default();
        match &self.reader {
            Some(reader) => {
                let reply = reader.parse(&collected.text, CALL_ID_PREFIX);
                piece.content = reply.content;
                piece.thinking = reply.reasoning.unwrap_or_default();
                piece.calls = reply.tool_calls;
            }
            None => piece.content = collected.text,
        }
        let mut body = self.chunk(&piece, 0, true);
        self.finish(&mut body, &collected.usage);
        Ok((body, collected.usage))
    }

    /// Streams the reply, a line per token that shows (calls whole), then the last chunk.
    pub async fn stream(
        &self,
        sink: &LineSink,
        mut generation: Generation,
    ) -> Result<(), Disconnected> {
        let mut parser = self.reader.map(|r| r.parser());
        let mut calls = 0;
        let usage = loop {
            match generation.next().await {
                Ok(Step::Token(token)) => {
                    let mut piece = Piece::default();
                    match &mut parser {
                        Some(parser) => parser
                            .push(&token.text)
                            .into_iter()
                            .for_each(|e| piece.add(e)),
                        None => piece.content = token.text,
                    }
                    calls += self.send(sink, &mut piece, calls).await?;
                }
                Ok(Step::Done(usage)) => break usage,
                Err(e) => return sink.send(&e.ollama().body()).await,
            }
        };
        if let Some(parser) = parser {
            let mut piece = Piece::default();
            parser.finish().into_iter().for_each(|e| piece.add(e));
            self.send(sink, &mut piece, calls).await?;
        }
        let mut last = self.chunk(&Piece::default(), 0, true);
        self.finish(&mut last, &usage);
        sink.send(&last).await
    }

    /// Sends a piece that has anything in it, its calls given fresh ids; how many calls
    /// it held.
    async fn send(
        &self,
        sink: &LineSink,
        piece: &mut Piece,
        calls_before: usize,
    ) -> Result<usize, Disconnected> {
        if piece.is_empty() {
            return Ok(0);
        }
        for call in &mut piece.calls {
            call.id = crate::server::generation::response_id(CALL_ID_PREFIX);
        }
        sink.send(&self.chunk(piece, calls_before, false)).await?;
        Ok(piece.calls.len())
    }
}

const CALL_ID_PREFIX: &str = "call_";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(1_000_000_001), "1970-01-01T00:00:01.000000001Z");
        let t = timestamp();
        assert_eq!(t.len(), "2026-01-01T00:00:00.000000000Z".len(), "{t}");
        assert!(t.ends_with('Z') && t.as_bytes()[10] == b'T', "{t}");
    }
}
