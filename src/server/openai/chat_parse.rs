//! A chat completions request, read into kvrun's terms: the conversation, the tools and
//! what constrains the reply.

use serde::Deserialize;
use serde_json::Value;

use crate::server::errors::ApiError;
use crate::server::render::{content_text, text_message, Conversation};
use crate::server::request::{json_format_grammar, SamplingFields, StopField};
use crate::server::tool_choice::{openai_choice, ToolSet};
use crate::template::{FunctionCall, Message, ToolCall};

/// The most alternatives `top_logprobs` may ask for (OpenAI's limit).
const MAX_TOP_LOGPROBS: u64 = 20;

/// The fields kvrun reads; everything else is ignored.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    pub messages: Vec<Value>,
    #[serde(default)]
    pub tools: Option<Vec<minijinja::Value>>,
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(default)]
    pub response_format: Option<Value>,
    #[serde(default)]
    pub stop: Option<StopField>,
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub max_completion_tokens: Option<u64>,
    #[serde(flatten)]
    pub sampling: SamplingFields,
    #[serde(flatten)]
    pub target: crate::server::request::ModelFields,
    #[serde(default)]
    pub logprobs: Option<bool>,
    #[serde(default)]
    pub top_logprobs: Option<u64>,
    #[serde(default)]
    pub n: Option<u64>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub prompt_cache_key: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

const ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

impl ChatRequest {
    /// `n > 1` and other requests kvrun cannot honour are refused up front.
    pub fn check(&self) -> Result<(), ApiError> {
        if self.n.is_some_and(|n| n != 1) {
            return Err(ApiError::bad_request(
                "n must be 1: kvrun generates one choice per request",
            )
            .param("n"));
        }
        if self.top_logprobs.is_some_and(|n| n > MAX_TOP_LOGPROBS) {
            return Err(ApiError::bad_request(format!(
                "top_logprobs must be at most {MAX_TOP_LOGPROBS}"
            ))
            .param("top_logprobs"));
        }
        if self.max_tokens() == Some(0) {
            return Err(ApiError::bad_request("max_tokens must be at least 1").param("max_tokens"));
        }
        Ok(())
    }

    pub fn max_tokens(&self) -> Option<u64> {
        self.max_completion_tokens.or(self.max_tokens)
    }

    /// Alternatives per token, when log-probabilities are asked for.
    pub fn logprobs(&self) -> Option<usize> {
        self.logprobs
            .unwrap_or(false)
            .then(|| self.top_logprobs.unwrap_or(0) as usize)
    }

    pub fn conversation(&self) -> Result<Conversation, ApiError> {
        let mut messages = self
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| message(i, m))
            .collect::<Result<Vec<_>, _>>()?;
        name_tool_results(&mut messages);
        let tools = function_tools(self.tools.as_deref().unwrap_or_default());
        let choice = openai_choice(self.tool_choice.as_ref())?;
        Ok(Conversation {
            messages,
            tools: ToolSet::new(tools, choice)?,
        })
    }

    /// The grammar `response_format` asks for (`json_object` or `json_schema`).
    pub fn format_grammar(&self) -> Result<Option<String>, ApiError> {
        let Some(format) = self.response_format.as_ref().filter(|f| !f.is_null()) else {
            return Ok(None);
        };
        let schema = format.get("json_schema").and_then(|s| s.get("schema"));
        json_format_grammar(format, schema, "response_format")
    }
}

/// The request's function tools; tools of other types are ignored (and logged).
pub fn function_tools(tools: &[minijinja::Value]) -> Vec<minijinja::Value> {
    tools
        .iter()
        .filter(|t| {
            let kind = t.get_attr("type").ok();
            let is_function = kind.as_ref().and_then(|k| k.as_str()) == Some("function");
            if !is_function {
                tracing::warn!(
                    "ignoring a tool of type {:?}: only function tools are served",
                    kind.map(|k| k.to_string())
                );
            }
            is_function
        })
        .cloned()
        .collect()
}

fn message(i: usize, value: &Value) -> Result<Message, ApiError> {
    let at = format!("messages[{i}]");
    let object = value
        .as_object()
        .ok_or_else(|| ApiError::bad_request(format!("{at} must be an object")).param(&at))?;
    let role = object.get("role").and_then(Value::as_str).ok_or_else(|| {
        ApiError::bad_request(format!("{at} needs a string \"role\"")).param(&format!("{at}.role"))
    })?;
    if !ROLES.contains(&role) {
        return Err(ApiError::bad_request(format!(
            "{at} has unknown role '{role}' (expected one of {})",
            ROLES.join(", ")
        ))
        .param(&format!("{at}.role")));
    }
    let content = object.get("content").unwrap_or(&Value::Null);
    // Only an assistant's turn may go without content (it may hold calls alone).
    if content.is_null() && role != "assistant" {
        return Err(
            ApiError::bad_request(format!("{at}.content: a {role} message needs content"))
                .param(&format!("{at}.content")),
        );
    }
    let text = content_text(content, &format!("{at}.content"))?;
    let mut message = text_message(role, text);
    let string = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_string);
    if role == "assistant" {
        message.reasoning_content = string("reasoning_content").or_else(|| string("reasoning"));
        if let Some(calls) = object.get("tool_calls").filter(|c| !c.is_null()) {
            let calls = calls.as_array().ok_or_else(|| {
                ApiError::bad_request(format!("{at}.tool_calls must be a list"))
                    .param(&format!("{at}.tool_calls"))
            })?;
            for (j, call) in calls.iter().enumerate() {
                message
                    .tool_calls
                    .push(tool_call(call, &format!("{at}.tool_calls[{j}]"))?);
            }
        }
    }
    if role == "tool" {
        message.tool_call_id = string("tool_call_id");
        if message.tool_call_id.is_none() {
            return Err(ApiError::bad_request(format!(
                "{at}.tool_call_id: a tool message needs the id of the call it answers"
            ))
            .param(&format!("{at}.tool_call_id")));
        }
        message.name = string("name");
    }
    Ok(message)
}

