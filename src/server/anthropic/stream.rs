//! The Messages event stream: `message_start`, `ping`, then per content block
//! `content_block_start` / `content_block_delta` (`text_delta`, `thinking_delta`,
//! `input_json_delta`) / `content_block_stop`, then `message_delta` (stop reason, usage)
//! and `message_stop`. A failure mid-stream is an `error` event.

use serde_json::{json, Value};

use super::shape::{usage_object, Shape, TOOL_USE_ID_PREFIX};
use crate::server::generation::response_id;
use crate::server::generation::{save_extension, Generation, Step};
use crate::server::sse::{Disconnected, EventSink};
use crate::tools::{ParsedCall, ReplyEvent};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Block {
    Text,
    Thinking,
}

/// The block being written and how many came before.
struct Blocks<'a> {
    sink: &'a EventSink,
    open: Option<Block>,
    next_index: usize,
    called_tools: bool,
}

impl Blocks<'_> {
    async fn close(&mut self) -> Result<(), Disconnected> {
        if self.open.take().is_some() {
            let index = self.next_index - 1;
            let stop = json!({"type": "content_block_stop", "index": index});
            self.sink.named("content_block_stop", &stop).await?;
        }
        Ok(())
    }

    async fn start(&mut self, block: Value) -> Result<usize, Disconnected> {
        self.close().await?;
        let index = self.next_index;
        self.next_index += 1;
        let start = json!({"type": "content_block_start", "index": index, "content_block": block});
        self.sink.named("content_block_start", &start).await?;
        Ok(index)
    }

    async fn delta(&mut self, index: usize, delta: Value) -> Result<(), Disconnected> {
        let event = json!({"type": "content_block_delta", "index": index, "delta": delta});
        self.sink.named("content_block_delta", &event).await
    }

    /// Text or thinking, into the open block of that kind (a new one if need be).
    async fn write(&mut self, kind: Block, text: String) -> Result<(), Disconnected> {
        if text.is_empty() {
            return Ok(());
        }
        if self.open != Some(kind) {
            let block = match kind {
                Block::Text => json!({"type": "text", "text": ""}),
                Block::Thinking => json!({"type": "thinking", "thinking": "", "signature": ""}),
            };
            self.start(block).await?;
            self.open = Some(kind);
        }
        let index = self.next_index - 1;
        let delta = match kind {
            Block::Text => json!({"type": "text_delta", "text": text}),
            Block::Thinking => json!({"type": "thinking_delta", "thinking": text}),
        };
        self.delta(index, delta).await
    }

    async fn event(&mut self, event: ReplyEvent) -> Result<(), Disconnected> {
        match event {
            ReplyEvent::Content(text) => self.write(Block::Text, text).await,
            ReplyEvent::Reasoning(text) => self.write(Block::Thinking, text).await,
            ReplyEvent::ToolCall(call) => {
                let call = ParsedCall {
                    id: response_id(TOOL_USE_ID_PREFIX),
                    ..call
                };
                let block =
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": {}});
                let index = self.start(block).await?;
                let partial = call.arguments.to_string();
                self.delta(
                    index,
                    json!({"type": "input_json_delta", "partial_json": partial}),
                )
                .await?;
                let stop = json!({"type": "content_block_stop", "index": index});
                self.called_tools = true;
                self.sink.named("content_block_stop", &stop).await
            }
        }
    }
}

pub(super) async fn produce(
    sink: &EventSink,
    mut generation: Generation,
    shape: &Shape,
) -> Result<(), Disconnected> {
    let started = generation.started.clone();
    let start = json!({"type": "message_start", "message": {
        "id": shape.id,
        "type": "message",
        "role": "assistant",
        "model": shape.model_name,
        "content": [],
        "stop_reason": null,
        "stop_sequence": null,
        "usage": usage_object(started.prompt_tokens, &started.cached, 0),
    }});
    sink.named("message_start", &start).await?;
    sink.named("ping", &json!({"type": "ping"})).await?;
    let mut parser = shape.reader.parser();
    let mut blocks = Blocks {
        sink,
        open: None,
        next_index: 0,
        called_tools: false,
    };
    let usage = loop {
        match generation.next().await {
            Ok(Step::Token(piece)) => {
                for event in parser.push(&piece.text) {
                    blocks.event(event).await?;
                }
            }
            Ok(Step::Done(usage)) => break usage,
            Err(e) => {
                blocks.close().await?;
                return sink.named("error", &e.anthropic().body()).await;
            }
        }
    };
    for event in parser.finish() {
        blocks.event(event).await?;
    }
    blocks.close().await?;
    let (stop_reason, stop_sequence) = Shape::stop(&usage, blocks.called_tools);
    let mut delta = json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": stop_sequence},
        "usage": usage_object(usage.prompt_tokens, &usage.cached, usage.generated),
    });
    if let Some(saved) = save_extension(&usage) {
        delta["kvrun"] = saved;
    }
    sink.named("message_delta", &delta).await?;
    sink.named("message_stop", &json!({"type": "message_stop"}))
        .await
}
