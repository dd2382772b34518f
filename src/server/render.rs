//! From an API-neutral conversation to prompt tokens: the one path every API renders
//! through, so the same conversation is the same tokens whichever API it arrives by (and
//! so hits the same pages).
//!
//! The API layers build [`Conversation`]s from their wire formats. What never reaches the
//! template: item ids (Codex sends fresh random ones per item: rendering them would break
//! every prefix match), and Claude Code's volatile billing block ([`is_billing_block`]).

use crate::dialogue::describe_tools;
use crate::llama::{LlamaError, Model, TokenId};
use crate::template::{Content, Message, TemplateIdentity};
use crate::tools::{parse_reply, ParsedReply, ReplyParser, ToolFormat};

use super::errors::ApiError;
use super::generation::response_id;
use super::tool_choice::ToolSet;

/// A conversation as every API can express it.
#[derive(Debug, Clone, Default)]
pub struct Conversation {
    /// Roles `system`, `developer`, `user`, `assistant`, `tool`; text content only.
    pub messages: Vec<Message>,
    pub tools: ToolSet,
}

/// A rendered, tokenized prompt and what reading its reply needs.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub tokens: Vec<TokenId>,
    /// How the model writes tool calls under the template used.
    pub format: ToolFormat,
    /// The prompt ends inside an open `<think>`: the reply starts as reasoning.
    pub opens_reasoning: bool,
    /// The chat template that rendered it (the session records it).
    pub template: Option<TemplateIdentity>,
}

/// How to read a reply to a prompt: tool calls in the template's format (when the
/// request's tools are parsed), reasoning from the start when the prompt opened it.
#[derive(Debug, Clone, Copy)]
pub struct ReplyReader {
    pub format: ToolFormat,
    pub parses_calls: bool,
    pub opens_reasoning: bool,
}

impl ReplyReader {
    pub fn new(prompt: &Prompt, tools: &ToolSet) -> Self {
        Self {
            format: prompt.format,
            parses_calls: tools.parses_calls(),
            opens_reasoning: prompt.opens_reasoning,
        }
    }

    /// A parser for a streamed reply.
    pub fn parser(&self) -> ReplyParser {
        ReplyParser::new(self.format, self.parses_calls, self.opens_reasoning)
    }

    /// A whole reply, its calls given fresh ids starting `call_id_prefix` (the parser
    /// numbers them per reply only, and clients match results to calls by id).
    pub fn parse(&self, text: &str, call_id_prefix: &str) -> ParsedReply {
        let mut reply = parse_reply(self.format, self.parses_calls, self.opens_reasoning, text);
        for call in &mut reply.tool_calls {
            call.id = response_id(call_id_prefix);
        }
        reply
    }
}

/// Claude Code's first system block, `x-anthropic-billing-header: cc_version=…;
/// cc_entrypoint=…;` (some versions add a per-request `cch=` nonce). It changes between
/// client versions and requests and sits at the very front of the prompt, so a prefix
/// cache would miss after about 15 tokens on every call. Dropped before rendering, as vLLM
/// (PR #36829) does.
pub const BILLING_HEADER_PREFIX: &str = "x-anthropic-billing-header:";

pub fn is_billing_block(text: &str) -> bool {
    text.trim_start().starts_with(BILLING_HEADER_PREFIX)
}

/// A message with text content.
pub fn text_message(role: &str, text: String) -> Message {
    Message {
        content: Some(Content::Text(text)),
        ..Message::text(role, "")
    }
}

/// Renders `conversation` with the model's chat template (the assistant's opening
/// appended) and tokenizes it, control-token text inside content kept as plain text.
/// Refuses a prompt that leaves no room in a context of `n_ctx` tokens.
pub fn render(
    model: &Model,
    conversation: &Conversation,
    n_ctx: usize,
) -> Result<Prompt, ApiError> {
    if conversation.messages.is_empty() {
        return Err(ApiError::bad_request("the conversation has no messages").param("messages"));
    }
    check_conversation_fits(model, conversation, n_ctx)?;
    let tools = conversation.tools.template_value();
    let mut messages = conversation.messages.clone();
    if !model.template_renders_tools() {
        messages = calls_as_text(messages);
        if let Some(tools) = &tools {
            describe_tools(&mut messages, tools);
        }
    }
    // Agents send what strict templates refuse (Codex: two developer messages, then two
    // user messages; Claude Code: a system message among the turns). Rendered as sent when
    // the template accepts it, else with the roles folded as such templates expect.
    let rendered = model
        .render_chat(&messages, tools.as_ref(), true)
        .or_else(|first| {
            let folded = fold_roles(messages.clone());
            if folded == messages {
                return Err(first);
            }
            tracing::debug!("the template refused the turns as sent ({first}); folding roles");
            model
                .render_chat(&folded, tools.as_ref(), true)
                .map_err(|_| first)
        })
        .map_err(|e| match e {
            LlamaError::NoChatTemplate => ApiError::bad_request(
                "the model has no chat template; use /v1/completions for plain text",
            ),
            other => ApiError::bad_request(other.to_string()).param("messages"),
        })?;
    check_length_fits(model, &rendered.text, n_ctx)?;
    let tokens = model.tokenize_rendered(&rendered, 0, true);
    check_fits(tokens.len(), n_ctx)?;
    Ok(Prompt {
        tokens,
        format: model.tool_format(tools.is_some()),
        opens_reasoning: rendered.text.trim_end().ends_with("<think>"),
        template: model
            .chat_template_for(tools.is_some())
            .map(|t| t.identity()),
    })
}

