//! An Anthropic Messages request, read into kvrun's terms. Accepted and ignored, never a
//! failure: `thinking`, `context_management`, `cache_control`, `metadata` other than the
//! session id, server tools (`web_search_…`, `bash_…`), and any unknown field.

use std::sync::atomic::Ordering;

use serde::Deserialize;
use serde_json::Value;

use crate::server::counters::ServerCounters;
use crate::server::errors::ApiError;
use crate::server::render::{
    is_billing_block, is_media, media_refused, text_message, Conversation,
};
use crate::server::request::SamplingFields;
use crate::server::tool_choice::{function_tool, ToolChoice, ToolSet};
use crate::template::{FunctionCall, Message, ToolCall};

#[derive(Debug, Deserialize)]
pub struct MessagesRequest {
    /// Required by `/v1/messages`, not by `count_tokens`.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    pub messages: Vec<Value>,
    #[serde(default)]
    pub system: Option<Value>,
    #[serde(default)]
    pub tools: Option<Vec<minijinja::Value>>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub stop_sequences: Option<Vec<String>>,
    #[serde(flatten)]
    pub sampling: SamplingFields,
    #[serde(flatten)]
    pub target: crate::server::request::ModelFields,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub metadata: Option<Value>,
}

impl MessagesRequest {
    /// The conversation; Claude Code's billing block is dropped from the system prompt.
    pub fn conversation(&self, counters: &ServerCounters) -> Result<Conversation, ApiError> {
        self.check_fields()?;
        let mut messages = Vec::new();
        if let Some(system) = self.system_text(counters)? {
            messages.push(text_message("system", system));
        }
        for (i, m) in self.messages.iter().enumerate() {
            push_message(&mut messages, i, m)?;
        }
        Ok(Conversation {
            messages,
            tools: ToolSet::new(self.tool_definitions(), self.choice()?)?,
        })
    }

    /// The fields read as given when present, refused (naming them) when of the wrong shape,
    /// as Anthropic's API does: `metadata` an object whose `user_id` is a string, each tool
    /// an object with a string `name`.
    fn check_fields(&self) -> Result<(), ApiError> {
        match &self.metadata {
            None | Some(Value::Null) => {}
            Some(Value::Object(metadata)) => {
                if !matches!(
                    metadata.get("user_id"),
                    None | Some(Value::Null | Value::String(_))
                ) {
                    return Err(ApiError::bad_request("metadata.user_id must be a string")
                        .param("metadata.user_id"));
                }
            }
            Some(_) => {
                return Err(ApiError::bad_request("metadata must be an object").param("metadata"))
            }
        }
        for (i, tool) in self.tools.iter().flatten().enumerate() {
            let name = tool.get_attr("name").ok();
            if name.as_ref().and_then(|n| n.as_str()).is_none() {
                return Err(
                    ApiError::bad_request(format!("tools[{i}].name must be a string"))
                        .param(&format!("tools[{i}].name")),
                );
            }
        }
        Ok(())
    }

    fn system_text(&self, counters: &ServerCounters) -> Result<Option<String>, ApiError> {
        let blocks = match &self.system {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::String(s)) => vec![s.as_str()],
            Some(Value::Array(blocks)) => blocks
                .iter()
                .map(|b| b.get("text").and_then(Value::as_str))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    ApiError::bad_request("system blocks must be text blocks").param("system")
                })?,
            Some(_) => {
                return Err(ApiError::bad_request(
                    "system must be a string or a list of text blocks",
                )
                .param("system"))
            }
        };
        let mut kept = Vec::new();
        for block in blocks {
            if is_billing_block(block) {
                counters
                    .billing_blocks_dropped
                    .fetch_add(1, Ordering::Relaxed);
                tracing::debug!("dropped Claude Code's billing-header system block: {block:?}");
            } else {
                kept.push(block);
            }
        }
        Ok((!kept.is_empty()).then(|| kept.join("\n")))
    }

    /// Client tools (`name`, `description`, `input_schema`); server tools are ignored.
    fn tool_definitions(&self) -> Vec<minijinja::Value> {
        let attr =
            |t: &minijinja::Value, key: &str| t.get_attr(key).ok().filter(|v| !v.is_undefined());
        self.tools
            .iter()
            .flatten()
            .filter_map(|tool| {
                let kind = attr(tool, "type").map(|k| k.to_string());
                let schema = attr(tool, "input_schema");
                let client_tool =
                    matches!(kind.as_deref(), None | Some("custom")) || schema.is_some();
                let name = attr(tool, "name").and_then(|n| n.as_str().map(str::to_string));
                match (client_tool, name) {
                    (true, Some(name)) => Some(function_tool(
                        &name,
                        attr(tool, "description").as_ref(),
                        schema.as_ref(),
                    )),
                    _ => {
                        tracing::warn!(
                            "ignoring server tool {kind:?}: only client tools are served"
                        );
                        None
                    }
                }
            })
            .collect()
    }

    /// `tool_choice`: `{"type": "auto" | "any" | "tool" (with "name") | "none"}`.
    fn choice(&self) -> Result<ToolChoice, ApiError> {
        let Some(choice) = self.tool_choice.as_ref().filter(|c| !c.is_null()) else {
            return Ok(ToolChoice::Auto);
        };
        let bad = || {
            ApiError::bad_request(format!(
                "tool_choice {choice} is not one of auto, any, tool (with a name) or none"
            ))
            .param("tool_choice")
        };
        match choice.get("type").and_then(Value::as_str) {
            Some("auto") => Ok(ToolChoice::Auto),
            Some("any") => Ok(ToolChoice::Required),
            Some("none") => Ok(ToolChoice::None),
            Some("tool") => choice
                .get("name")
                .and_then(Value::as_str)
                .map(|n| ToolChoice::Named(n.to_string()))
                .ok_or_else(bad),
            _ => Err(bad()),
        }
    }
}

