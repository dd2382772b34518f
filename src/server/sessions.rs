//! `/v1/kvrun/sessions`: what `kvrun session ls/show/rm` show, for a running server, with
//! the tier each of the server's own sessions is in. Listing and showing read the catalog
//! (on a blocking thread); removing and pinning go through the loaded model's engine that
//! holds the session (and its lock), else straight to the catalog.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Serialize;

use super::errors::ApiError;
use super::AppState;
use crate::service::handle::SessionStatus;
use crate::service::protocol::ServiceError;
use crate::service::Lease;
use crate::session::catalog::{SessionCatalog, SessionSummary};
use crate::session::name::validate_name;
use crate::session::{SessionError, SessionRow};
use crate::tiers::Tier;

/// How much of a messageless session's log `GET /v1/kvrun/sessions/{name}` shows as text.
const LOG_TEXT_TOKENS: usize = 4096;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/kvrun/sessions", get(list))
        .route("/v1/kvrun/sessions/{name}", get(show).delete(remove))
        .route("/v1/kvrun/sessions/{name}/pin", post(pin))
        .route("/v1/kvrun/sessions/{name}/unpin", post(unpin))
}

#[derive(Debug, Serialize)]
struct SessionList {
    object: &'static str,
    data: Vec<SessionRow>,
}

/// One row: the catalog's summary, and the server's view when it knows the session (one it
/// has not touched is cold).
fn row(summary: SessionSummary, status: Option<&SessionStatus>) -> SessionRow {
    let tier = status.map_or(Tier::Cold, |s| Tier::from_engine(&s.tier));
    SessionRow {
        served: status.is_some(),
        // A session the server did not name itself was named by whoever made it.
        named: status.is_none_or(|s| s.named),
        pinned: status.is_some_and(|s| s.pinned),
        ..SessionRow::new(summary, tier)
    }
}

/// A session the server holds but has not saved yet has no manifest: list it from the
/// engine's status alone.
fn unsaved_summary(status: &SessionStatus) -> SessionSummary {
    SessionSummary {
        name: status.name.clone(),
        tokens: status.tokens,
        updated_unix: status.last_used_unix,
        ..Default::default()
    }
}

/// Every session the loaded models' engines hold.
async fn served(state: &AppState) -> Vec<SessionStatus> {
    state.models.stats().await.1.sessions
}

/// The loaded model whose engine holds session `name` open.
async fn holder(state: &AppState, name: &str) -> Option<Lease> {
    for lease in state.models.loaded() {
        let holds = lease
            .handle()
            .stats()
            .await
            .is_ok_and(|s| s.sessions.iter().any(|x| x.name == name));
        if holds {
            return Some(lease);
        }
    }
    None
}

async fn list(State(state): State<AppState>) -> Response {
    let served = served(&state).await;
    let paths = state.paths.clone();
    let listed = tokio::task::spawn_blocking(move || SessionCatalog::open(&paths)?.list()).await;
    let summaries = match listed {
        Ok(Ok(summaries)) => summaries,
        Ok(Err(e)) => return session_error(&e),
        Err(e) => return internal(&e.to_string()),
    };
    let mut data: Vec<SessionRow> = summaries
        .into_iter()
        .map(|s| {
            let status = served.iter().find(|x| x.name == s.name);
            row(s, status)
        })
        .collect();
    for status in &served {
        if !data.iter().any(|r| r.summary.name == status.name) {
            data.push(row(unsaved_summary(status), Some(status)));
        }
    }
    data.sort_by(|a, b| a.summary.name.cmp(&b.summary.name));
    Json(SessionList {
        object: "list",
        data,
    })
    .into_response()
}

async fn show(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    if let Err(e) = validate_name(&name) {
        return session_error(&e);
    }
    // Read your writes: the save of the reply just returned may still be in flight.
    let held = holder(&state, &name).await;
    if let Some(lease) = &held {
        if let Err(e) = lease.handle().settle(&name).await {
            return service_error(&e);
        }
    }
    let served = served(&state).await.into_iter().find(|s| s.name == name);
    let paths = state.paths.clone();
    let wanted = name.clone();
    let read =
        tokio::task::spawn_blocking(move || SessionCatalog::open(&paths)?.read_manifest(&wanted))
            .await;
    let manifest = match read {
        Ok(Ok(manifest)) => Some(manifest),
        Ok(Err(SessionError::NotFound { .. })) if served.is_some() => None,
        Ok(Err(e)) => return session_error(&e),
        Err(e) => return internal(&e.to_string()),
    };
    let mut value = serde_json::json!({ "name": name });
    if let Some(manifest) = manifest {
        let tokens = manifest.tokens.len();
        value = serde_json::to_value(&manifest).unwrap_or(value);
        // The token log can be long; its length is what a listing wants.
        value["tokens"] = tokens.into();
        // A session that keeps no messages (the HTTP APIs' clients keep them) shows its
        // log's tail as the model reads it, so a monitor has a conversation to show.
        let model = held.as_ref().map(|l| l.model().clone()).or_else(|| {
            let loaded = state.models.loaded();
            let path = manifest.model.path.clone();
            loaded
                .into_iter()
                .find(|l| l.info().path == path)
                .map(|l| l.model().clone())
        });
        if let (true, Some(model)) = (manifest.messages.is_empty(), model) {
            let tail = &manifest.tokens[tokens.saturating_sub(LOG_TEXT_TOKENS)..];
            value["text"] = model.tokens_text(tail).into();
        }
    }
    value["tier"] = served.as_ref().map_or("cold", |s| s.tier.as_ref()).into();
    value["served"] = served.is_some().into();
    value["pinned"] = served.as_ref().is_some_and(|s| s.pinned).into();
    Json(value).into_response()
}

