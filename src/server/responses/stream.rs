//! The Responses event stream: `response.created`, `response.in_progress`, then per output
//! item `response.output_item.added`, its parts and deltas (`response.output_text.delta`,
//! `response.reasoning_summary_text.delta`, `response.function_call_arguments.delta`) and
//! `response.output_item.done`, and at the end always `response.completed` or
//! `response.failed` (Codex reconnects on a stream that ends without one).

use serde_json::{json, Value};

use super::output::{self, call_item, message_item, output_text_part, reasoning_item};
use super::reply::Reply;
use super::tools::Namespaces;
use crate::server::generation::{response_id, save_extension, Generation, Step};
use crate::server::sse::{Disconnected, EventSink};
use crate::tools::{ParsedReply, ReplyEvent};

/// The item being written.
enum Open {
    Message { id: String, text: String },
    Reasoning { id: String, text: String },
}

struct Writer<'a> {
    sink: &'a EventSink,
    /// Where calls to namespaced tools go back to.
    namespaces: &'a Namespaces,
    sequence: u64,
    open: Option<Open>,
    /// Finished items, in order.
    items: Vec<Value>,
    /// The reply as the parser saw it (calls with their fresh ids), for storing.
    reply: ParsedReply,
}

impl Writer<'_> {
    async fn emit(&mut self, kind: &str, mut body: Value) -> Result<(), Disconnected> {
        body["type"] = json!(kind);
        body["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        self.sink.named(kind, &body).await
    }

    fn output_index(&self) -> usize {
        self.items.len()
    }

    async fn close(&mut self) -> Result<(), Disconnected> {
        let index = self.output_index();
        let item = match self.open.take() {
            None => return Ok(()),
            Some(Open::Message { id, text }) => {
                let at = json!({"item_id": id, "output_index": index, "content_index": 0});
                let mut done = at.clone();
                done["text"] = json!(text);
                done["logprobs"] = json!([]);
                self.emit("response.output_text.done", done).await?;
                let mut part = at;
                part["part"] = output_text_part(&text);
                self.emit("response.content_part.done", part).await?;
                self.reply.content.push_str(&text);
                message_item(&id, &text, "completed")
            }
            Some(Open::Reasoning { id, text }) => {
                let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
                let mut done = at.clone();
                done["text"] = json!(text);
                self.emit("response.reasoning_summary_text.done", done)
                    .await?;
                let mut part = at;
                part["part"] = json!({"type": "summary_text", "text": text});
                self.emit("response.reasoning_summary_part.done", part)
                    .await?;
                self.reply
                    .reasoning
                    .get_or_insert_with(String::new)
                    .push_str(&text);
                reasoning_item(&id, &text)
            }
        };
        self.emit(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        )
        .await?;
        self.items.push(item);
        Ok(())
    }

    async fn message_text(&mut self, delta: String) -> Result<(), Disconnected> {
        if !matches!(self.open, Some(Open::Message { .. })) {
            self.close().await?;
            let id = response_id("msg_");
            let index = self.output_index();
            let item = message_item(&id, "", "in_progress");
            self.emit(
                "response.output_item.added",
                json!({"output_index": index, "item": item}),
            )
            .await?;
            let part = json!({"item_id": id, "output_index": index, "content_index": 0,
                "part": output_text_part("")});
            self.emit("response.content_part.added", part).await?;
            self.open = Some(Open::Message {
                id,
                text: String::new(),
            });
        }
        let index = self.output_index();
        let Some(Open::Message { id, text }) = &mut self.open else {
            unreachable!()
        };
        text.push_str(&delta);
        let event = json!({"item_id": id, "output_index": index, "content_index": 0,
            "delta": delta, "logprobs": []});
        self.emit("response.output_text.delta", event).await
    }

    async fn reasoning_text(&mut self, delta: String) -> Result<(), Disconnected> {
        if !matches!(self.open, Some(Open::Reasoning { .. })) {
            self.close().await?;
            let id = response_id("rs_");
            let index = self.output_index();
            let item = json!({"type": "reasoning", "id": id, "summary": []});
            self.emit(
                "response.output_item.added",
                json!({"output_index": index, "item": item}),
            )
            .await?;
            let part = json!({"item_id": id, "output_index": index, "summary_index": 0,
                "part": {"type": "summary_text", "text": ""}});
            self.emit("response.reasoning_summary_part.added", part)
                .await?;
            self.open = Some(Open::Reasoning {
                id,
                text: String::new(),
            });
        }
        let index = self.output_index();
        let Some(Open::Reasoning { id, text }) = &mut self.open else {
            unreachable!()
        };
        text.push_str(&delta);
        let event =
            json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": delta});
        self.emit("response.reasoning_summary_text.delta", event)
            .await
    }

    async fn event(&mut self, event: ReplyEvent) -> Result<(), Disconnected> {
        match event {
            ReplyEvent::Content(text) if text.is_empty() => Ok(()),
            ReplyEvent::Reasoning(text) if text.is_empty() => Ok(()),
            ReplyEvent::Content(text) => self.message_text(text).await,
            ReplyEvent::Reasoning(text) => self.reasoning_text(text).await,
            ReplyEvent::ToolCall(call) => {
                self.close().await?;
                let (id, call) = output::fresh_call(call);
                let index = self.output_index();
                let arguments = call.arguments.to_string();
                let added = call_item(&id, &call, "", "in_progress", self.namespaces);
                self.emit(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                )
                .await?;
                let at = json!({"item_id": id, "output_index": index});
                let mut delta = at.clone();
                delta["delta"] = json!(arguments);
                self.emit("response.function_call_arguments.delta", delta)
                    .await?;
                let mut done = at;
                done["arguments"] = json!(arguments);
                done["name"] = added["name"].clone();
                self.emit("response.function_call_arguments.done", done)
                    .await?;
                let item = call_item(&id, &call, &arguments, "completed", self.namespaces);
                self.emit(
                    "response.output_item.done",
                    json!({"output_index": index, "item": item.clone()}),
                )
                .await?;
                self.items.push(item);
                self.reply.tool_calls.push(call);
                Ok(())
            }
        }
    }
}

