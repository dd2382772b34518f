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
//! `responses` (the APIs); `metrics` and `sessions` (kvrun's own endpoints).

pub mod anthropic;
pub mod errors;
pub mod generation;
pub mod misses;
pub mod naming;
pub mod openai;
pub mod render;
pub mod request;
pub mod responses;
pub mod sse;
pub mod state;
pub mod tool_choice;

use axum::Router;

pub use state::{AppState, ServerCounters};

/// Every route of the server. Each API module contributes its own `routes()`.
pub fn router(state: AppState) -> Router {
    Router::new()
        .merge(openai::routes())
        .merge(anthropic::routes())
        .merge(responses::routes())
        .with_state(state)
}
