//! Chat messages in the shape HF chat templates read (the OpenAI chat format).

use serde::{Deserialize, Serialize};

use super::TemplateError;

/// One message. Only `role` is required; templates see exactly the fields that are set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    /// None renders as `none`, as transformers passes an assistant turn that only calls
    /// tools (`"content": null`).
    #[serde(default)]
    pub content: Option<Content>,
    /// The model's reasoning in an assistant turn (OpenAI-compatible servers' name for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// On a `tool` message: the call this is the result of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// On a `tool` message: the function's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A message's content: a string, or a list of typed parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(rename = "type", default = "function_kind")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_kind() -> String {
    "function".into()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    /// A JSON object, or (OpenAI's wire format) a string holding one. Kept as a minijinja
    /// value so the object's key order survives into the template.
    pub arguments: minijinja::Value,
}

/// The roles kvrun accepts; `developer` is OpenAI's newer name for `system`.
const ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

impl Message {
    pub fn text(role: &str, text: &str) -> Self {
        Self {
            role: role.into(),
            content: Some(Content::Text(text.into())),
            reasoning_content: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
        }
    }

    /// Refuses what no template can render faithfully: unknown roles and non-text parts.
    pub(super) fn check(&self, index: usize) -> Result<(), TemplateError> {
        if !ROLES.contains(&self.role.as_str()) {
            return Err(TemplateError::BadMessage {
                index,
                detail: format!(
                    "unknown role '{}' (expected one of {})",
                    self.role,
                    ROLES.join(", ")
                ),
            });
        }
        if let Some(Content::Parts(parts)) = &self.content {
            for part in parts {
                if part.kind != "text" || part.text.is_none() {
                    return Err(TemplateError::BadMessage {
                        index,
                        detail: format!(
                            "content part of type '{}' is not supported (only text parts)",
                            part.kind
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The message as the template sees it: `developer` becomes `system` (no open template
    /// knows `developer`), string tool-call arguments become objects (HF templates expect a
    /// mapping; llama.cpp's server converts them the same way).
    pub(super) fn to_template_value(&self) -> minijinja::Value {
        let mut message = self.clone();
        if message.role == "developer" {
            message.role = "system".into();
        }
        for call in &mut message.tool_calls {
            if let Some(text) = call.function.arguments.as_str() {
                if let Ok(object) = serde_json::from_str::<minijinja::Value>(text) {
                    call.function.arguments = object;
                }
            }
        }
        minijinja::Value::from_serialize(&message)
    }
}
