//! Ollama's model endpoints over the server's roster and fleet: `/api/tags` (every model
//! and exact alias), `/api/ps` (the loaded ones, their charge and expiry), `/api/show`
//! (a model's GGUF facts and chat template), `/api/version`, and `/api/pull` (a model the
//! server has is pulled already). What kvrun does not do over HTTP (create, push, copy,
//! delete, embeddings) is a 501 that says what to do instead.

use std::path::Path;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::turn::roster_name;
use crate::gguf::{GgufFile, GgufValue};
use crate::server::body::OllamaBody;
use crate::server::errors::ApiError;
use crate::server::state::AppState;
use crate::service::fleet::{KeepAlive, ModelState, ModelStatus};

/// The Ollama API version kvrun answers as (clients gate features on it).
const OLLAMA_VERSION: &str = "0.12.6";

/// Ollama's `expires_at` for a model kept forever.
const FOREVER_UNIX: u64 = 253_402_300_799;

/// An id as Ollama lists names: `NAME:TAG`, `:latest` when it has no tag.
fn tagged(id: &str) -> String {
    if id.contains(':') {
        id.to_string()
    } else {
        format!("{id}:latest")
    }
}

/// A model file's header, read on a blocking thread (a vocabulary is megabytes).
async fn header(path: &Path) -> Option<GgufFile> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || crate::gguf::read_header(&path).ok())
        .await
        .ok()
        .flatten()
}

/// Ollama's `details`.
fn details(file: Option<&GgufFile>) -> Value {
    let Some(file) = file else {
        return json!({"format": "gguf"});
    };
    let info = file.info();
    json!({
        "parent_model": "",
        "format": "gguf",
        "family": info.architecture,
        "families": [info.architecture],
        "parameter_size": parameter_size(info.n_params),
        "quantization_level": info.quantization,
    })
}

/// `268.10M`, `7.6B`, as Ollama writes a parameter count.
fn parameter_size(n: u64) -> String {
    match n {
        n if n >= 1_000_000_000 => format!("{:.1}B", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.2}M", n as f64 / 1e6),
        n => n.to_string(),
    }
}

fn modified_at(path: &Path) -> String {
    let nanos = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    super::stream::rfc3339(nanos)
}

/// `GET /api/tags`: every model under each of its names.
pub async fn tags(State(state): State<AppState>) -> Response {
    let mut models = Vec::new();
    for entry in state.models.roster().entries() {
        let file = header(&entry.path).await;
        let size = std::fs::metadata(&entry.path).map_or(0, |m| m.len());
        for id in std::iter::once(&entry.id).chain(&entry.also) {
            models.push(json!({
                "name": tagged(id),
                "model": tagged(id),
                "modified_at": modified_at(&entry.path),
                "size": size,
                "digest": file.as_ref().map_or("", |f| f.fingerprint()),
                "details": details(file.as_ref()),
            }));
        }
    }
    Json(json!({"models": models})).into_response()
}

/// When an idle model is unloaded: its keep-alive after its last request (from now while
/// requests hold it).
fn expires_at(status: &ModelStatus) -> String {
    let keep = KeepAlive::parse(&status.keep_alive).unwrap_or(KeepAlive::Forever);
    let since = if status.in_use > 0 || status.idle_since_unix == 0 {
        crate::clock::unix_now()
    } else {
        status.idle_since_unix
    };
    let unix = match keep {
        KeepAlive::Forever => FOREVER_UNIX,
        KeepAlive::For(d) => since + d.as_secs(),
    };
    super::stream::rfc3339(u128::from(unix) * 1_000_000_000)
}

/// `GET /api/ps`: the loaded models, what they hold in memory, and when they expire.
pub async fn ps(State(state): State<AppState>) -> Response {
    let (fleet, _, _) = state.models.stats().await;
    let listing = state.models.listing();
    let mut models = Vec::new();
    for status in fleet
        .models
        .iter()
        .filter(|m| m.state == ModelState::Loaded)
    {
        let file = header(Path::new(&status.path)).await;
        let n_ctx = listing
            .iter()
            .find(|m| m.ids.first() == Some(&status.id))
            .and_then(|m| m.info.as_ref())
            .map_or(0, |i| i.n_ctx);
        models.push(json!({
            "name": tagged(&status.id),
            "model": tagged(&status.id),
            "size": status.charge.total(),
            "size_vram": 0,
            "digest": file.as_ref().map_or("", |f| f.fingerprint()),
            "details": details(file.as_ref()),
            "expires_at": expires_at(status),
            "context_length": n_ctx,
        }));
    }
    Json(json!({"models": models})).into_response()
}

pub async fn version() -> Response {
    Json(json!({"version": OLLAMA_VERSION, "kvrun": env!("CARGO_PKG_VERSION")})).into_response()
}

/// A body that names a model: `model`, or `name` (older clients).
#[derive(Debug, Deserialize)]
pub struct Named {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    name: Option<String>,
}

