//! A parsed reply, and its OpenAI and Anthropic wire shapes.

use serde_json::{json, Value};

/// One tool call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    pub id: String,
    pub name: String,
    /// The arguments object (an object even when the model wrote none).
    pub arguments: Value,
}

/// A whole reply split into its parts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedReply {
    pub content: String,
    pub reasoning: Option<String>,
    pub tool_calls: Vec<ParsedCall>,
}

impl ParsedCall {
    /// OpenAI's `tool_calls` entry: arguments as a JSON string.
    pub fn to_openai(&self) -> Value {
        json!({
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments.to_string()},
        })
    }

    /// Anthropic's `tool_use` content block.
    pub fn to_anthropic(&self) -> Value {
        json!({"type": "tool_use", "id": self.id, "name": self.name, "input": self.arguments})
    }
}

impl ParsedReply {
    /// OpenAI's assistant message: `content`, `reasoning_content`, `tool_calls`.
    pub fn to_openai(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.content});
        if self.content.is_empty() && !self.tool_calls.is_empty() {
            message["content"] = Value::Null;
        }
        if let Some(reasoning) = &self.reasoning {
            message["reasoning_content"] = json!(reasoning);
        }
        if !self.tool_calls.is_empty() {
            message["tool_calls"] =
                Value::Array(self.tool_calls.iter().map(ParsedCall::to_openai).collect());
        }
        message
    }

    /// Anthropic's content blocks: `thinking`, `text`, `tool_use`.
    pub fn to_anthropic(&self) -> Value {
        let mut blocks = Vec::new();
        if let Some(reasoning) = &self.reasoning {
            blocks.push(json!({"type": "thinking", "thinking": reasoning}));
        }
        if !self.content.is_empty() {
            blocks.push(json!({"type": "text", "text": self.content}));
        }
        blocks.extend(self.tool_calls.iter().map(ParsedCall::to_anthropic));
        Value::Array(blocks)
    }
}
