//! The Responses API's output items and response object, shared by the whole reply and
//! the event stream (which opens the same items one by one, under the same ids).

use serde_json::{json, Value};

use super::tools::Namespaces;
use crate::server::generation::response_id;
use crate::service::protocol::{FinishReason, Usage};
use crate::tools::ParsedCall;

pub fn reasoning_item(id: &str, text: &str) -> Value {
    json!({
        "type": "reasoning",
        "id": id,
        "summary": [{"type": "summary_text", "text": text}],
        "content": [{"type": "reasoning_text", "text": text}],
        "status": "completed",
    })
}

pub fn output_text_part(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

pub fn message_item(id: &str, text: &str, status: &str) -> Value {
    let content = if status == "completed" {
        vec![output_text_part(text)]
    } else {
        vec![]
    };
    json!({"type": "message", "id": id, "status": status, "role": "assistant", "content": content})
}

/// A function call item; `call.id` is the `call_id` the client answers with. A call to a
/// namespaced tool names its function and its namespace apart, as the client defined them.
pub fn call_item(
    id: &str,
    call: &ParsedCall,
    arguments: &str,
    status: &str,
    namespaces: &Namespaces,
) -> Value {
    let mut item = json!({
        "type": "function_call",
        "id": id,
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments,
        "status": status,
    });
    if let Some((namespace, name)) = namespaces.split(&call.name) {
        item["name"] = json!(name);
        item["namespace"] = json!(namespace);
    }
    item
}

/// `call_id`s start so.
pub const CALL_ID_PREFIX: &str = "call_";

/// Fresh ids for one streamed call: its item id and its `call_id`.
pub fn fresh_call(mut call: ParsedCall) -> (String, ParsedCall) {
    call.id = response_id(CALL_ID_PREFIX);
    (response_id("fc_"), call)
}

/// The Responses usage: `input_tokens` counts the whole prompt, `cached_tokens` the part
/// served from the KV store.
pub fn usage_object(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached.total()},
        "output_tokens": usage.generated,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": usage.prompt_tokens + usage.generated,
    })
}

/// The fields of a response that do not depend on its output.
#[derive(Debug, Clone)]
pub struct Header {
    pub id: String,
    pub created_at: u64,
    pub model: String,
    pub instructions: Option<String>,
    pub previous_response_id: Option<String>,
    pub store: bool,
    pub tools: Vec<Value>,
    pub tool_choice: Value,
    pub temperature: f32,
    pub top_p: f32,
    pub max_output_tokens: Option<u64>,
    pub metadata: Value,
}

impl Header {
    /// The response object with `status` (`in_progress`, `completed`, `incomplete`,
    /// `failed`), its output so far and its usage once known.
    pub fn response(&self, status: &str, output: &[Value], usage: Option<&Usage>) -> Value {
        let incomplete = (status == "incomplete").then(|| json!({"reason": "max_output_tokens"}));
        json!({
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "error": null,
            "incomplete_details": incomplete,
            "instructions": self.instructions,
            "max_output_tokens": self.max_output_tokens,
            "model": self.model,
            "output": output,
            "parallel_tool_calls": true,
            "previous_response_id": self.previous_response_id,
            "reasoning": {"effort": null, "summary": null},
            "store": self.store,
            "temperature": self.temperature,
            "text": {"format": {"type": "text"}},
            "tool_choice": self.tool_choice,
            "tools": self.tools,
            "top_p": self.top_p,
            "truncation": "disabled",
            "metadata": self.metadata,
            "usage": usage.map(usage_object),
        })
    }
}

/// `completed`, or `incomplete` when the reply was cut by the token limit or the context.
pub fn final_status(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::MaxTokens | FinishReason::ContextFull => "incomplete",
        _ => "completed",
    }
}
