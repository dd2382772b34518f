//! `POST /v1/completions`: plain continuation of a prompt given as text or token ids.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Value};

use super::fields::{finish_reason, token_text, usage_object};
use crate::clock::unix_now;
use crate::llama::{Model, TokenId};
use crate::server::body::OpenAiBody;
use crate::server::errors::ApiError;
use crate::server::generation::{
    response_id, save_extension, start, with_save_headers, with_session_header, Collected,
    Generation, Step,
};
use crate::server::naming::{conversation_key, NameSources};
use crate::server::render::{check_fits, check_length_fits, max_reply_tokens};
use crate::server::request::{parts, stop_strings, SamplingFields, StopField};
use crate::server::sse::{self, Disconnected, EventSink};
use crate::server::state::AppState;
use crate::service::protocol::Ask;

/// OpenAI's default `max_tokens` for completions.
const DEFAULT_MAX_TOKENS: u64 = 16;
/// The most alternatives legacy `logprobs` may ask for (OpenAI's limit).
const MAX_LOGPROBS: u64 = 5;

#[derive(Debug, Deserialize)]
pub struct CompletionRequest {
    prompt: Value,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    stop: Option<StopField>,
    #[serde(flatten)]
    sampling: SamplingFields,
    #[serde(flatten)]
    target: crate::server::request::ModelFields,
    #[serde(default)]
    logprobs: Option<u64>,
    #[serde(default)]
    n: Option<u64>,
    #[serde(default)]
    best_of: Option<u64>,
    #[serde(default)]
    echo: Option<bool>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    stream_options: Option<super::chat_parse::StreamOptions>,
    #[serde(default)]
    user: Option<String>,
    /// Accepted with no effect, but a string when given.
    #[serde(default)]
    suffix: Option<Value>,
}

/// The prompt's tokens: a string (tokenized with BOS as the model wants), or token ids
/// (each checked against the vocabulary). A list of one prompt is that prompt.
fn prompt_tokens(model: &Model, prompt: &Value, n_ctx: usize) -> Result<Vec<TokenId>, ApiError> {
    let bad = |m: String| ApiError::bad_request(m).param("prompt");
    match prompt {
        Value::String(text) => {
            check_length_fits(model, text, n_ctx).map_err(|e| e.param("prompt"))?;
            Ok(model.tokenize_prompt(text))
        }
        Value::Array(items) if items.iter().all(Value::is_number) => items
            .iter()
            .map(|v| {
                v.as_i64()
                    .and_then(|id| TokenId::try_from(id).ok())
                    .filter(|&id| model.is_valid_token(id))
                    .ok_or_else(|| bad(format!("token id {v} is outside the model's vocabulary")))
            })
            .collect(),
        Value::Array(items) if items.len() == 1 => prompt_tokens(model, &items[0], n_ctx),
        Value::Array(_) => Err(bad("only one prompt per request is served".into())),
        _ => Err(bad("prompt must be a string or a list of token ids".into())),
    }
}

