//! The reply parser. It reads generated text piece by piece and emits content, reasoning
//! and tool calls. Text that may be the start of a marker (`<thi`, `<tool_c`) is held back
//! until it is clearly not one; a call is held back until it is complete, then emitted
//! whole, or, if it does not parse, emitted as the text it was.

use serde_json::Value;

use super::{ParsedCall, ParsedReply, ToolFormat};

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const DEEPSEEK_CALL: &str = "<｜tool▁call▁begin｜>";
const DEEPSEEK_SEP: &str = "<｜tool▁sep｜>";
const DEEPSEEK_CALL_END: &str = "<｜tool▁call▁end｜>";

#[derive(Debug, Clone, PartialEq)]
pub enum ReplyEvent {
    Content(String),
    Reasoning(String),
    ToolCall(ParsedCall),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    Text,
    Reasoning,
    /// Inside a call opened by the format's opener.
    Call,
    /// The reply began with `{`: with Llama 3 and the generic format the whole reply may
    /// be one JSON call.
    WholeJson,
}

pub struct ReplyParser {
    format: ToolFormat,
    tools: bool,
    state: State,
    buf: String,
    /// Nothing but whitespace seen yet.
    at_start: bool,
    /// Content right after `</think>`: its leading newlines are the template's.
    after_reasoning: bool,
    calls: usize,
}

impl ReplyParser {
    /// `tools`: whether tool calls are parsed at all; `in_reasoning`: the prompt ended
    /// inside an open `<think>` (DeepSeek R1, QwQ), so the reply starts as reasoning.
    pub fn new(format: ToolFormat, tools: bool, in_reasoning: bool) -> Self {
        Self {
            format,
            tools,
            state: if in_reasoning {
                State::Reasoning
            } else {
                State::Text
            },
            buf: String::new(),
            at_start: true,
            after_reasoning: false,
            calls: 0,
        }
    }