pub(super) async fn produce(
    sink: &EventSink,
    mut generation: Generation,
    reply: &Reply,
) -> Result<(), Disconnected> {
    let mut writer = Writer {
        sink,
        namespaces: &reply.namespaces,
        sequence: 0,
        open: None,
        items: Vec::new(),
        reply: ParsedReply::default(),
    };
    let header = &reply.header;
    writer
        .emit(
            "response.created",
            json!({"response": header.response("in_progress", &[], None)}),
        )
        .await?;
    writer
        .emit(
            "response.in_progress",
            json!({"response": header.response("in_progress", &[], None)}),
        )
        .await?;
    let mut parser = reply.reader.parser();
    let usage = loop {
        match generation.next().await {
            Ok(Step::Token(piece)) => {
                for event in parser.push(&piece.text) {
                    writer.event(event).await?;
                }
            }
            Ok(Step::Done(usage)) => break usage,
            Err(e) => return failed(&mut writer, reply, &e.message).await,
        }
    };
    for event in parser.finish() {
        writer.event(event).await?;
    }
    writer.close().await?;
    if writer.items.is_empty() {
        // An empty reply is still one (empty) message.
        writer.message_text(String::new()).await?;
        writer.close().await?;
    }
    let status = output::final_status(usage.finish);
    let mut object = header.response(status, &writer.items, Some(&usage));
    if let Err(e) = reply.store(&object, &writer.reply, &usage.session) {
        return failed(&mut writer, reply, &e.message).await;
    }
    // After the store: a later `previous_response_id` gets the response, not this save.
    if let Some(saved) = save_extension(&usage) {
        object["kvrun"] = saved;
    }
    writer
        .emit("response.completed", json!({"response": object}))
        .await
}

async fn failed(writer: &mut Writer<'_>, reply: &Reply, message: &str) -> Result<(), Disconnected> {
    let mut object = reply.header.response("failed", &writer.items, None);
    object["error"] = json!({"code": "server_error", "message": message});
    writer
        .emit("response.failed", json!({"response": object}))
        .await
}
