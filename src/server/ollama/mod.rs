//! Ollama's API: `POST /api/chat` and `/api/generate` (NDJSON streams by default),
//! `GET /api/tags`, `/api/ps`, `/api/version`, `POST /api/show`, `/api/pull`, and `GET`/`HEAD /`,
//! on the same fleet, engines and sessions as the OpenAI and Anthropic APIs: a prompt
//! renders through [`crate::server::render`] and is found by content like theirs. Errors in
//! Ollama's shape, `{"error": "..."}`. Model names as Ollama's clients write them
//! (`gemma3`, `gemma3:270m`, `smollm2:latest`) are read by [`turn::roster_name`].

mod chat;
mod generate;
mod models;
mod parse;
mod stream;
mod turn;

use axum::routing::{delete, get, post};
use axum::Router;

use super::state::AppState;

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