pub async fn handle(
    State(state): State<AppState>,
    headers: HeaderMap,
    OpenAiBody(request): OpenAiBody<CompletionRequest>,
) -> Result<Response, ApiError> {
    if request.n.is_some_and(|n| n != 1) {
        return Err(ApiError::bad_request("n must be 1").param("n"));
    }
    if !matches!(request.suffix, None | Some(Value::Null | Value::String(_))) {
        return Err(ApiError::bad_request("suffix must be a string").param("suffix"));
    }
    if request.best_of.is_some_and(|n| n != 1) {
        return Err(ApiError::bad_request(
            "best_of must be 1: kvrun generates one completion per request",
        )
        .param("best_of"));
    }
    if request.echo == Some(true) {
        return Err(ApiError::bad_request("echo is not supported").param("echo"));
    }
    if request.logprobs.is_some_and(|n| n > MAX_LOGPROBS) {
        return Err(
            ApiError::bad_request(format!("logprobs must be at most {MAX_LOGPROBS}"))
                .param("logprobs"),
        );
    }
    if request.max_tokens == Some(0) {
        return Err(ApiError::bad_request("max_tokens must be at least 1").param("max_tokens"));
    }
    let sampling = request.sampling.settings(&state.sampling)?;
    let stop = stop_strings(request.stop.clone(), "stop")?;
    let lease = request.target.lease(&state).await?;
    let (model, info) = parts(&lease);
    let prompt = prompt_tokens(&model, &request.prompt, info.n_ctx)?;
    if prompt.is_empty() {
        return Err(ApiError::bad_request("the prompt is empty").param("prompt"));
    }
    check_fits(prompt.len(), info.n_ctx)?;
    let requested = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let key = conversation_key(
        &headers,
        &NameSources {
            user: request.user.as_deref(),
            ..Default::default()
        },
    );
    let max_tokens = max_reply_tokens(Some(requested), state.max_tokens, prompt.len(), info.n_ctx);
    let ask = Ask::new(key, prompt, max_tokens)
        .with_sampling(sampling)
        .with_stop(stop)
        .with_logprobs(request.logprobs.map(|n| n as usize));
    let generation = start(&state, &lease, ask).await?;
    let shape = Shape {
        id: response_id("cmpl-"),
        created: unix_now(),
        model_name: info.model_name,
    };
    let session = generation.started.session.clone();
    if request.stream == Some(true) {
        let include_usage = request.stream_options.is_some_and(|o| o.include_usage);
        let response = sse::respond(move |sink| async move {
            let _ = stream(&sink, generation, &shape, include_usage).await;
        });
        return Ok(with_session_header(response, &session));
    }
    let collected = generation.collect().await?;
    let logprobs = request
        .logprobs
        .map(|_| legacy_logprobs(&model, &collected));
    let mut body = shape.object(
        &collected.text,
        Some(finish_reason(collected.usage.finish, false)),
    );
    body["choices"][0]["logprobs"] = json!(logprobs);
    body["usage"] = usage_object(&collected.usage);
    let response = with_save_headers(Json(body).into_response(), &collected.usage);
    Ok(with_session_header(response, &session))
}

struct Shape {
    id: String,
    created: u64,
    model_name: String,
}

impl Shape {
    fn object(&self, text: &str, finish: Option<&str>) -> Value {
        json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model_name,
            "choices": [{"index": 0, "text": text, "logprobs": null, "finish_reason": finish}],
        })
    }
}

/// The legacy completions `logprobs` object.
fn legacy_logprobs(model: &Model, collected: &Collected) -> Value {
    let (mut tokens, mut logprobs, mut top, mut offsets) = (vec![], vec![], vec![], vec![]);
    let mut offset = 0;
    for piece in &collected.tokens {
        let Some(lp) = &piece.logprob else { continue };
        tokens.push(json!(piece.text));
        logprobs.push(json!(lp.logprob));
        let alternatives: serde_json::Map<String, Value> = lp
            .top
            .iter()
            .map(|&(t, l)| (token_text(model, t).0, json!(l)))
            .collect();
        top.push(Value::Object(alternatives));
        offsets.push(json!(offset));
        offset += piece.text.len();
    }
    json!({"tokens": tokens, "token_logprobs": logprobs, "top_logprobs": top, "text_offset": offsets})
}

async fn stream(
    sink: &EventSink,
    mut generation: Generation,
    shape: &Shape,
    include_usage: bool,
) -> Result<(), Disconnected> {
    let usage = loop {
        match generation.next().await {
            Ok(Step::Token(piece)) if piece.text.is_empty() => {}
            Ok(Step::Token(piece)) => sink.data(&shape.object(&piece.text, None)).await?,
            Ok(Step::Done(usage)) => break usage,
            Err(e) => {
                sink.data(&e.body()).await?;
                return sink.done().await;
            }
        }
    };
    let finish = finish_reason(usage.finish, false);
    let mut last = shape.object("", Some(finish));
    if let Some(saved) = save_extension(&usage) {
        last["kvrun"] = saved;
    }
    sink.data(&last).await?;
    if include_usage {
        let mut last = shape.object("", None);
        last["choices"] = json!([]);
        last["usage"] = usage_object(&usage);
        sink.data(&last).await?;
    }
    sink.done().await
}
