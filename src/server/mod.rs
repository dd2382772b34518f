//! `kvrun serve`: OpenAI-, Anthropic- and Ollama-compatible HTTP in front of the service engine
//! ([`crate::service`]). Every conversation becomes a persistent paged session.
//!
//! The HTTP side renders and tokenizes (the model is shared read-only) and translates wire
//! formats; the engine thread only decodes. Data flows one way: a handler parses its API's
//! request, renders it to tokens, submits a [`crate::service::protocol::Request`], and
//! turns the replies into its API's response or event stream.
//!
//! Layout: `state` (what every handler holds); `render`, `naming`, `errors`, `sse`,
//! `generation`, `tool_choice`, `misses` (shared by the APIs); `openai`, `anthropic`,
//! `responses`, `ollama` (the APIs); `guard` (key, limits, CORS, request counting) with `request_log`
//! (a line per request at `-v`), `metrics` and `sessions` (kvrun's own endpoints).

pub mod anthropic;
mod body;
mod counters;
pub mod errors;
pub mod generation;
pub mod guard;
pub mod listen;
pub mod metrics;
pub mod misses;
pub mod naming;
pub mod ollama;
pub mod openai;
mod protocol_refusals;
pub mod render;
pub mod request;
pub mod request_log;
pub mod responses;
pub mod sessions;
pub mod sse;
pub mod state;
pub mod tool_choice;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};

pub use counters::ServerCounters;
pub use guard::Guard;
pub use state::AppState;

/// Every route of the server. Each API module contributes its own `routes()`.
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics::handler))
        .route("/v1/kvrun/stats", get(stats))
        .merge(sessions::routes())
        .merge(openai::routes())
        .merge(anthropic::routes())
        .merge(responses::routes())
        .merge(ollama::routes())
        .fallback(unknown_route)
        .method_not_allowed_fallback(wrong_method)
        .with_state(state)
}

/// A path no API has, in the error shape of the API the path belongs to: the SDKs show a
/// body's message, and "404 status code (no body)" helps nobody.
async fn unknown_route(method: axum::http::Method, uri: axum::http::Uri) -> errors::ApiError {
    errors::ApiError::not_found(format!("no route for {method} {}", uri.path()))
        .code("unknown_route")
        .shaped(errors::Shape::for_path(uri.path()))
}

/// A known path with a method it does not take.
async fn wrong_method(method: axum::http::Method, uri: axum::http::Uri) -> errors::ApiError {
    errors::ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{} does not take {method}", uri.path()),
    )
    .code("method_not_allowed")
    .shaped(errors::Shape::for_path(uri.path()))
}

/// The whole server: every route behind the guard's layers.
pub fn app(state: AppState, guard: &Guard) -> Router {
    let counters = state.counters.clone();
    guard::apply(router(state), guard, counters)
}

/// 503 while the server's first model loads, 200 once requests can be served.
async fn health(State(state): State<AppState>) -> impl IntoResponse {
    if state.models.ready() {
        (StatusCode::OK, Json(serde_json::json!({"status": "ok"})))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"status": "loading"})),
        )
    }
}

/// The engines' counters and tiers added up, each model's state and charge, and the
/// devices they live on, as JSON (what `kvrun stats --connect` prints and `kvrun top`
/// draws). `info` is the most recently used loaded model's.
async fn stats(State(state): State<AppState>) -> axum::response::Response {
    let (models, stats, info) = state.models.stats().await;
    let devices = crate::tiers::Devices::read(&state.paths.data);
    let body = serde_json::json!({
        "info": info, "stats": stats, "devices": devices, "models": models,
    });
    Json(body).into_response()
}
