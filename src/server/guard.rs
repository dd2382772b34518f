//! What stands in front of every handler: the API key, the body-size and time limits, CORS,
//! and the per-request metrics and log line. Rejections carry the error shape of the API the path belongs
//! to, so an SDK raises its own error type with the message (OpenAI's shape everywhere under
//! `/v1/` except Anthropic's `/v1/messages*`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use subtle::ConstantTimeEq as _;

use super::counters::ServerCounters;
use super::errors::{ApiError, Shape};
use super::request_log::RequestLog;

/// The server's limits and access rules, from `kvrun serve`'s flags.
#[derive(Debug, Clone)]
pub struct Guard {
    pub api_key: Option<String>,
    pub max_body_bytes: usize,
    /// `None`: no timeout.
    pub request_timeout: Option<Duration>,
    /// Longest a client may take to send a request's whole body.
    pub body_timeout: Duration,
    /// Origins allowed by CORS; empty turns CORS off (no headers are sent).
    pub cors_origins: Vec<String>,
}

/// The paths anyone may read without the key: load balancers and supervisors probe it.
const OPEN_PATHS: [&str; 1] = ["/health"];

/// How long a request's body may take to arrive, for the body extractors
/// ([`super::body`]): a request extension, since the extractors are the ones that read.
#[derive(Debug, Clone, Copy)]
pub struct BodyTimeout(pub Duration);

/// Wraps `router` in the guard's layers. Outermost first: tracing (debug spans per
/// request), metrics (sees every final
/// status), CORS (preflights never need a key), the key, error shapes for rejections made
/// by the layers below, the body limit, the timeout, the body's deadline.
pub fn apply(router: axum::Router, guard: &Guard, counters: Arc<ServerCounters>) -> axum::Router {
    let mut router = router
        .layer(axum::Extension(BodyTimeout(guard.body_timeout)))
        .layer(axum::extract::DefaultBodyLimit::max(guard.max_body_bytes));
    if let Some(timeout) = guard.request_timeout {
        router = router.layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            timeout,
        ));
    }
    router = router
        .layer(tower_http::limit::RequestBodyLimitLayer::new(
            guard.max_body_bytes,
        ))
        .layer(axum::middleware::from_fn(shape_rejections))
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(guard.api_key.clone()),
            require_key,
        ));
    if let Some(cors) = cors_layer(&guard.cors_origins) {
        router = router.layer(cors);
    }
    router.layer(axum::middleware::from_fn_with_state(
        counters,
        count_request,
    ))
}

async fn require_key(
    State(key): State<Arc<Option<String>>>,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let open = OPEN_PATHS.contains(&path) || request.method() == Method::OPTIONS;
    match key.as_deref() {
        Some(key) if !open && !presented_key_matches(request.headers(), key) => ApiError::new(
            StatusCode::UNAUTHORIZED,
            "invalid or missing API key: send `Authorization: Bearer KEY` or `x-api-key: KEY`",
        )
        .code("invalid_api_key")
        .shaped(Shape::for_path(path))
        .into_response(),
        _ => next.run(request).await,
    }
}

/// `Authorization: Bearer KEY` or `x-api-key: KEY`, compared in constant time (the length
/// may leak; the bytes do not).
fn presented_key_matches(headers: &HeaderMap, key: &str) -> bool {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("bearer "))
        });
    let api_key = headers.get("x-api-key").and_then(|v| v.to_str().ok());
    [bearer, api_key]
        .into_iter()
        .flatten()
        .any(|given| bool::from(given.trim().as_bytes().ct_eq(key.as_bytes())))
}

/// The body limit and the timeout answer in plain text (or not at all); clients want their
/// API's error shape with a message that says which limit was hit.
async fn shape_rejections(request: Request, next: Next) -> Response {
    let shape = Shape::for_path(request.uri().path());
    let response = next.run(request).await;
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return response;
    }
    let message = match response.status() {
        StatusCode::PAYLOAD_TOO_LARGE => {
            "the request body is larger than the server's limit (kvrun serve --max-body-bytes)"
        }
        StatusCode::REQUEST_TIMEOUT => {
            "the request took longer than the server's limit (kvrun serve --request-timeout)"
        }
        _ => return response,
    };
    ApiError::new(response.status(), message)
        .shaped(shape)
        .into_response()
}

fn cors_layer(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowOrigin, Any, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods(Any)
            .allow_headers(Any),
    )
}

/// Counts each request by route pattern and status, and times it to the end of its body (a
/// stream's latency is the whole stream, not its first byte).
async fn count_request(
    State(counters): State<Arc<ServerCounters>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let endpoint = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", MatchedPath::as_str)
        .to_string();
    let log = RequestLog::new(request.method().clone(), request.uri().path());
    let response = log.scope(next.run(request)).await;
    let status = response.status();
    let session = response
        .headers()
        .get("x-kvrun-session")
        .and_then(|v| v.to_str().ok());
    log.responded(status, session);
    let streaming = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| {
            let v = v.as_bytes();
            v.starts_with(b"text/event-stream") || v.starts_with(b"application/x-ndjson")
        });
    if !streaming {
        counters.record_request(&endpoint, status, started.elapsed());
        log.write();
        return response;
    }
    let done = RecordOnDrop {
        counters,
        endpoint,
        status,
        started,
        log,
    };
    let (parts, body) = response.into_parts();
    let body = Body::from_stream(body.into_data_stream().map(move |chunk| {
        let _ = &done;
        chunk
    }));
    Response::from_parts(parts, body)
}

/// Records a streamed request when its body ends or the client goes away.
struct RecordOnDrop {
    counters: Arc<ServerCounters>,
    endpoint: String,
    status: StatusCode,
    started: Instant,
    log: RequestLog,
}

impl Drop for RecordOnDrop {
    fn drop(&mut self) {
        self.counters
            .record_request(&self.endpoint, self.status, self.started.elapsed());
        self.log.write();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn either_header_carries_the_key() {
        assert!(presented_key_matches(
            &headers(&[("authorization", "Bearer k1")]),
            "k1"
        ));
        assert!(presented_key_matches(
            &headers(&[("x-api-key", "k1")]),
            "k1"
        ));
        assert!(!presented_key_matches(
            &headers(&[("x-api-key", "k2")]),
            "k1"
        ));
        assert!(!presented_key_matches(
            &headers(&[("authorization", "k1")]),
            "k1"
        ));
        assert!(!presented_key_matches(
            &headers(&[("x-api-key", "k1x")]),
            "k1"
        ));
        assert!(!presented_key_matches(&HeaderMap::new(), "k1"));
        // A wrong bearer does not hide a right x-api-key (Claude Code sends only the latter).
        assert!(presented_key_matches(
            &headers(&[("authorization", "Bearer no"), ("x-api-key", "k1")]),
            "k1"
        ));
    }
}
