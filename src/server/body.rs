//! Request bodies as extractors, one per API error shape: the body is read within the
//! server's limit and parsed leniently (unknown fields are ignored, since real clients send
//! many), and a body that is too large, unreadable, malformed JSON or of the wrong types is
//! refused with a 4xx in the shape the client's SDK reads. Handlers get a typed request.

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;

use super::errors::ApiError;

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
    let bytes = Bytes::from_request(request, state)
        .await
        .map_err(|rejection| ApiError::new(rejection.status(), rejection.body_text()))?;
    parse_json(&bytes)
}

/// Parses leniently: unknown fields are ignored, malformed JSON and wrong types are a 400.
fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError::from_json(&e))
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
        // Unknown fields are ignored.
        assert!(parse_json::<Body>(b"{\"n\": 1, \"surprise\": true}").is_ok());
    }
}