/// [`render`] on a blocking thread: a long agent prompt takes a while to render and
/// tokenize, and must not stall the server's other connections.
pub async fn render_off_thread(
    model: std::sync::Arc<Model>,
    conversation: Conversation,
    n_ctx: usize,
) -> Result<Prompt, ApiError> {
    tokio::task::spawn_blocking(move || render(&model, &conversation, n_ctx))
        .await
        .map_err(|e| ApiError::internal(format!("rendering the prompt failed: {e}")))?
}

/// For a template that knows no tools: earlier calls become the assistant's text in the
/// generic format the model answers in, and tool results become user turns (as llama.cpp's
/// server does for such templates); then consecutive turns of one role are merged, since
/// such templates often insist that roles alternate.
fn calls_as_text(messages: Vec<Message>) -> Vec<Message> {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    for mut message in messages {
        let mut text = plain_text(&message);
        if !message.tool_calls.is_empty() {
            for call in std::mem::take(&mut message.tool_calls) {
                // The generic format exactly as the forced-call grammar writes it, the
                // arguments as the client sent them, so a replayed call is the tokens
                // the model generated (and its KV is reused).
                let arguments = match call.function.arguments.as_str() {
                    Some(s) if serde_json::from_str::<serde_json::Value>(s).is_ok() => {
                        s.to_string()
                    }
                    Some(s) => serde_json::Value::String(s.into()).to_string(),
                    None => serde_json::to_string(&call.function.arguments).unwrap_or_default(),
                };
                let name = serde_json::Value::String(call.function.name).to_string();
                let call =
                    format!(r#"{{"tool_call": {{"name": {name}, "arguments": {arguments}}}}}"#);
                push_line(&mut text, &call);
            }
        }
        if message.role == "tool" {
            let response = serde_json::json!({"tool_response": {
                "name": message.name.take(), "content": text,
            }});
            message.role = "user".into();
            message.tool_call_id = None;
            text = response.to_string();
        }
        match out.last_mut() {
            Some(last) if last.role == message.role && message.role != "system" => {
                let mut merged = plain_text(last);
                push_line(&mut merged, &text);
                last.content = Some(Content::Text(merged));
            }
            _ => {
                message.content = Some(Content::Text(text));
                out.push(message);
            }
        }
    }
    out
}

/// The turns as strict templates want them: every system and developer message folded,
/// in order, into one leading system message, and consecutive user (or assistant) turns
/// merged into one.
fn fold_roles(messages: Vec<Message>) -> Vec<Message> {
    let (system, turns): (Vec<Message>, Vec<Message>) = messages
        .into_iter()
        .partition(|m| matches!(m.role.as_str(), "system" | "developer"));
    let mut out: Vec<Message> = Vec::with_capacity(turns.len() + 1);
    if !system.is_empty() {
        let mut text = String::new();
        for message in &system {
            push_line(&mut text, &plain_text(message));
        }
        out.push(text_message("system", text));
    }
    for message in turns {
        match out.last_mut() {
            Some(last)
                if last.role == message.role
                    && matches!(message.role.as_str(), "user" | "assistant") =>
            {
                let mut merged = plain_text(last);
                push_line(&mut merged, &plain_text(&message));
                last.content = Some(Content::Text(merged));
                last.tool_calls.extend(message.tool_calls);
                if last.reasoning_content.is_none() {
                    last.reasoning_content = message.reasoning_content;
                }
            }
            _ => out.push(message),
        }
    }
    out
}

fn plain_text(message: &Message) -> String {
    match &message.content {
        Some(Content::Text(t)) => t.clone(),
        Some(Content::Parts(parts)) => parts.iter().filter_map(|p| p.text.as_deref()).collect(),
        None => String::new(),
    }
}

fn push_line(text: &mut String, line: &str) {
    if !text.is_empty() {
        text.push('\n');
    }
    text.push_str(line);
}

/// The text of a content value in the OpenAI shapes: a string, null, or a list of text
/// parts (`text`, `input_text`, `output_text`), joined by newlines. Images and other
/// media are refused: the model reads text only.
pub fn content_text(content: &serde_json::Value, field: &str) -> Result<String, ApiError> {
    use serde_json::Value;
    match content {
        Value::Null => Ok(String::new()),
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => {
            let mut text = String::new();
            for (i, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
                let at = format!("{field}[{i}]");
                match (kind, part.get("text").and_then(Value::as_str)) {
                    ("text" | "input_text" | "output_text", Some(t)) => push_line(&mut text, t),
                    ("refusal", _) => push_line(
                        &mut text,
                        part.get("refusal").and_then(Value::as_str).unwrap_or(""),
                    ),
                    (kind, _) if is_media(kind) => return Err(media_refused(kind, &at)),
                    (kind, _) => {
                        return Err(ApiError::bad_request(format!(
                            "content part of type '{kind}' is not supported (text parts only)"
                        ))
                        .param(&at))
                    }
                }
            }
            Ok(text)
        }
        _ => Err(ApiError::bad_request("content must be a string or a list of parts").param(field)),
    }
}

/// Content types that carry media.
pub fn is_media(kind: &str) -> bool {
    matches!(
        kind,
        "image"
            | "image_url"
            | "input_image"
            | "input_audio"
            | "audio"
            | "file"
            | "input_file"
            | "document"
    )
}

pub fn media_refused(kind: &str, field: &str) -> ApiError {
    ApiError::bad_request(format!(
        "content of type '{kind}' is not supported: the loaded model reads text only"
    ))
    .param(field)
}

/// Refuses, before the template runs, a conversation that cannot fit from its size alone,
/// so a body of megabytes costs its parse and no more: every message renders to at least
/// one token (its turn's markup), and its content's text (trimmed, as templates often do)
/// to at least its length over the longest token's text ([`Model::min_tokens`]). Both bound the template's work by the context.
pub fn check_conversation_fits(
    model: &Model,
    conversation: &Conversation,
    n_ctx: usize,
) -> Result<(), ApiError> {
    let messages = conversation.messages.len();
    if messages >= n_ctx {
        return Err(ApiError::bad_request(format!(
            "the conversation has {messages} messages, so at least {messages} tokens, and the \
             context holds {n_ctx}"
        ))
        .param("messages")
        .code("context_length_exceeded"));
    }
    let content_bytes: usize = conversation
        .messages
        .iter()
        .map(|m| match &m.content {
            Some(Content::Text(t)) => t.trim().len(),
            Some(Content::Parts(parts)) => parts
                .iter()
                .filter_map(|p| p.text.as_deref())
                .map(|t| t.trim().len())
                .sum(),
            None => 0,
        })
        .sum();
    let least = model
        .facts()
        .max_token_bytes
        .map(|max| content_bytes.div_ceil(max));
    match least {
        Some(tokens) if tokens >= n_ctx => Err(ApiError::bad_request(format!(
            "the messages' content is {content_bytes} bytes, so at least {tokens} tokens, and \
             the context holds {n_ctx}"
        ))
        .param("messages")
        .code("context_length_exceeded")),
        _ => Ok(()),
    }
}

/// A prompt must leave room for at least one generated token.
/// Refuses, before tokenizing it (tens of seconds for megabytes), a text whose length
/// alone shows it cannot fit: every token spans at most the vocabulary's longest piece.
pub fn check_length_fits(model: &Model, text: &str, n_ctx: usize) -> Result<(), ApiError> {
    match model.min_tokens(text) {
        Some(tokens) if tokens >= n_ctx => Err(ApiError::bad_request(format!(
            "the prompt is {} bytes, so at least {tokens} tokens, and the context holds {n_ctx}",
            text.len()
        ))
        .param("messages")
        .code("context_length_exceeded")),
        _ => Ok(()),
    }
}

pub fn check_fits(tokens: usize, n_ctx: usize) -> Result<(), ApiError> {
    if tokens >= n_ctx {
        return Err(crate::service::protocol::ServiceError::PromptTooLong { tokens, n_ctx }.into());
    }
    Ok(())
}

/// The most tokens a reply may have: what the client asked for, capped by the room the
/// context leaves after the prompt.
pub fn max_reply_tokens(
    requested: Option<u64>,
    cap: Option<u32>,
    prompt_tokens: usize,
    n_ctx: usize,
) -> usize {
    let room = n_ctx.saturating_sub(prompt_tokens);
    let cap = cap.map(u64::from);
    let asked = match (requested, cap) {
        (Some(r), Some(c)) => Some(r.min(c)),
        (r, c) => r.or(c),
    };
    asked.map_or(room, |r| room.min(usize::try_from(r).unwrap_or(usize::MAX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billing_block_is_recognised_with_any_suffix() {
        assert!(is_billing_block(
            "x-anthropic-billing-header: cc_version=2.1.328.8a1; cc_entrypoint=sdk-cli;"
        ));
        assert!(is_billing_block(
            "x-anthropic-billing-header: cc_version=2.1.328.ccf; cc_entrypoint=sdk-cli; cch=12ab;"
        ));
        assert!(!is_billing_block("You are Claude Code."));
        assert!(!is_billing_block("See x-anthropic-billing-header: later"));
    }

    #[test]
    fn content_forms() {
        use serde_json::json;
        assert_eq!(content_text(&json!("hi"), "c").unwrap(), "hi");
        assert_eq!(content_text(&json!(null), "c").unwrap(), "");
        let parts = json!([{"type": "text", "text": "a"}, {"type": "input_text", "text": "b"}]);
        assert_eq!(content_text(&parts, "c").unwrap(), "a\nb");
        let image = json!([{"type": "image_url", "image_url": {"url": "x"}}]);
        let e = content_text(&image, "messages[0].content").unwrap_err();
        assert!(e.message.contains("text only"), "{}", e.message);
        assert_eq!(e.param.as_deref(), Some("messages[0].content[0]"));
        assert!(content_text(&json!(5), "c").is_err());
    }

    #[test]
    fn calls_become_text_for_templates_without_tools() {
        use crate::template::{FunctionCall, ToolCall};
        let mut call = text_message("assistant", String::new());
        call.tool_calls.push(ToolCall {
            id: Some("call_1".into()),
            kind: "function".into(),
            function: FunctionCall {
                name: "f".into(),
                arguments: minijinja::Value::from("{\"x\": 1}"),
            },
        });
        let mut result = text_message("tool", "42".into());
        result.name = Some("f".into());
        let second = text_message("tool", "43".into());
        let out = calls_as_text(vec![
            text_message("user", "go".into()),
            call,
            result,
            second,
        ]);
        let roles: Vec<&str> = out.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            plain_text(&out[1]),
            r#"{"tool_call": {"name": "f", "arguments": {"x": 1}}}"#
        );
        let results = plain_text(&out[2]);
        assert!(
            results.contains(r#""content":"42""#) && results.contains("43"),
            "{results}"
        );
    }

    #[test]
    fn roles_fold_for_strict_templates() {
        let sent = vec![
            text_message("developer", "a".into()),
            text_message("developer", "b".into()),
            text_message("user", "c".into()),
            text_message("system", "d".into()),
            text_message("user", "e".into()),
            text_message("assistant", "f".into()),
        ];
        let folded = fold_roles(sent);
        let roles: Vec<&str> = folded.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["system", "user", "assistant"]);
        assert_eq!(plain_text(&folded[0]), "a\nb\nd");
        assert_eq!(plain_text(&folded[1]), "c\ne");
    }

    #[test]
    fn reply_room_is_capped_by_the_context() {
        assert_eq!(max_reply_tokens(None, None, 100, 4096), 3996);
        assert_eq!(max_reply_tokens(Some(32000), None, 100, 4096), 3996);
        assert_eq!(max_reply_tokens(Some(5), None, 100, 4096), 5);
        // `serve --max-tokens` caps what a request asks for, and sets a limit where it has none.
        assert_eq!(max_reply_tokens(None, Some(64), 100, 4096), 64);
        assert_eq!(max_reply_tokens(Some(500), Some(64), 100, 4096), 64);
        assert_eq!(max_reply_tokens(Some(5), Some(64), 100, 4096), 5);
        assert_eq!(max_reply_tokens(None, Some(9000), 100, 4096), 3996);
        assert!(check_fits(4096, 4096).is_err());
        let e = check_fits(5000, 4096).unwrap_err();
        assert!(e.message.contains("5000"), "{}", e.message);
        assert!(check_fits(4095, 4096).is_ok());
    }
}
