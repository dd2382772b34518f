//! What `kvrun run` prints at the end: the reply, or with `--json` the whole report with
//! its session fields.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use super::tools::{ReplyFields, ToolRequest};
use crate::cli::RunArgs;
use crate::dialogue::{CacheMiss, Dialogue};
use crate::env::Env;
use crate::llama::{TokenId, TokenLogprob};
use crate::sequence::{Generated, StopReason};
use crate::session::live::{RestoreDecision, RestorePhases};
use crate::tools::parse_reply;

/// Default reply length for `run` when -n is not given.
pub(super) const DEFAULT_MAX_TOKENS: u32 = 256;

#[derive(Serialize)]
struct RunReport {
    text: String,
    tokens: Vec<TokenId>,
    prompt_tokens: usize,
    prefilled_tokens: usize,
    generated_tokens: usize,
    stop_reason: StopReason,
    n_ctx: u32,
    load_ms: f64,
    prefill_ms: f64,
    decode_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<Vec<TokenLogprob>>,
    #[serde(flatten)]
    reply: ReplyFields,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    session: Option<SessionFields>,
}

#[derive(Serialize)]
pub(super) struct SessionFields {
    pub session: String,
    pub session_tokens: usize,
    pub restored_tokens: usize,
    pub reused_tokens: usize,
    pub restore_ms: f64,
    /// Where `restore_ms` went.
    pub restore_phases: RestorePhases,
    /// Restore or recompute, as the restore chose.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restore_decision: Option<RestoreDecision>,
    pub save_ms: f64,
    /// Where the template stopped extending the session's earlier rendering.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_miss: Option<CacheMiss>,
}

pub(super) fn finish(
    env: &Env,
    args: &RunArgs,
    n_ctx: u32,
    prompt_tokens: usize,
    load_ms: f64,
    (generated, reply): (Generated, ReplyFields),
    session: Option<SessionFields>,
) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if args.json {
        let report = RunReport {
            text: generated.text.clone(),
            generated_tokens: generated.tokens.len(),
            tokens: generated.tokens.clone(),
            prompt_tokens,
            prefilled_tokens: generated.prefilled,
            stop_reason: generated.stop,
            n_ctx,
            load_ms,
            prefill_ms: generated.prefill_time.as_secs_f64() * 1e3,
            decode_ms: generated.decode_time.as_secs_f64() * 1e3,
            logprobs: args.logprobs.map(|_| generated.logprobs.clone()),
            reply,
            session,
        };
        serde_json::to_writer(&mut out, &report)?;
        writeln!(out)?;
    } else if !generated.text.ends_with('\n') && !generated.text.is_empty() {
        writeln!(out)?;
    }
    out.flush()?;
    if generated.stop == StopReason::ContextFull {
        env.ui
            .warn("generation stopped: the context is full (raise --ctx-size)");
    }
    Ok(ExitCode::SUCCESS)
}

/// The reply split into content, reasoning and tool calls (chat mode only).
pub(super) fn reply_fields(
    conversation: &Dialogue<'_>,
    tools: Option<&ToolRequest>,
    text: &str,
) -> ReplyFields {
    if conversation.raw {
        return ReplyFields::default();
    }
    let parses_calls = tools.is_some_and(ToolRequest::parses_calls);
    let reply = parse_reply(
        conversation.tool_format(),
        parses_calls,
        conversation.opens_reasoning,
        text,
    );
    ReplyFields::new(&reply, tools.is_some())
}
