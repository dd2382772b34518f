//! Anthropic's response shape: the message object, its content blocks and its usage.

use serde_json::{json, Value};

use super::super::render::ReplyReader;
use crate::service::protocol::{CachedTokens, FinishReason, Usage};
use crate::tools::ParsedReply;

/// Anthropic's tool_use ids start so.
pub(super) const TOOL_USE_ID_PREFIX: &str = "toolu_";

/// What shaping the reply needs.
pub(super) struct Shape {
    pub(super) id: String,
    pub(super) model_name: String,
    pub(super) reader: ReplyReader,
}

/// Anthropic's usage. `input_tokens` counts only the prompt tokens not read from the
/// cache (Anthropic's sense; OpenAI's `prompt_tokens` counts them all), and
/// `cache_read_input_tokens` those served from any tier. `cache_creation_input_tokens` is
/// always 0: the prefilled tokens kvrun then saves as pages are already in
/// `input_tokens`, and Anthropic's total input is the sum of the three.
pub(super) fn usage_object(
    prompt_tokens: usize,
    cached: &CachedTokens,
    output_tokens: usize,
) -> Value {
    json!({
        "input_tokens": prompt_tokens.saturating_sub(cached.total()),
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cached.total(),
        "cache_creation_input_tokens": 0,
    })
}

impl Shape {
    /// `stop_reason` and `stop_sequence`.
    pub(super) fn stop(usage: &Usage, called_tools: bool) -> (&'static str, Option<String>) {
        match usage.finish {
            _ if called_tools => ("tool_use", None),
            FinishReason::MaxTokens | FinishReason::ContextFull => ("max_tokens", None),
            FinishReason::StopString => ("stop_sequence", usage.stop_sequence.clone()),
            FinishReason::EndOfGeneration | FinishReason::Cancelled => ("end_turn", None),
        }
    }

    pub(super) fn message(&self, reply: &ParsedReply, usage: &Usage) -> Value {
        let mut content = reply.to_anthropic();
        for block in content.as_array_mut().into_iter().flatten() {
            if block["type"] == "thinking" {
                // The SDKs expect a signature; kvrun's reasoning is not signed.
                block["signature"] = json!("");
            }
        }
        let (stop_reason, stop_sequence) = Self::stop(usage, !reply.tool_calls.is_empty());
        json!({
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.model_name,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": stop_sequence,
            "usage": usage_object(usage.prompt_tokens, &usage.cached, usage.generated),
        })
    }
}
