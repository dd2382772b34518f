//! `kvrun serve`: OpenAI- and Anthropic-compatible HTTP in front of the service engine
//! ([`crate::service`]). Every conversation becomes a persistent paged session.
//!
//! The HTTP side renders and tokenizes (the model is shared read-only) and translates wire
//! formats; the engine thread only decodes. Data flows one way: a handler parses its API's
//! request, renders it to tokens, submits a [`crate::service::protocol::Request`], and
//! turns the replies into its API's response or event stream.
//!
//! Layout: `state` (what every handler holds); `render`, `naming`, `errors`, `sse`,
//! `generation`, `tool_choice`, `misses` (shared by the APIs); `openai`, `anthropic`,
//! `responses` (the APIs); `guard` (key, limits, CORS, request counting), `metrics` and
//! `sessions` (kvrun's own endpoints).

pub mod anthropic;
pub mod errors;
pub mod generation;
pub mod guard;
pub mod metrics;
pub mod misses;
pub mod naming;
pub mod openai;
pub mod render;
pub mod request;
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

pub use guard::Guard;
pub use state::{AppState, ServerCounters};

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
        .with_state(state)
}

/// The whole server: every route behind the guard's layers.
pub fn app(state: AppState, guard: &Guard) -> Router {
    let counters = state.counters.clone();
    guard::apply(router(state), guard, counters)
}

/// 503 while the model loads, 200 once requests can be served.
async fn health(State(state): State<AppState>) -> impl IntoResponse {
    if state.service.info().is_some() {
        (StatusCode::OK, Json(serde_json::json!({"status": "ok"})))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(serde_json::json!({"status": "loading"})),
        )
    }
}

/// The engine's counters and tiers as JSON (what `kvrun stats --connect` prints).
async fn stats(State(state): State<AppState>) -> axum::response::Response {
    match state.service.stats().await {
        Ok(stats) => {
            Json(serde_json::json!({"info": state.service.info(), "stats": stats})).into_response()
        }
        Err(e) => errors::ApiError::from(e).into_response(),
    }
}