async fn remove(State(state): State<AppState>, Path(name): Path<String>) -> Response {
    if let Err(e) = exists(&state, &name).await {
        return e;
    }
    let removed = match holder(&state, &name).await {
        Some(lease) => lease.handle().remove_session(&name).await,
        None => {
            on_disk(&state, &name, |catalog, name| {
                catalog.remove(name).map(drop)
            })
            .await
        }
    };
    match removed {
        Ok(()) => Json(serde_json::json!({ "name": name, "deleted": true })).into_response(),
        Err(e) => service_error(&e),
    }
}

async fn pin(state: State<AppState>, name: Path<String>) -> Response {
    set_pinned(state, name, true).await
}

async fn unpin(state: State<AppState>, name: Path<String>) -> Response {
    set_pinned(state, name, false).await
}

async fn set_pinned(
    State(state): State<AppState>,
    Path(name): Path<String>,
    pinned: bool,
) -> Response {
    if let Err(e) = exists(&state, &name).await {
        return e;
    }
    let set = match holder(&state, &name).await {
        Some(lease) => lease.handle().pin_session(&name, pinned).await,
        None => on_disk(&state, &name, move |c, n| c.set_pinned(n, pinned)).await,
    };
    match set {
        Ok(()) => Json(serde_json::json!({ "name": name, "pinned": pinned })).into_response(),
        Err(e) => service_error(&e),
    }
}

/// A valid name of a session on disk or held by the server, else the 400 or 404 to answer.
async fn exists(state: &AppState, name: &str) -> Result<(), Response> {
    validate_name(name).map_err(|e| session_error(&e))?;
    let served = served(state).await.iter().any(|s| s.name == name);
    let on_disk = state.paths.sessions().join(name).is_dir();
    if served || on_disk {
        Ok(())
    } else {
        Err(session_error(&SessionError::NotFound { name: name.into() }))
    }
}

/// Runs `change` on a session no loaded model holds, on a blocking thread.
async fn on_disk(
    state: &AppState,
    name: &str,
    change: impl FnOnce(&SessionCatalog, &str) -> Result<(), SessionError> + Send + 'static,
) -> Result<(), ServiceError> {
    let paths = state.paths.clone();
    let owned = name.to_string();
    let done = tokio::task::spawn_blocking(move || {
        SessionCatalog::open(&paths).and_then(|catalog| change(&catalog, &owned))
    })
    .await;
    match done {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e @ SessionError::InUse { .. })) => Err(ServiceError::SessionInUse {
            name: name.to_string(),
            detail: e.to_string(),
        }),
        Ok(Err(e)) => Err(ServiceError::Internal(e.to_string())),
        Err(e) => Err(ServiceError::Internal(e.to_string())),
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    ApiError::new(status, message).into_response()
}

fn internal(message: &str) -> Response {
    ApiError::internal(message).into_response()
}

fn session_error(e: &SessionError) -> Response {
    let status = match e {
        SessionError::NotFound { .. } => StatusCode::NOT_FOUND,
        SessionError::InvalidName { .. } => StatusCode::BAD_REQUEST,
        SessionError::InUse { .. } => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    error(status, &e.to_string())
}

fn service_error(e: &ServiceError) -> Response {
    ApiError::from(e.clone()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_take_the_servers_tier_or_default_to_cold() {
        let summary = SessionSummary {
            name: "a".into(),
            ..Default::default()
        };
        let cold = row(summary.clone(), None);
        assert_eq!(
            (cold.tier.as_str(), cold.served, cold.named),
            ("cold", false, true)
        );
        let status = SessionStatus {
            name: "a".into(),
            tokens: 3,
            tier: "hot".into(),
            named: false,
            pinned: true,
            last_used_unix: 0,
        };
        let hot = row(summary, Some(&status));
        assert_eq!(
            (hot.tier.as_str(), hot.served, hot.named, hot.pinned),
            ("hot", true, false, true)
        );
        let json = serde_json::to_value(&hot).unwrap();
        assert_eq!(json["name"], "a");
        assert_eq!(json["tier"], "hot");
    }
}
