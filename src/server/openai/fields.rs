//! The response fields OpenAI's chat and completions endpoints share: usage, finish
//! reasons, token text and log-probabilities.

use serde_json::{json, Value};

use crate::llama::{Model, TokenLogprob};
use crate::service::protocol::{FinishReason, Usage};

/// OpenAI's `usage`: `prompt_tokens` counts the whole prompt, `cached_tokens` the part
/// served from the KV store (any tier) instead of being prefilled.
pub(super) fn usage_object(usage: &Usage) -> Value {
    json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.generated,
        "total_tokens": usage.prompt_tokens + usage.generated,
        "prompt_tokens_details": {"cached_tokens": usage.cached.total()},
    })
}

/// OpenAI's `finish_reason`.
pub(super) fn finish_reason(finish: FinishReason, called_tools: bool) -> &'static str {
    match finish {
        _ if called_tools => "tool_calls",
        FinishReason::MaxTokens | FinishReason::ContextFull => "length",
        FinishReason::EndOfGeneration | FinishReason::StopString | FinishReason::Cancelled => {
            "stop"
        }
    }
}

pub(super) fn token_text(model: &Model, token: i32) -> (String, Vec<u8>) {
    let mut bytes = Vec::new();
    model.token_bytes(token, true, &mut bytes);
    (String::from_utf8_lossy(&bytes).into_owned(), bytes)
}

/// One chat `logprobs.content` entry.
pub(super) fn chat_logprob(model: &Model, text: &str, lp: &TokenLogprob) -> Value {
    let (_, bytes) = token_text(model, lp.token);
    let top: Vec<Value> = lp
        .top
        .iter()
        .map(|&(token, logprob)| {
            let (text, bytes) = token_text(model, token);
            json!({"token": text, "logprob": logprob, "bytes": bytes})
        })
        .collect();
    json!({"token": text, "logprob": lp.logprob, "bytes": bytes, "top_logprobs": top})
}
