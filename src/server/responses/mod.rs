//! OpenAI's Responses API: `POST /v1/responses`, `GET` and `DELETE /v1/responses/{id}`.
//! Responses are stored on disk by default (`store`), so `previous_response_id` works
//! across restarts. Built-in tool types (`web_search`, ...) are ignored with a warning;
//! `namespace` tools are served as their functions (see [`tools`]).

mod input;
mod output;
mod reply;
mod store;
mod stream;
mod tools;

pub use tools::flat_name;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::OpenAiBody;
use super::errors::ApiError;
use super::generation::{response_id, start, with_save_headers, with_session_header};
use super::naming::{conversation_key, NameSources};
use super::render::{max_reply_tokens, render_off_thread, text_message, Conversation, ReplyReader};
use super::request::{json_format_grammar, parts, SamplingFields};
use super::sse;
use super::state::AppState;
use super::tool_choice::ToolSet;
use crate::clock::unix_now;
use crate::service::protocol::Ask;
use crate::tools::ParsedReply;
use output::Header;
use reply::Reply;

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/v1/responses", post(create))
        .route("/v1/responses/{id}", get(retrieve).delete(delete))
}

#[derive(Debug, Deserialize)]
struct ResponsesRequest {
    input: Value,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    tools: Option<Vec<minijinja::Value>>,
    #[serde(default)]
    tool_choice: Option<Value>,
    #[serde(default)]
    previous_response_id: Option<String>,
    #[serde(default)]
    store: Option<bool>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    max_output_tokens: Option<u64>,
    #[serde(flatten)]
    sampling: SamplingFields,
    #[serde(flatten)]
    target: crate::server::request::ModelFields,
    #[serde(default)]
    text: Option<Value>,
    #[serde(default)]
    prompt_cache_key: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    metadata: Option<Value>,
}

impl ResponsesRequest {
    /// The grammar `text.format` asks for (`json_schema` or `json_object`).
    fn format_grammar(&self) -> Result<Option<String>, ApiError> {
        let text = match &self.text {
            None | Some(Value::Null) => return Ok(None),
            Some(text @ Value::Object(_)) => text,
            Some(_) => return Err(ApiError::bad_request("text must be an object").param("text")),
        };
        let Some(format) = text.get("format").filter(|f| !f.is_null()) else {
            return Ok(None);
        };
        json_format_grammar(format, format.get("schema"), "text.format")
    }
}

async fn create(
    State(state): State<AppState>,
    headers: HeaderMap,
    OpenAiBody(request): OpenAiBody<ResponsesRequest>,
) -> Result<Response, ApiError> {
    if request.max_output_tokens == Some(0) {
        return Err(
            ApiError::bad_request("max_output_tokens must be at least 1")
                .param("max_output_tokens"),
        );
    }
    let sampling = request.sampling.settings(&state.sampling)?;
    let format_grammar = request.format_grammar()?;
    let previous = match &request.previous_response_id {
        None => None,
        Some(id) => Some(store::load(&state.paths, id)?.ok_or_else(|| {
            ApiError::bad_request(format!("Previous response with id '{id}' not found."))
                .param("previous_response_id")
                .code("previous_response_not_found")
        })?),
    };
    let mut history = previous
        .as_ref()
        .map(|p| p.messages.clone())
        .unwrap_or_default();
    input::push_input(&mut history, &request.input)?;
    let mut messages = Vec::new();
    if let Some(instructions) = request.instructions.as_ref().filter(|i| !i.is_empty()) {
        messages.push(text_message("system", instructions.clone()));
    }
    messages.extend(history.iter().cloned());
    let (definitions, namespaces) = tools::definitions(request.tools.as_deref().unwrap_or(&[]))?;
    let tools = ToolSet::new(definitions, tools::choice(request.tool_choice.as_ref())?)?;
    let lease = request.target.lease(&state).await?;
    let (model, info) = parts(&lease);
    let conversation = Conversation {
        messages,
        tools: tools.clone(),
    };
    let prompt = render_off_thread(model, conversation, info.n_ctx).await?;
    let key = conversation_key(
        &headers,
        &NameSources {
            prompt_cache_key: request.prompt_cache_key.as_deref(),
            user: request.user.as_deref(),
            previous_session: previous.as_ref().map(|p| p.session.as_str()),
            ..Default::default()
        },
    );
    let header = Header {
        id: response_id(store::ID_PREFIX),
        created_at: unix_now(),
        model: info.model_name.clone(),
        instructions: request.instructions.clone(),
        previous_response_id: request.previous_response_id.clone(),
        store: request.store.unwrap_or(true),
        tools: tools
            .definitions
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .collect(),
        tool_choice: request.tool_choice.clone().unwrap_or(json!("auto")),
        temperature: sampling.temp,
        top_p: sampling.top_p,
        max_output_tokens: request.max_output_tokens,
        metadata: request.metadata.clone().unwrap_or(json!({})),
    };
    let reader = ReplyReader::new(&prompt, &tools);
    let max_tokens = max_reply_tokens(
        request.max_output_tokens,
        state.max_tokens,
        prompt.tokens.len(),
        info.n_ctx,
    );
    let ask = Ask::new(key, prompt.tokens, max_tokens)
        .with_grammar(tools.reply_grammar(prompt.format, format_grammar)?)
        .with_template(prompt.template)
        .with_sampling(sampling);
    let generation = start(&state, &lease, ask).await?;
    let session = generation.started.session.clone();
    let reply = Reply {
        header,
        reader,
        namespaces,
        history,
        paths: state.paths.clone(),
    };
    let response = if request.stream == Some(true) {
        sse::respond(move |sink| async move {
            let _ = stream::produce(&sink, generation, &reply).await;
        })
    } else {
        let collected = generation.collect().await?;
        let parsed = reply.reader.parse(&collected.text, output::CALL_ID_PREFIX);
        let items = whole_output(&parsed, &reply.namespaces);
        let status = output::final_status(collected.usage.finish);
        let object = reply
            .header
            .response(status, &items, Some(&collected.usage));
        reply.store(&object, &parsed, &collected.usage.session)?;
        with_save_headers(Json(object).into_response(), &collected.usage)
    };
    Ok(with_session_header(response, &session))
}

/// The output items of a whole reply.
fn whole_output(parsed: &ParsedReply, namespaces: &tools::Namespaces) -> Vec<Value> {
    let mut items = Vec::new();
    if let Some(reasoning) = &parsed.reasoning {
        items.push(output::reasoning_item(&response_id("rs_"), reasoning));
    }
    if !parsed.content.is_empty() || parsed.tool_calls.is_empty() {
        items.push(output::message_item(
            &response_id("msg_"),
            &parsed.content,
            "completed",
        ));
    }
    for call in &parsed.tool_calls {
        let item_id = response_id("fc_");
        let arguments = call.arguments.to_string();
        items.push(output::call_item(
            &item_id,
            call,
            &arguments,
            "completed",
            namespaces,
        ));
    }
    items
}

async fn retrieve(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    match store::load(&state.paths, &id)? {
        Some(stored) => Ok(Json(stored.response).into_response()),
        None => Err(not_found(&id)),
    }
}

async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    if store::remove(&state.paths, &id)? {
        Ok(Json(json!({"id": id, "object": "response", "deleted": true})).into_response())
    } else {
        Err(not_found(&id))
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("No response found with id '{id}'."))
}