impl Named {
    /// The roster entry's index the name reaches exactly (no default, no pattern).
    fn entry(&self, state: &AppState) -> Result<usize, ApiError> {
        let name = self.model.as_deref().or(self.name.as_deref()).unwrap_or("");
        if name.trim().is_empty() {
            return Err(ApiError::bad_request("model is required").param("model"));
        }
        let roster = state.models.roster();
        roster.find(&roster_name(name, roster)).ok_or_else(|| {
            ApiError::not_found(format!(
                "model '{name}' not found; this server's models are: {}",
                roster.ids().join(", ")
            ))
        })
    }
}

/// GGUF metadata as Ollama's `model_info`: scalars only (vocabularies are huge), the
/// chat template apart (it is `template`).
fn model_info(file: &GgufFile) -> Map<String, Value> {
    let mut info = Map::new();
    for (key, value) in file.metadata() {
        let value = match value {
            GgufValue::Array(_) => continue,
            GgufValue::String(_) if key.starts_with("tokenizer.chat_template") => continue,
            GgufValue::String(s) => json!(s),
            GgufValue::Bool(b) => json!(b),
            GgufValue::F32(f) => json!(f),
            GgufValue::F64(f) => json!(f),
            other => match other.as_u64() {
                Some(n) => json!(n),
                None => continue,
            },
        };
        info.insert(key.to_string(), value);
    }
    info.insert(
        "general.parameter_count".into(),
        file.info().n_params.into(),
    );
    info
}

/// `POST /api/show`: a model's details, GGUF metadata, chat template, the server's
/// sampling defaults as `parameters`, and what it can do.
pub async fn show(State(state): State<AppState>, OllamaBody(named): OllamaBody<Named>) -> Response {
    let entry = match named.entry(&state) {
        Ok(entry) => entry,
        Err(e) => return e.ollama().into_response(),
    };
    let path = state.models.roster().entries()[entry].path.clone();
    let Some(file) = header(&path).await else {
        return ApiError::internal(format!(
            "the model file {} is not readable GGUF",
            path.display()
        ))
        .ollama()
        .into_response();
    };
    let s = &state.sampling;
    let parameters = format!(
        "temperature {}\ntop_k {}\ntop_p {}\nmin_p {}\nrepeat_penalty {}",
        s.temp, s.top_k, s.top_p, s.min_p, s.repeat_penalty
    );
    let file_name = path.file_name().map(|f| f.to_string_lossy().into_owned());
    Json(json!({
        "modelfile": format!("# served by kvrun\nFROM {}\n", file_name.unwrap_or_default()),
        "parameters": parameters,
        "template": file.get_str("tokenizer.chat_template").unwrap_or(""),
        "details": details(Some(&file)),
        "model_info": model_info(&file),
        "capabilities": ["completion", "tools"],
        "modified_at": modified_at(&path),
    }))
    .into_response()
}

/// `POST /api/pull`: kvrun serves the models its folder held when it started, so a model
/// it has is pulled already; another is pulled with `kvrun pull` and a restart.
pub async fn pull(State(state): State<AppState>, OllamaBody(named): OllamaBody<Named>) -> Response {
    match named.entry(&state) {
        Ok(_) => Json(json!({"status": "success"})).into_response(),
        Err(e) if e.status == StatusCode::NOT_FOUND => ApiError::not_found(format!(
            "{}; kvrun does not download over its API: run `kvrun pull NAME|URL` and restart \
             `kvrun serve`",
            e.message
        ))
        .ollama()
        .into_response(),
        Err(e) => e.ollama().into_response(),
    }
}

fn not_served(what: &str, instead: &str) -> Response {
    ApiError::new(
        StatusCode::NOT_IMPLEMENTED,
        format!("{what} is not supported by kvrun serve; {instead}"),
    )
    .ollama()
    .into_response()
}

pub async fn delete() -> Response {
    not_served(
        "deleting a model",
        "remove its .gguf file from kvrun's models folder (`kvrun models` lists it)",
    )
}

pub async fn copy() -> Response {
    not_served(
        "copying a model",
        "give it another name with `kvrun serve --model-alias NEW=MODEL` or [model-aliases]",
    )
}

pub async fn create() -> Response {
    not_served(
        "creating a model",
        "put a .gguf file in kvrun's models folder, or `kvrun pull` one",
    )
}

pub async fn push() -> Response {
    not_served("pushing a model", "kvrun serves local GGUF files only")
}

pub async fn embed() -> Response {
    not_served("embeddings", "kvrun serves text generation only")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_sizes_as_ollama_writes_them() {
        assert_eq!(tagged("gemma3"), "gemma3:latest");
        assert_eq!(tagged("local:7b"), "local:7b");
        assert_eq!(parameter_size(268_098_176), "268.10M");
        assert_eq!(parameter_size(7_615_616_512), "7.6B");
    }
}
