//! OpenAI's API: `POST /v1/chat/completions`, `POST /v1/completions`, `GET /v1/models`
//! (and `/v1/models/{id}`). A request's `model` picks one of the server's models (see
//! [`crate::service::fleet::roster`]); responses name the model that answered by its id.

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
use super::state::AppState;
use crate::service::fleet::ListedModel;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/chat/completions", post(chat::handle))
        .route("/v1/completions", post(completions::handle))
        .route("/v1/models", get(list_models))
        .route("/v1/models/{id}", get(one_model))
}

/// One model id, with the context a request may use (llama-server's `meta`, vLLM's
/// `max_model_len`) once the model has been loaded: aider and opencode size their prompts
/// by it. `loaded` says whether it is in memory now.
fn model_object(id: &str, listed: &ListedModel) -> Value {
    let mut object = json!({
        "id": id,
        "object": "model",
        "created": listed.info.as_ref().map_or(0, |i| i.created_unix),
        "owned_by": "kvrun",
        "loaded": listed.loaded,
    });
    if let Some(info) = &listed.info {
        object["context_length"] = info.n_ctx.into();
        object["max_model_len"] = info.n_ctx.into();
        object["meta"] = json!({"n_ctx": info.n_ctx, "n_ctx_train": info.n_ctx_train});
    }
    object
}

/// Every model and alias this server serves, loaded or not.
async fn list_models(State(state): State<AppState>) -> Response {
    let data: Vec<Value> = state
        .models
        .listing()
        .iter()
        .flat_map(|m| m.ids.iter().map(move |id| model_object(id, m)))
        .collect();
    Json(json!({"object": "list", "data": data})).into_response()
}

/// A model under one of its ids; any other id is 404 in OpenAI's shape.
async fn one_model(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    let listing = state.models.listing();
    match listing.iter().find(|m| m.ids.contains(&id)) {
        Some(m) => Json(model_object(&id, m)).into_response(),
        None => ApiError::not_found(format!(
            "no model '{id}' here; this server's models are: {}",
            listing
                .iter()
                .flat_map(|m| m.ids.iter().cloned())
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .code("model_not_found")
        .param("model")
        .into_response(),
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
            saved: None,
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
