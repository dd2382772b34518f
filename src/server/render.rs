//! From an API-neutral conversation to prompt tokens: the one path every API renders
//! through, so the same conversation is the same tokens whichever API it arrives by (and
//! so hits the same pages).
//!
//! The API layers build [`Conversation`]s from their wire formats. What never reaches the
//! template: item ids (Codex sends fresh random ones per item: rendering them would break
//! every prefix match), and Claude Code's volatile billing block ([`is_billing_block`]).

use crate::conversation::describe_tools;
use crate::engine::{EngineError, Model, TokenId};
use crate::template::{Content, Message};
use crate::tools::ToolFormat;

use super::errors::ApiError;
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
    let tools = conversation.tools.template_value();
    let mut messages = conversation.messages.clone();
    if let Some(tools) = tools.as_ref().filter(|_| !model.template_renders_tools()) {
        describe_tools(&mut messages, tools);
    }
    let rendered = model
        .render_chat(&messages, tools.as_ref(), true)
        .map_err(|e| match e {
            EngineError::NoChatTemplate => ApiError::bad_request(
                "the model has no chat template; use /v1/completions for plain text",
            ),
            other => ApiError::bad_request(other.to_string()).param("messages"),
        })?;
    let tokens = model.tokenize_rendered(&rendered, 0, true);
    check_fits(tokens.len(), n_ctx)?;
    Ok(Prompt {
        tokens,
        format: model.tool_format(tools.is_some()),
        opens_reasoning: rendered.text.trim_end().ends_with("<think>"),
    })
}

/// A prompt must leave room for at least one generated token.
pub fn check_fits(tokens: usize, n_ctx: usize) -> Result<(), ApiError> {
    if tokens >= n_ctx {
        return Err(crate::service::protocol::ServiceError::PromptTooLong { tokens, n_ctx }.into());
    }
    Ok(())
}

/// The most tokens a reply may have: what the client asked for, capped by the room the
/// context leaves after the prompt.
pub fn max_reply_tokens(requested: Option<u64>, prompt_tokens: usize, n_ctx: usize) -> usize {
    let room = n_ctx.saturating_sub(prompt_tokens);
    requested.map_or(room, |r| room.min(usize::try_from(r).unwrap_or(usize::MAX)))
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
    fn reply_room_is_capped_by_the_context() {
        assert_eq!(max_reply_tokens(None, 100, 4096), 3996);
        assert_eq!(max_reply_tokens(Some(32000), 100, 4096), 3996);
        assert_eq!(max_reply_tokens(Some(5), 100, 4096), 5);
        assert!(check_fits(4096, 4096).is_err());
        let e = check_fits(5000, 4096).unwrap_err();
        assert!(e.message.contains("5000"), "{}", e.message);
        assert!(check_fits(4095, 4096).is_ok());
    }
}
