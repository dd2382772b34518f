//! Errors in each API's own shape. A handler fails with an [`ApiError`]; the shape it is
//! written in (OpenAI's `{"error": {message, type, param, code}}`, Anthropic's
//! `{"type": "error", "error": {type, message}}` or Ollama's `{"error": message}`) is
//! chosen by the API it belongs to, so every client's SDK can parse what it gets.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::service::fleet::FleetError;
use crate::service::protocol::ServiceError;

/// Which API's error shape a response uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    #[default]
    OpenAi,
    Anthropic,
    Ollama,
}

impl Shape {
    /// The shape a path answers in, for errors made before a handler runs (the key, the
    /// body limit, the timeout): Anthropic's under `/v1/messages`, Ollama's under `/api/`,
    /// OpenAI's elsewhere.
    pub fn for_path(path: &str) -> Self {
        if path.starts_with("/v1/messages") {
            Self::Anthropic
        } else if path.starts_with("/api/") {
            Self::Ollama
        } else {
            Self::OpenAi
        }
    }
}

/// Seconds a client is asked to wait before retrying a full queue or a loading model.
const RETRY_AFTER_SECS: u64 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub shape: Shape,
    pub status: StatusCode,
    pub message: String,
    /// The request field at fault (OpenAI's `param`).
    pub param: Option<String>,
    /// A machine-readable code (OpenAI's `code`).
    pub code: Option<&'static str>,
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            shape: Shape::OpenAi,
            status,
            message: message.into(),
            param: None,
            code: None,
            retry_after: None,
        }
    }

    /// 400: the request is malformed or asks for something kvrun cannot do.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        // Internal errors often quote a file (the store, a stored response): the client is
        // told which, never where the server keeps it.
        let message = crate::format::without_paths(&message.into());
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// 503 while the model is still loading.
    pub fn loading() -> Self {
        Self {
            retry_after: Some(RETRY_AFTER_SECS),
            ..Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the model is still loading; retry shortly",
            )
        }
    }

    /// 503: the server began shutting down while this reply was generated, so it is cut
    /// short. What was generated is kept in `session`; a retry continues from there.
    pub fn interrupted(session: &str) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the server is shutting down and cut this reply short (what was generated is \
                 saved in session '{session}'); retry once it is back"
            ),
        )
        .code("reply_interrupted")
    }

    pub fn param(mut self, param: &str) -> Self {
        self.param = Some(param.to_string());
        self
    }

    pub fn code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The same error in Anthropic's shape.
    pub fn anthropic(self) -> Self {
        self.shaped(Shape::Anthropic)
    }

    /// The same error in Ollama's shape.
    pub fn ollama(self) -> Self {
        self.shaped(Shape::Ollama)
    }

    pub fn shaped(mut self, shape: Shape) -> Self {
        self.shape = shape;
        self
    }

    /// A request body that is not JSON, or not of the expected types.
    pub fn from_json(e: &serde_json::Error) -> Self {
        let what = if e.is_syntax() || e.is_eof() {
            "the request body is not valid JSON"
        } else {
            "the request body has a field of the wrong type or a missing field"
        };
        Self::bad_request(format!("{what}: {e}"))
    }

    /// OpenAI's `type` (a wrong key is an `invalid_request_error` with code
    /// `invalid_api_key` there).
    fn openai_type(&self) -> &'static str {
        match self.status.as_u16() {
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            400..=499 => "invalid_request_error",
            _ => "server_error",
        }
    }

    /// Anthropic's `error.type` (its documented list).
    fn anthropic_type(&self) -> &'static str {
        match self.status.as_u16() {
            401 => "authentication_error",
            403 => "permission_error",
            404 => "not_found_error",
            408 | 504 => "timeout_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            503 | 529 => "overloaded_error",
            400..=499 => "invalid_request_error",
            _ => "api_error",
        }
    }

    /// The body in this error's shape.
    pub fn body(&self) -> serde_json::Value {
        match self.shape {
            Shape::OpenAi => json!({"error": {
                "message": self.message,
                "type": self.openai_type(),
                "param": self.param,
                "code": self.code,
            }}),
            Shape::Anthropic => json!({
                "type": "error",
                "error": {"type": self.anthropic_type(), "message": self.message},
            }),
            // Ollama's clients read the message alone (and the status).
            Shape::Ollama => json!({"error": self.message}),
        }
    }
}

