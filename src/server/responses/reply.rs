//! A Responses API reply: its header, its output items, and the copy kept for
//! `previous_response_id` (whose conversation names calls as the template saw them: a
//! namespaced tool by its flat name).

use serde_json::Value;

use super::super::errors::ApiError;
use super::super::render::{text_message, ReplyReader};
use super::output::Header;
use super::store::StoredResponse;
use super::tools::Namespaces;
use crate::template::{FunctionCall, Message, ToolCall};
use crate::tools::ParsedReply;

/// What shaping and storing the reply needs.
pub(super) struct Reply {
    pub(super) header: Header,
    pub(super) reader: ReplyReader,
    /// Where calls to namespaced tools go back to.
    pub(super) namespaces: Namespaces,
    /// The conversation so far, without `instructions` (stored for the next request).
    pub(super) history: Vec<Message>,
    pub(super) paths: std::sync::Arc<crate::paths::Paths>,
}

impl Reply {
    /// Stores the response with its conversation (when `store` is on), so a later
    /// `previous_response_id` can continue it, after a restart too.
    pub(super) fn store(
        &self,
        object: &Value,
        parsed: &ParsedReply,
        session: &str,
    ) -> Result<(), ApiError> {
        if !self.header.store {
            return Ok(());
        }
        let mut assistant = text_message("assistant", parsed.content.clone());
        assistant.reasoning_content = parsed.reasoning.clone();
        assistant.tool_calls = parsed
            .tool_calls
            .iter()
            .map(|c| ToolCall {
                id: Some(c.id.clone()),
                kind: "function".into(),
                function: FunctionCall {
                    name: c.name.clone(),
                    arguments: minijinja::Value::from(c.arguments.to_string()),
                },
            })
            .collect();
        let mut messages = self.history.clone();
        messages.push(assistant);
        let stored = StoredResponse::new(object.clone(), session.to_string(), messages);
        super::store::save(&self.paths, &self.header.id, &stored)
    }
}
