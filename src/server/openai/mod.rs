//! OpenAI's API: `POST /v1/chat/completions`, `POST /v1/completions`, `GET /v1/models`
//! (and `/v1/models/{id}`). Any model name in a request is served by the loaded model;
//! responses name it by `--alias` or the model file's stem, the ids `/v1/models` lists.

mod chat;
mod chat_parse;
mod completions;
mod fields;

pub(super) use chat_parse::{function_tools, tool_call};

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use super::errors::ApiError;
use super::request::ready;
use super::state::AppState;
use crate::service::ServiceInfo;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/chat/completions", post(chat::handle))
        .route("/v1/completions", post(completions::handle))
        .route("/v1/models", get(list_models))
        .route("/v1/models/{id}", get(one_model))
}

/// One model id, with the context a request may use (llama-server's `meta`, vLLM's
/// `max_model_len`): aider and opencode size their prompts by it.
fn model_object(info: &ServiceInfo, id: &str) -> Value {
    json!({
        "id": id,
        "object": "model",
        "created": info.created_unix,
        "owned_by": "kvrun",
        "context_length": info.n_ctx,
        "max_model_len": info.n_ctx,
        "meta": {"n_ctx": info.n_ctx, "n_ctx_train": info.n_ctx_train},
    })
}

async fn list_models(State(state): State<AppState>) -> Response {
    match ready(&state) {
        Ok((_, info)) => {
            let data: Vec<Value> = info
                .model_ids
                .iter()
                .map(|id| model_object(&info, id))
                .collect();
            Json(json!({"object": "list", "data": data})).into_response()
        }
        Err(e) => e.into_response(),
    }
}

/// The model under one of its ids; any other id is 404 in OpenAI's shape.
async fn one_model(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    match ready(&state) {
        Ok((_, info)) if info.model_ids.contains(&id) => {
            Json(model_object(&info, &id)).into_response()
        }
        Ok((_, info)) => ApiError::not_found(format!(
            "no model '{id}' here; this server's models are: {}",
            info.model_ids.join(", ")
        ))
        .code("model_not_found")
        .param("model")
        .into_response(),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::fields::*;
    use crate::service::protocol::CachedTokens;
    use crate::service::protocol::{FinishReason, Usage};
    use std::time::Duration;

    #[test]
    fn usage_counts_the_whole_prompt_and_the_cached_part() {
        let usage = Usage {
            session: "s".into(),
            prompt_tokens: 100,
            cached: CachedTokens {
                hot: 10,
                warm: 20,
                cold: 30,
            },
            prefilled: 40,
            generated: 5,
            tokens: vec![7; 5],
            finish: FinishReason::EndOfGeneration,
            stop_sequence: None,
            queued: Duration::ZERO,
            time_to_first_token: Duration::ZERO,
            decode: Duration::ZERO,
        };
        let u = usage_object(&usage);
        assert_eq!(u["prompt_tokens"], 100);
        assert_eq!(u["total_tokens"], 105);
        assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 60);
        assert_eq!(finish_reason(FinishReason::MaxTokens, false), "length");
        assert_eq!(
            finish_reason(FinishReason::EndOfGeneration, true),
            "tool_calls"
        );
    }
}