/// A `tool` message names its function only by `tool_call_id` in the standard shape (a
/// `name` is optional): the name comes from the assistant call with that id, so templates
/// that print it get it, as the Responses API's `function_call_output` already does.
fn name_tool_results(messages: &mut [Message]) {
    let mut names: std::collections::HashMap<String, String> = Default::default();
    for message in messages {
        for call in &message.tool_calls {
            if let Some(id) = &call.id {
                names.insert(id.clone(), call.function.name.clone());
            }
        }
        if message.role == "tool" && message.name.is_none() {
            let id = message.tool_call_id.as_ref();
            message.name = id.and_then(|id| names.get(id)).cloned();
        }
    }
}

/// An earlier call: `{id, type, function: {name, arguments}}`, arguments a JSON string
/// (OpenAI's wire format; empty for none) or an object.
pub fn tool_call(call: &Value, at: &str) -> Result<ToolCall, ApiError> {
    let (function, arguments_at) = match call.get("function") {
        Some(function) => (function, format!("{at}.function.arguments")),
        None => (call, format!("{at}.arguments")),
    };
    if let Some(Value::String(s)) = function.get("arguments") {
        if !s.trim().is_empty() && serde_json::from_str::<Value>(s).is_err() {
            return Err(
                ApiError::bad_request(format!("{arguments_at} must be a JSON string"))
                    .param(&arguments_at),
            );
        }
    }
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::bad_request(format!("{at} needs a function name")).param(at))?;
    let arguments = match function.get("arguments") {
        None | Some(Value::Null) => minijinja::Value::from("{}"),
        Some(Value::String(s)) => minijinja::Value::from(s.as_str()),
        Some(other) => minijinja::Value::from(other.to_string()),
    };
    Ok(ToolCall {
        id: call.get("id").and_then(Value::as_str).map(str::to_string),
        kind: "function".into(),
        function: FunctionCall {
            name: name.to_string(),
            arguments,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(body: Value) -> ChatRequest {
        serde_json::from_value(body).unwrap()
    }

    #[test]
    fn messages_of_every_role() {
        let r = request(json!({
            "model": "anything", "unknown_field": {"x": 1},
            "messages": [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\":1}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "42"},
            ],
            "tools": [{"type": "function", "function": {"name": "f"}}, {"type": "web_search"}],
        }));
        r.check().unwrap();
        let c = r.conversation().unwrap();
        assert_eq!(c.messages.len(), 4);
        assert_eq!(c.messages[2].tool_calls[0].function.name, "f");
        assert_eq!(c.messages[3].tool_call_id.as_deref(), Some("c1"));
        // The standard tool message carries no name: it is the call's.
        assert_eq!(
            c.messages[3].name.as_deref(),
            Some("f"),
            "{:?}",
            c.messages[3]
        );
        assert_eq!(c.tools.definitions.len(), 1);
    }

    #[test]
    fn bad_messages_name_the_field() {
        let r = request(json!({"messages": [{"role": "wizard", "content": "x"}]}));
        let e = r.conversation().unwrap_err();
        assert_eq!(e.param.as_deref(), Some("messages[0].role"));
        let r = request(json!({"messages": [{"content": "x"}]}));
        assert!(r.conversation().is_err());
        let r = request(json!({"messages": [], "n": 2}));
        assert_eq!(r.check().unwrap_err().param.as_deref(), Some("n"));
    }

    #[test]
    fn response_formats() {
        let r = request(json!({"messages": [], "response_format": {"type": "json_object"}}));
        assert!(r.format_grammar().unwrap().is_some());
        let r = request(
            json!({"messages": [], "response_format": {"type": "json_schema",
            "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}}}),
        );
        assert!(r.format_grammar().unwrap().unwrap().contains("integer"));
        let r = request(json!({"messages": [], "response_format": {"type": "text"}}));
        assert_eq!(r.format_grammar().unwrap(), None);
        let r = request(json!({"messages": [], "response_format": {"type": "yaml"}}));
        assert!(r.format_grammar().is_err());
    }
}