    fn opener(&self) -> Option<&'static str> {
        if !self.tools {
            return None;
        }
        match self.format {
            ToolFormat::Hermes => Some("<tool_call>"),
            ToolFormat::Mistral => Some("[TOOL_CALLS]"),
            ToolFormat::Llama3 => Some("<|python_tag|>"),
            ToolFormat::DeepSeek => Some("<｜tool▁calls▁begin｜>"),
            // Mid-reply (a reply that starts with JSON is read whole); the lazy grammar of
            // `tool_choice: auto` holds a call to the object from here.
            ToolFormat::Generic => ToolFormat::Generic.call_opening(),
        }
    }

    /// The generic format's opener is the start of the call's own JSON object: it stays in
    /// the buffer and is parsed with the call.
    fn opener_is_part_of_the_call(&self) -> bool {
        self.format == ToolFormat::Generic
    }

    /// What a call that did not parse is shown as: the text as it came.
    fn unparsed_call(&self, inner: &str, close: &str) -> String {
        let open = if self.opener_is_part_of_the_call() {
            ""
        } else {
            self.opener().unwrap_or_default()
        };
        format!("{open}{inner}{close}")
    }

    fn closer(&self) -> Option<&'static str> {
        match self.format {
            ToolFormat::Hermes => Some("</tool_call>"),
            ToolFormat::DeepSeek => Some("<｜tool▁calls▁end｜>"),
            // One JSON value follows the opener: complete when it parses.
            _ => None,
        }
    }

    /// Feeds generated text; returns what is now decided.
    pub fn push(&mut self, text: &str) -> Vec<ReplyEvent> {
        self.buf.push_str(text);
        let mut events = Vec::new();
        while self.step(&mut events) {}
        events
    }

    /// The end of the reply: everything still held back is decided.
    pub fn finish(mut self) -> Vec<ReplyEvent> {
        let mut events = self.push("");
        let rest = std::mem::take(&mut self.buf);
        match self.state {
            State::Text => self.content(&mut events, &rest),
            State::Reasoning => events.push(ReplyEvent::Reasoning(rest)),
            State::Call => match self.calls_in(&rest) {
                Some(calls) => events.extend(calls.into_iter().map(ReplyEvent::ToolCall)),
                None => {
                    let text = self.unparsed_call(&rest, "");
                    self.content(&mut events, &text);
                }
            },
            State::WholeJson => self.whole_json(&mut events, &rest),
        }
        events.retain(
            |e| !matches!(e, ReplyEvent::Content(t) | ReplyEvent::Reasoning(t) if t.is_empty()),
        );
        events
    }

    /// One decision; false when more text is needed.
    fn step(&mut self, events: &mut Vec<ReplyEvent>) -> bool {
        match self.state {
            State::Text => self.step_text(events),
            State::Reasoning => match self.buf.find(THINK_CLOSE) {
                Some(at) => {
                    let reasoning: String = self.buf.drain(..at + THINK_CLOSE.len()).collect();
                    events.push(ReplyEvent::Reasoning(reasoning[..at].to_string()));
                    self.state = State::Text;
                    self.after_reasoning = true;
                    true
                }
                None => {
                    let keep = held_back(&self.buf, &[THINK_CLOSE]);
                    let ready: String = self.buf.drain(..self.buf.len() - keep).collect();
                    if !ready.is_empty() {
                        events.push(ReplyEvent::Reasoning(ready));
                    }
                    false
                }
            },
            State::Call => self.step_call(events),
            State::WholeJson => false,
        }
    }

    fn step_text(&mut self, events: &mut Vec<ReplyEvent>) -> bool {
        if self.after_reasoning {
            let trimmed = self.buf.trim_start_matches('\n').len();
            self.buf.drain(..self.buf.len() - trimmed);
            if self.buf.is_empty() {
                return false;
            }
            self.after_reasoning = false;
        }
        if self.at_start {
            let body = self.buf.trim_start();
            if body.is_empty() {
                return false;
            }
            self.at_start = false;
            let whole_json = matches!(self.format, ToolFormat::Llama3 | ToolFormat::Generic);
            if self.tools && whole_json && body.starts_with('{') {
                self.state = State::WholeJson;
                return false;
            }
        }
        let mut markers = vec![THINK_OPEN];
        markers.extend(self.opener());
        let found = markers
            .iter()
            .filter_map(|m| self.buf.find(m).map(|at| (at, *m)))
            .min();
        match found {
            Some((at, marker)) => {
                let kept = marker != THINK_OPEN && self.opener_is_part_of_the_call();
                let end = if kept { at } else { at + marker.len() };
                let before: String = self.buf.drain(..end).collect();
                self.content(events, &before[..at]);
                self.state = if marker == THINK_OPEN {
                    State::Reasoning
                } else {
                    State::Call
                };
                true
            }
            None => {
                let keep = held_back(&self.buf, &markers);
                let ready: String = self.buf.drain(..self.buf.len() - keep).collect();
                self.content(events, &ready);
                false
            }
        }
    }

    fn step_call(&mut self, events: &mut Vec<ReplyEvent>) -> bool {
        let (inner, consumed) = match self.closer() {
            Some(close) => match self.buf.find(close) {
                Some(at) => (self.buf[..at].to_string(), at + close.len()),
                None => return false,
            },
            None => match complete_json_prefix(&self.buf) {
                Some(end) => (self.buf[..end].to_string(), end),
                None => return false,
            },
        };
        self.buf.drain(..consumed);
        match self.calls_in(&inner) {
            Some(calls) => events.extend(calls.into_iter().map(ReplyEvent::ToolCall)),
            None => {
                let text = self.unparsed_call(&inner, self.closer().unwrap_or_default());
                self.content(events, &text);
            }
        }
        self.state = State::Text;
        true
    }

    fn whole_json(&mut self, events: &mut Vec<ReplyEvent>, text: &str) {
        let value: Option<Value> = serde_json::from_str(text.trim()).ok();
        if self.format == ToolFormat::Generic {
            if let Some(response) = value.as_ref().and_then(|v| v.get("response")) {
                let text = response
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| response.to_string());
                return self.content(events, &text);
            }
        }
        match value.and_then(|v| self.calls_from_value(&v)) {
            Some(calls) => events.extend(calls.into_iter().map(ReplyEvent::ToolCall)),
            None => self.content(events, text),
        }
    }

    fn content(&self, events: &mut Vec<ReplyEvent>, text: &str) {
        if !text.is_empty() {
            events.push(ReplyEvent::Content(text.to_string()));
        }
    }

    /// The calls in the text between a format's opener and closer.
    fn calls_in(&mut self, inner: &str) -> Option<Vec<ParsedCall>> {
        if self.format == ToolFormat::DeepSeek {
            return self.deepseek_calls(inner);
        }
        let value: Value = serde_json::from_str(inner.trim()).ok()?;
        self.calls_from_value(&value)
    }

    fn calls_from_value(&mut self, value: &Value) -> Option<Vec<ParsedCall>> {
        let value = value
            .get("tool_call")
            .or_else(|| value.get("tool_calls"))
            .unwrap_or(value);
        let items: Vec<&Value> = match value {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        if items.is_empty() {
            return None;
        }
        items
            .into_iter()
            .map(|item| {
                let item = item.get("function").unwrap_or(item);
                let name = item.get("name")?.as_str()?.to_string();
                let arguments = item
                    .get("arguments")
                    .or_else(|| item.get("parameters"))
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Default::default()));
                let id = item.get("id").and_then(Value::as_str).map(str::to_string);
                self.call(id, name, arguments)
            })
            .collect()
    }

    fn deepseek_calls(&mut self, inner: &str) -> Option<Vec<ParsedCall>> {
        let mut calls = Vec::new();
        for part in inner.split(DEEPSEEK_CALL).skip(1) {
            let part = part.split(DEEPSEEK_CALL_END).next()?;
            let (_, rest) = part.split_once(DEEPSEEK_SEP)?;
            let (name, args) = rest.split_once('\n')?;
            let args = args
                .trim()
                .trim_start_matches("```json")
                .trim_end_matches("```");
            let arguments: Value = serde_json::from_str(args.trim()).ok()?;
            calls.push(self.call(None, name.trim().to_string(), arguments)?);
        }
        (!calls.is_empty()).then_some(calls)
    }

    fn call(&mut self, id: Option<String>, name: String, arguments: Value) -> Option<ParsedCall> {
        // Arguments written as a JSON string are the object they hold.
        let arguments = match arguments {
            Value::String(s) => serde_json::from_str(&s).ok()?,
            other => other,
        };
        if !arguments.is_object() || name.is_empty() {
            return None;
        }
        self.calls += 1;
        Some(ParsedCall {
            // Nine alphanumerics: the length Mistral's template demands of call ids.
            id: id.unwrap_or_else(|| format!("call{:05}", self.calls)),
            name,
            arguments,
        })
    }
}