impl From<ServiceError> for ApiError {
    fn from(e: ServiceError) -> Self {
        // The engine's errors may quote store files; a client hears no server folder.
        let message = crate::format::without_paths(&e.to_string());
        match e {
            ServiceError::PromptTooLong { .. } => Self::bad_request(message)
                .param("messages")
                .code("context_length_exceeded"),
            ServiceError::EmptyPrompt => Self::bad_request(message).param("messages"),
            ServiceError::BadToken(_) => Self::bad_request(message).param("prompt"),
            ServiceError::Grammar(_)
            | ServiceError::InvalidSetting(_)
            | ServiceError::Refused(_) => Self::bad_request(message),
            ServiceError::QueueFull(_) => Self {
                retry_after: Some(RETRY_AFTER_SECS),
                ..Self::new(StatusCode::SERVICE_UNAVAILABLE, message).code("queue_full")
            },
            ServiceError::SessionInUse { .. } => {
                Self::new(StatusCode::CONFLICT, message).code("session_in_use")
            }
            ServiceError::Incompatible { .. } => {
                Self::new(StatusCode::CONFLICT, message).code("session_incompatible")
            }
            ServiceError::ShuttingDown => Self::new(StatusCode::SERVICE_UNAVAILABLE, message),
            ServiceError::Internal(_) => Self::internal(message),
        }
    }
}

impl From<FleetError> for ApiError {
    fn from(e: FleetError) -> Self {
        let message = e.to_string();
        match e {
            FleetError::Unknown(_) => Self::not_found(message)
                .code("model_not_found")
                .param("model"),
            FleetError::TooLarge { .. } => Self::bad_request(message)
                .code("model_too_large")
                .param("model"),
            FleetError::Busy { retry_after, .. } => Self {
                // The wait the fleet expects for the model's turn, in whole seconds.
                retry_after: Some(retry_after.as_secs_f64().ceil() as u64),
                ..Self::new(StatusCode::SERVICE_UNAVAILABLE, message).code("models_busy")
            },
            FleetError::LoadFailed { .. } => Self::internal(message).code("model_load_failed"),
            FleetError::Loading { .. } => Self::loading(),
            FleetError::ShuttingDown => Self::new(StatusCode::SERVICE_UNAVAILABLE, message),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status.is_server_error() {
            tracing::warn!(status = %self.status, "{}", self.message);
        } else {
            tracing::debug!(status = %self.status, "{}", self.message);
        }
        let mut response = (self.status, axum::Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_shape_has_message_type_param_code() {
        let e = ApiError::bad_request("n must be 1").param("n");
        assert_eq!(
            e.body(),
            json!({"error": {"message": "n must be 1", "type": "invalid_request_error",
                "param": "n", "code": null}})
        );
    }

    #[test]
    fn anthropic_shape_has_type_error() {
        let e = ApiError::not_found("no such thing").anthropic();
        assert_eq!(
            e.body(),
            json!({"type": "error", "error": {"type": "not_found_error", "message": "no such thing"}})
        );
        let full: ApiError = ServiceError::QueueFull(9).into();
        assert_eq!(full.anthropic().body()["error"]["type"], "overloaded_error");
    }

    #[test]
    fn service_errors_map_to_status_codes() {
        let cases = [
            (
                ServiceError::PromptTooLong {
                    tokens: 9000,
                    n_ctx: 4096,
                },
                400,
            ),
            (ServiceError::EmptyPrompt, 400),
            (ServiceError::BadToken(-1), 400),
            (ServiceError::QueueFull(3), 503),
            (ServiceError::ShuttingDown, 503),
            (ServiceError::Internal("x".into()), 500),
        ];
        for (service, status) in cases {
            let e = ApiError::from(service.clone());
            assert_eq!(e.status.as_u16(), status, "{service:?}");
        }
        let long = ApiError::from(ServiceError::PromptTooLong {
            tokens: 9000,
            n_ctx: 4096,
        });
        assert!(long.message.contains("9000"), "{}", long.message);
        let full = ApiError::from(ServiceError::QueueFull(3)).into_response();
        assert_eq!(full.headers()[header::RETRY_AFTER], "1");
    }

    #[test]
    fn anthropic_paths_get_anthropic_shape() {
        assert_eq!(Shape::for_path("/v1/messages"), Shape::Anthropic);
        assert_eq!(
            Shape::for_path("/v1/messages/count_tokens"),
            Shape::Anthropic
        );
        assert_eq!(Shape::for_path("/v1/chat/completions"), Shape::OpenAi);
        assert_eq!(Shape::for_path("/metrics"), Shape::OpenAi);
        assert_eq!(Shape::for_path("/api/chat"), Shape::Ollama);
        let e = ApiError::not_found("model 'x' not found").ollama();
        assert_eq!(e.body(), json!({"error": "model 'x' not found"}));
    }
}
