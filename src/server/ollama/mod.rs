//! Ollama's API: `POST /api/chat` and `/api/generate` (NDJSON streams by default),
//! `GET /api/tags`, `/api/ps`, `/api/version`, `POST /api/show`, `/api/pull`, and `GET`/`HEAD /`,
//! on the same fleet, engines and sessions as the OpenAI and Anthropic APIs: a prompt
//! renders through [`crate::server::render`] and is found by content like theirs. Errors in
//! Ollama's shape, `{"error": "..."}`. Model names as Ollama's clients write them
//! (`gemma3`, `gemma3:270m`, `smollm2:latest`) are read by [`roster_name`].

mod chat;
mod generate;
mod models;
mod parse;
mod stream;

use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde_json::json;

use super::errors::ApiError;
use super::generation::{start, with_save_headers, with_session_header};
use super::request::ModelFields;
use super::state::AppState;
use crate::service::fleet::{KeepAlive, Roster};
use crate::service::protocol::Ask;
use crate::service::Lease;
use parse::Common;
use stream::{Kind, Shape};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(|| async { "Ollama is running" }))
        .route("/api/chat", post(chat::handle))
        .route("/api/generate", post(generate::handle))
        .route("/api/tags", get(models::tags))
        .route("/api/ps", get(models::ps))
        .route("/api/show", post(models::show))
        .route("/api/version", get(models::version))
        .route("/api/pull", post(models::pull))
        .route("/api/delete", delete(models::delete))
        .route("/api/copy", post(models::copy))
        .route("/api/create", post(models::create))
        .route("/api/push", post(models::push))
        .route("/api/embed", post(models::embed))
        .route("/api/embeddings", post(models::embed))
        .route(
            "/api/blobs/{digest}",
            post(models::create).head(models::create),
        )
}

/// The header that says how many of a prompt's tokens the store served (any tier).
const CACHED_HEADER: &str = "x-kvrun-cached-tokens";

/// The roster's name for an Ollama model name: the name itself when the roster knows it,
/// else without `:latest` (Ollama's default tag), else the name before any other tag
/// (`gemma3:270m` is `gemma3`), each also as a default model's short name (`gemma3`
/// names Gemma 3's file). A name none of these reach is passed on without its tag, for the
/// roster's patterns and default.
pub fn roster_name(name: &str, roster: &Roster) -> String {
    let name = name.trim();
    let untagged = name.strip_suffix(":latest").unwrap_or(name);
    let base = untagged.split_once(':').map_or(untagged, |(base, _)| base);
    for candidate in [name, untagged, base] {
        if roster.find(candidate).is_some() {
            return candidate.to_string();
        }
        let known = crate::pull::known_model(candidate).map(|m| m.descriptor.file_name);
        if let Some(file) = known.filter(|f| roster.find(f).is_some()) {
            return file.to_string();
        }
    }
    if untagged != name {
        return untagged.to_string();
    }
    base.to_string()
}

/// The model a request names, loaded (with its `keep_alive`), and how long that took.
/// Ollama requires a model name.
async fn lease(state: &AppState, common: &Common) -> Result<(Lease, Duration), ApiError> {
    let fields = model_fields(state, common)?;
    let began = Instant::now();
    let lease = fields.lease(state).await?;
    Ok((lease, began.elapsed()))
}

fn model_fields(state: &AppState, common: &Common) -> Result<ModelFields, ApiError> {
    let name = common.model();
    if name.trim().is_empty() {
        return Err(ApiError::bad_request("model is required").param("model"));
    }
    Ok(ModelFields {
        model: Some(roster_name(name, state.models.roster())),
        keep_alive: common.target.keep_alive.clone(),
    })
}

/// A request with nothing to generate (no messages, an empty prompt): loads the model, or
/// with `keep_alive: 0` unloads it (its conversations saved first), as Ollama does.
async fn load_or_unload(
    state: &AppState,
    common: &Common,
    kind: Kind,
) -> Result<Response, ApiError> {
    let fields = model_fields(state, common)?;
    let keep_alive = KeepAlive::from_json(fields.keep_alive.as_ref())
        .map_err(|e| ApiError::bad_request(e).param("keep_alive"))?;
    let reason = if keep_alive == Some(KeepAlive::For(Duration::ZERO)) {
        state.models.unload_now(fields.model.as_deref()).await?;
        "unload"
    } else {
        drop(fields.lease(state).await?);
        "load"
    };
    let mut body = json!({
        "model": common.model(), "created_at": stream::timestamp(),
        "done": true, "done_reason": reason,
    });
    match kind {
        Kind::Chat => body["message"] = json!({"role": "assistant", "content": ""}),
        Kind::Generate => body["response"] = "".into(),
    }
    Ok(Json(body).into_response())
}

/// Starts `ask` and answers it: an NDJSON stream, or one object. The session and the
/// cached prompt tokens are in headers either way.
async fn respond(
    state: &AppState,
    lease: &Lease,
    ask: Ask,
    shape: Shape,
    streams: bool,
) -> Result<Response, ApiError> {
    let generation = start(state, lease, ask).await?;
    let session = generation.started.session.clone();
    let cached = generation.started.cached.total();
    let mut response = if streams {
        stream::respond(move |sink| async move {
            let _ = shape.stream(&sink, generation).await;
        })
    } else {
        let (body, usage) = shape.whole(generation).await?;
        with_save_headers(Json(body).into_response(), &usage)
    };
    response
        .headers_mut()
        .insert(CACHED_HEADER, axum::http::HeaderValue::from(cached));
    Ok(with_session_header(response, &session))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ollama_names_reach_the_roster() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "gemma-3-270m-q4_k_m.gguf",
            "smollm2-135m-instruct-q4_1.gguf",
            "tiny.gguf",
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        let mut roster = Roster::folder(dir.path(), &[]);
        roster.add_alias("local:7b", "tiny").unwrap();
        let cases = [
            ("gemma3", "gemma-3-270m-q4_k_m.gguf"),
            ("gemma3:270m", "gemma-3-270m-q4_k_m.gguf"),
            ("gemma3:latest", "gemma-3-270m-q4_k_m.gguf"),
            ("smollm2:latest", "smollm2-135m-instruct-q4_1.gguf"),
            ("tiny:latest", "tiny"),
            ("tiny", "tiny"),
            ("local:7b", "local:7b"),
            ("llama3:8b", "llama3"),
            ("claude-x:latest", "claude-x"),
        ];
        for (sent, expected) in cases {
            assert_eq!(roster_name(sent, &roster), expected, "{sent}");
        }
    }
}
