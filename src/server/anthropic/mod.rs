//! Anthropic's Messages API: `POST /v1/messages` (with or without `?beta=true`) and
//! `POST /v1/messages/count_tokens`. Errors in Anthropic's shape.

mod parse;
mod shape;
mod stream;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::json;

use parse::MessagesRequest;
use shape::{Shape, TOOL_USE_ID_PREFIX};

use super::body::AnthropicBody;
use super::errors::ApiError;
use super::generation::{response_id, start, with_save_headers, with_session_header};
use super::naming::{conversation_key, NameSources};
use super::render::{max_reply_tokens, render_off_thread, Prompt, ReplyReader};
use super::request::{parts, stop_strings, StopField};
use super::sse;
use super::state::AppState;
use crate::service::protocol::Ask;
use crate::service::Lease;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/messages", post(messages))
        .route("/v1/messages/count_tokens", post(count_tokens))
}

async fn messages(
    State(state): State<AppState>,
    headers: HeaderMap,
    AnthropicBody(request): AnthropicBody<MessagesRequest>,
) -> Response {
    match messages_inner(state, headers, request).await {
        Ok(response) => response,
        Err(e) => e.anthropic().into_response(),
    }
}

async fn messages_inner(
    state: AppState,
    headers: HeaderMap,
    request: MessagesRequest,
) -> Result<Response, ApiError> {
    let requested = match request.max_tokens {
        None => return Err(ApiError::bad_request("max_tokens: Field required").param("max_tokens")),
        Some(0) => {
            return Err(ApiError::bad_request("max_tokens must be at least 1").param("max_tokens"))
        }
        Some(n) => n,
    };
    let sampling = request.sampling.settings(&state.sampling)?;
    let stop = stop_strings(
        request.stop_sequences.clone().map(StopField::Many),
        "stop_sequences",
    )?;
    let (prompt, tools, lease) = render_request(&state, &request).await?;
    let info = lease.info().clone();
    let user_id = request.metadata.as_ref().and_then(|m| m.get("user_id"));
    let key = conversation_key(
        &headers,
        &NameSources {
            metadata_user_id: user_id,
            ..Default::default()
        },
    );
    let shape = Shape {
        id: response_id("msg_"),
        model_name: info.model_name.clone(),
        reader: ReplyReader::new(&prompt, &tools),
    };
    let max_tokens = max_reply_tokens(
        Some(requested),
        state.max_tokens,
        prompt.tokens.len(),
        info.n_ctx,
    );
    let ask = Ask::new(key, prompt.tokens, max_tokens)
        .with_grammar(tools.reply_grammar(prompt.format, None)?)
        .with_template(prompt.template)
        .with_sampling(sampling)
        .with_stop(stop);
    let generation = start(&state, &lease, ask).await?;
    let session = generation.started.session.clone();
    let response = if request.stream == Some(true) {
        sse::respond(move |sink| async move {
            let _ = stream::produce(&sink, generation, &shape).await;
        })
    } else {
        let collected = generation.collect().await?;
        let reply = shape.reader.parse(&collected.text, TOOL_USE_ID_PREFIX);
        let body = Json(shape.message(&reply, &collected.usage)).into_response();
        with_save_headers(body, &collected.usage)
    };
    Ok(with_session_header(response, &session))
}

/// `{"input_tokens": N}`: the prompt rendered exactly as `/v1/messages` would, no engine call.
async fn count_tokens(
    State(state): State<AppState>,
    AnthropicBody(request): AnthropicBody<MessagesRequest>,
) -> Response {
    let counted = async {
        let (prompt, _, _) = render_request(&state, &request).await?;
        Ok::<_, ApiError>(json!({"input_tokens": prompt.tokens.len()}))
    };
    match counted.await {
        Ok(body) => Json(body).into_response(),
        Err(e) => e.anthropic().into_response(),
    }
}

async fn render_request(
    state: &AppState,
    request: &MessagesRequest,
) -> Result<(Prompt, super::tool_choice::ToolSet, Lease), ApiError> {
    let conversation = request.conversation(&state.counters)?;
    let lease = request.target.lease(state).await?;
    let (model, info) = parts(&lease);
    let tools = conversation.tools.clone();
    let prompt = render_off_thread(model, conversation, info.n_ctx).await?;
    Ok((prompt, tools, lease))
}

#[cfg(test)]
mod tests {
    use super::shape::usage_object;
    use crate::service::protocol::CachedTokens;

    #[test]
    fn input_tokens_exclude_the_cached_part() {
        let cached = CachedTokens {
            hot: 0,
            warm: 900,
            cold: 50,
        };
        let u = usage_object(1000, &cached, 7);
        assert_eq!(u["input_tokens"], 50);
        assert_eq!(u["cache_read_input_tokens"], 950);
        assert_eq!(u["cache_creation_input_tokens"], 0);
        assert_eq!(u["output_tokens"], 7);
    }
}
