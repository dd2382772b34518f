//! Request bodies as extractors, one per API error shape: the body is read within the
//! server's size limit and its deadline (`--body-timeout`: a client that trickles a byte at
//! a time, or sends less than its `Content-Length`, gets 408) and parsed leniently (unknown fields are ignored, since real clients send
//! many), and a body that is too large, unreadable, malformed JSON or of the wrong types is
//! refused with a 4xx in the shape the client's SDK reads. Handlers get a typed request.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::errors::ApiError;
use super::guard::BodyTimeout;

/// A JSON body of an OpenAI-shaped endpoint (`/v1/chat/completions`, `/v1/completions`,
/// `/v1/responses`): refused in OpenAI's error shape.
pub struct OpenAiBody<T>(pub T);

/// A JSON body of an Anthropic endpoint (`/v1/messages`): refused in Anthropic's shape.
pub struct AnthropicBody<T>(pub T);

/// A JSON body of an Ollama endpoint (`/api/…`): refused in Ollama's shape.
pub struct OllamaBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for OpenAiBody<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        json_body(request, state)
            .await
            .map(Self)
            .map_err(IntoResponse::into_response)
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for AnthropicBody<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        json_body(request, state)
            .await
            .map(Self)
            .map_err(|e| e.anthropic().into_response())
    }
}

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for OllamaBody<T> {
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        json_body(request, state)
            .await
            .map(Self)
            .map_err(|e| e.ollama().into_response())
    }
}

async fn json_body<S: Send + Sync, T: DeserializeOwned>(
    request: Request,
    state: &S,
) -> Result<T, ApiError> {
    let deadline = request.extensions().get::<BodyTimeout>().map(|t| t.0);
    let read = Bytes::from_request(request, state);
    let read = match deadline {
        // tokio's timeout bounds the whole read; tower-http's body timeout only bounds the
        // gap between two chunks, which a byte every few seconds never exceeds.
        Some(deadline) => tokio::time::timeout(deadline, read).await.map_err(|_| {
            ApiError::new(
                axum::http::StatusCode::REQUEST_TIMEOUT,
                format!(
                    "the request body did not arrive within {deadline:?} \
                     (kvrun serve --body-timeout)"
                ),
            )
        })?,
        None => read.await,
    };
    let bytes =
        read.map_err(|rejection| ApiError::new(rejection.status(), rejection.body_text()))?;
    parse_json(&bytes)
}

/// Parses leniently: unknown fields are ignored, malformed JSON and wrong types are a 400
/// naming the field at fault where it is known.
fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut json = serde_json::Deserializer::from_slice(body);
    let parsed = serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let path = e.path().to_string();
        let error = ApiError::from_json(e.inner());
        // A flattened struct's fields show as `?`: their errors name themselves.
        match path.as_str() {
            "." | "?" => error,
            _ if e.inner().is_syntax() || e.inner().is_eof() => error,
            _ => ApiError {
                message: format!("{path}: {}", error.message),
                ..error.param(&path)
            },
        }
    })?;
    json.end().map_err(|e| ApiError::from_json(&e))?;
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;

    use super::*;

    #[test]
    fn bad_json_and_wrong_types_are_400_with_a_reason() {
        #[derive(serde::Deserialize, Debug)]
        struct Body {
            #[allow(dead_code)]
            n: u32,
        }
        let syntax = parse_json::<Body>(b"{\"n\": ").unwrap_err();
        assert_eq!(syntax.status, StatusCode::BAD_REQUEST);
        assert!(
            syntax.message.contains("not valid JSON"),
            "{}",
            syntax.message
        );
        let typed = parse_json::<Body>(b"{\"n\": \"two\"}").unwrap_err();
        assert!(typed.message.contains("wrong type"), "{}", typed.message);
        assert_eq!(typed.param.as_deref(), Some("n"));
        assert!(parse_json::<Body>(b"{\"n\": 1} x").is_err());
        // Unknown fields are ignored.
        assert!(parse_json::<Body>(b"{\"n\": 1, \"surprise\": true}").is_ok());
    }
}