/// How many bytes at the end of `text` could be the start of one of `markers`.
fn held_back(text: &str, markers: &[&str]) -> usize {
    let mut keep = 0;
    for marker in markers {
        for (i, _) in marker.char_indices().skip(1) {
            if text.ends_with(&marker[..i]) {
                keep = keep.max(i);
            }
        }
    }
    keep
}

/// The end of the first complete JSON value in `text`, if it has one yet.
fn complete_json_prefix(text: &str) -> Option<usize> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match stream.next() {
        Some(Ok(_)) => Some(stream.byte_offset()),
        _ => None,
    }
}

/// A whole reply at once.
pub fn parse_reply(format: ToolFormat, tools: bool, in_reasoning: bool, text: &str) -> ParsedReply {
    let mut parser = ReplyParser::new(format, tools, in_reasoning);
    let mut events = parser.push(text);
    events.extend(parser.finish());
    collect(events)
}

/// Folds events into a reply.
pub fn collect(events: Vec<ReplyEvent>) -> ParsedReply {
    let mut reply = ParsedReply::default();
    let mut reasoning = String::new();
    let mut saw_reasoning = false;
    for event in events {
        match event {
            ReplyEvent::Content(text) => reply.content.push_str(&text),
            ReplyEvent::Reasoning(text) => {
                saw_reasoning = true;
                reasoning.push_str(&text);
            }
            ReplyEvent::ToolCall(call) => reply.tool_calls.push(call),
        }
    }
    if saw_reasoning {
        reply.reasoning = Some(reasoning.trim_matches('\n').to_string());
    }
    reply.content = reply.content.trim().to_string();
    reply
}
