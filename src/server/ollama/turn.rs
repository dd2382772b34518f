//! What every Ollama turn shares: the model an Ollama name stands for, loaded with the
//! request's `keep_alive` (or unloaded), and the reply, streamed or whole, with the
//! session and the cached prompt tokens in headers.

use std::time::{Duration, Instant};

use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::parse::Common;
use super::stream::{self, Kind, Shape};
use crate::server::errors::ApiError;
use crate::server::generation::{start, with_save_headers, with_session_header};
use crate::server::request::ModelFields;
use crate::server::state::AppState;
use crate::service::fleet::{KeepAlive, Roster};
use crate::service::protocol::Ask;
use crate::service::Lease;

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
pub(super) async fn lease(
    state: &AppState,
    common: &Common,
) -> Result<(Lease, Duration), ApiError> {
    let fields = model_fields(state, common)?;
    let began = Instant::now();
    let lease = fields.lease(state).await?;
    Ok((lease, began.elapsed()))
}

fn model_fields(state: &AppState, common: &Common) -> Result<ModelFields, ApiError> {
    let name = match &common.target.model {
        None | Some(serde_json::Value::Null) => "",
        Some(serde_json::Value::String(name)) => name,
        Some(other) => {
            return Err(
                ApiError::bad_request(format!("model must be a string, not {other}"))
                    .param("model"),
            )
        }
    };
    if name.trim().is_empty() {
        return Err(ApiError::bad_request("model is required").param("model"));
    }
    let name = roster_name(name, state.models.roster());
    Ok(ModelFields {
        model: Some(name.into()),
        keep_alive: common.target.keep_alive.clone(),
    })
}

/// A request with nothing to generate (no messages, an empty prompt): loads the model, or
/// with `keep_alive: 0` unloads it (its conversations saved first), as Ollama does.
pub(super) async fn load_or_unload(
    state: &AppState,
    common: &Common,
    kind: Kind,
) -> Result<Response, ApiError> {
    let fields = model_fields(state, common)?;
    let keep_alive = KeepAlive::from_json(fields.keep_alive.as_ref())
        .map_err(|e| ApiError::bad_request(e).param("keep_alive"))?;
    let reason = if keep_alive == Some(KeepAlive::For(Duration::ZERO)) {
        let name = fields.model.as_ref().and_then(serde_json::Value::as_str);
        state.models.unload_now(name).await?;
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
pub(super) async fn respond(
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
