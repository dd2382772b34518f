//! Server-sent events. A handler's producer runs as its own task and sends events into a
//! bounded channel that axum's [`Sse`] streams out. When the client disconnects, axum drops
//! the stream, the producer's next send fails, and the producer returns: that drops its
//! [`super::generation::Generation`], which cancels the engine request.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

/// Events buffered between the producer and the connection.
const BUFFER: usize = 64;
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The client went away.
#[derive(Debug)]
pub struct Disconnected;

/// Where a producer sends its events.
pub struct EventSink {
    tx: mpsc::Sender<Event>,
}

impl EventSink {
    pub async fn send(&self, event: Event) -> Result<(), Disconnected> {
        self.tx.send(event).await.map_err(|_| Disconnected)
    }

    /// `data: JSON` with no event name (OpenAI chat and completions chunks).
    pub async fn data(&self, value: &serde_json::Value) -> Result<(), Disconnected> {
        self.send(Event::default().data(value.to_string())).await
    }

    /// OpenAI's end of stream, `data: [DONE]`.
    pub async fn done(&self) -> Result<(), Disconnected> {
        self.send(Event::default().data("[DONE]")).await
    }

    /// `event: NAME` + `data: JSON` (Anthropic and Responses events).
    pub async fn named(&self, name: &str, value: &serde_json::Value) -> Result<(), Disconnected> {
        self.send(Event::default().event(name).data(value.to_string()))
            .await
    }
}

/// An SSE response whose events `produce` sends; it runs until it returns or the client
/// disconnects.
pub fn respond<F, Fut>(produce: F) -> Response
where
    F: FnOnce(EventSink) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(BUFFER);
    tokio::spawn(produce(EventSink { tx }));
    let stream = ReceiverStream::new(rx).map(Ok::<_, Infallible>);
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response()
}