/// One Anthropic message as template messages: a user turn's tool results become `tool`
/// messages (before its text), an assistant turn's `tool_use` blocks its tool calls and
/// its `thinking` its reasoning.
fn push_message(out: &mut Vec<Message>, i: usize, value: &Value) -> Result<(), ApiError> {
    let at = format!("messages[{i}]");
    let role = value.get("role").and_then(Value::as_str).unwrap_or("");
    // Claude Code also sends a system message among the turns.
    if !matches!(role, "user" | "assistant" | "system") {
        return Err(ApiError::bad_request(format!(
            "{at} has role '{role}'; expected user, assistant or system"
        ))
        .param(&format!("{at}.role")));
    }
    let blocks = match value.get("content") {
        Some(Value::String(s)) => {
            out.push(text_message(role, s.clone()));
            return Ok(());
        }
        Some(Value::Array(blocks)) => blocks,
        _ => {
            return Err(ApiError::bad_request(format!(
                "{at}.content must be a string or a list of content blocks"
            ))
            .param(&format!("{at}.content")))
        }
    };
    let mut message = text_message(role, String::new());
    let mut texts = Vec::new();
    let mut unknown = Vec::new();
    let results_before = out.len();
    for (j, block) in blocks.iter().enumerate() {
        let field = format!("{at}.content[{j}]");
        let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
        let text = |key: &str| {
            block
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        match kind {
            "text" => texts.push(text("text")),
            "thinking" => message.reasoning_content = Some(text("thinking")),
            "redacted_thinking" => {}
            "tool_use" => message.tool_calls.push(tool_use(block, &field)?),
            "tool_result" => out.push(tool_result(block, &field)?),
            kind if is_media(kind) => return Err(media_refused(kind, &field)),
            other => {
                tracing::debug!("ignoring a content block of type '{other}' in {field}");
                unknown.push(format!("'{other}'"));
            }
        }
    }
    // A message of nothing but blocks kvrun does not know would vanish, and the request
    // be answered for a conversation its client did not send.
    if !unknown.is_empty() && unknown.len() == blocks.len() && out.len() == results_before {
        return Err(ApiError::bad_request(format!(
            "{at} has only content blocks of types kvrun does not serve ({})",
            unknown.join(", ")
        ))
        .param(&format!("{at}.content")));
    }
    let text = texts.join("\n");
    if let Some(crate::template::Content::Text(t)) = &mut message.content {
        *t = text;
    }
    let has_text = message
        .content
        .as_ref()
        .is_some_and(|c| c != &crate::template::Content::Text(String::new()));
    if has_text || !message.tool_calls.is_empty() || message.reasoning_content.is_some() {
        out.push(message);
    }
    Ok(())
}

fn tool_use(block: &Value, field: &str) -> Result<ToolCall, ApiError> {
    let name = block.get("name").and_then(Value::as_str).ok_or_else(|| {
        ApiError::bad_request(format!("{field}: tool_use needs a name")).param(field)
    })?;
    let input = block
        .get("input")
        .cloned()
        .unwrap_or_else(|| Value::Object(Default::default()));
    Ok(ToolCall {
        id: block.get("id").and_then(Value::as_str).map(str::to_string),
        kind: "function".into(),
        function: FunctionCall {
            name: name.to_string(),
            arguments: minijinja::Value::from(input.to_string()),
        },
    })
}

/// A `tool_result` block as a `tool` message; its content a string or text blocks.
fn tool_result(block: &Value, field: &str) -> Result<Message, ApiError> {
    let content = match block.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::new();
            for (k, part) in parts.iter().enumerate() {
                let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "text" => texts.push(part.get("text").and_then(Value::as_str).unwrap_or("")),
                    kind if is_media(kind) => {
                        return Err(media_refused(kind, &format!("{field}.content[{k}]")))
                    }
                    other => tracing::debug!("ignoring a tool_result part of type '{other}'"),
                }
            }
            texts.join("\n")
        }
        Some(_) => {
            return Err(ApiError::bad_request(format!(
                "{field}: tool_result content must be a string or a list of blocks"
            ))
            .param(field))
        }
    };
    let id = block.get("tool_use_id").and_then(Value::as_str);
    let Some(id) = id else {
        return Err(
            ApiError::bad_request(format!("{field}.tool_use_id: a tool_result needs one"))
                .param(&format!("{field}.tool_use_id")),
        );
    };
    let mut message = text_message("tool", content);
    message.tool_call_id = Some(id.to_string());
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(body: Value) -> Result<Conversation, ApiError> {
        let request: MessagesRequest = serde_json::from_value(body).unwrap();
        request.conversation(&ServerCounters::default())
    }

    #[test]
    fn claude_code_shaped_request() {
        let counters = ServerCounters::default();
        let request: MessagesRequest = serde_json::from_value(json!({
            "model": "claude-sonnet", "max_tokens": 32000, "stream": true,
            "thinking": {"type": "enabled", "budget_tokens": 1024},
            "context_management": {"edits": []},
            "metadata": {"user_id": "{\"session_id\": \"abc\"}"},
            "system": [
                {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.328.8a1; cc_entrypoint=sdk-cli;"},
                {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}},
            ],
            "tools": [
                {"name": "Bash", "description": "run", "input_schema": {"type": "object"}},
                {"type": "web_search_20250305", "name": "web_search"},
            ],
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>r</system-reminder>"},
                {"type": "text", "text": "hello", "cache_control": {"type": "ephemeral"}},
            ]}],
        }))
        .unwrap();
        let c = request.conversation(&counters).unwrap();
        assert_eq!(counters.billing_blocks_dropped.load(Ordering::Relaxed), 1);
        assert_eq!(
            c.messages[0].content,
            Some(crate::template::Content::Text(
                "You are Claude Code.".into()
            ))
        );
        assert_eq!(c.messages.len(), 2);
        assert_eq!(c.tools.definitions.len(), 1);
    }

    #[test]
    fn tool_use_and_results() {
        let c = parse(json!({"messages": [
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "s"},
                {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {"city": "Oslo"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "cold"}]},
                {"type": "text", "text": "thanks"}]},
        ]}))
        .unwrap();
        let roles: Vec<&str> = c.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool", "user"]);
        assert_eq!(c.messages[1].reasoning_content.as_deref(), Some("hmm"));
        assert_eq!(c.messages[1].tool_calls[0].function.name, "get");
        assert_eq!(c.messages[2].tool_call_id.as_deref(), Some("toolu_1"));
    }

    #[test]
    fn refusals() {
        let image = parse(json!({"messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}}]}]}));
        let e = image.unwrap_err();
        assert!(e.message.contains("text only"), "{}", e.message);
        assert!(parse(json!({"messages": [{"role": "wizard", "content": "x"}]})).is_err());
        assert!(parse(json!({"messages": [{"role": "system", "content": "x"}]})).is_ok());
        assert!(parse(json!({"messages": [{"role": "user", "content": 5}]})).is_err());
        let choice = parse(json!({"messages": [], "tool_choice": {"type": "sometimes"}}));
        assert!(choice.is_err());
        // A message of unknown blocks only is refused, naming them; beside text they are
        // skipped.
        let unknown = parse(json!({"messages": [{"role": "user", "content": [
            {"type": "hologram", "data": "x"}]}]}));
        let e = unknown.unwrap_err();
        assert!(e.message.contains("'hologram'"), "{}", e.message);
        let mixed = parse(json!({"messages": [{"role": "user", "content": [
            {"type": "hologram"}, {"type": "text", "text": "hi"}]}]}));
        assert_eq!(mixed.unwrap().messages.len(), 1);
    }
}
