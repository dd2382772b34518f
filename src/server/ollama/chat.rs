//! `POST /api/chat`: messages (with tools and earlier calls) rendered with the model's chat
//! template, as the other APIs render theirs.

use std::time::Instant;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use super::parse::ChatRequest;
use super::stream::{Kind, Shape};
use super::turn;
use crate::server::body::OllamaBody;
use crate::server::errors::ApiError;
use crate::server::naming::{conversation_key, NameSources};
use crate::server::render::{max_reply_tokens, render_off_thread, ReplyReader};
use crate::server::request::parts;
use crate::server::state::AppState;
use crate::service::protocol::Ask;

pub async fn handle(
    State(state): State<AppState>,
    headers: HeaderMap,
    OllamaBody(request): OllamaBody<ChatRequest>,
) -> Response {
    match chat(state, headers, request).await {
        Ok(response) => response,
        Err(e) => e.ollama().into_response(),
    }
}

async fn chat(
    state: AppState,
    headers: HeaderMap,
    request: ChatRequest,
) -> Result<Response, ApiError> {
    let received = Instant::now();
    let common = &request.common;
    let options = common.options(&state.sampling)?;
    let conversation = request.conversation()?;
    if conversation.messages.is_empty() {
        return turn::load_or_unload(&state, common, Kind::Chat).await;
    }
    let (lease, load) = turn::lease(&state, common).await?;
    let (model, info) = parts(&lease);
    let tools = conversation.tools.clone();
    let prompt = render_off_thread(model, conversation, info.n_ctx).await?;
    let shape = Shape {
        kind: Kind::Chat,
        model: common.model().to_string(),
        reader: Some(ReplyReader::new(&prompt, &tools)),
        received,
        load,
        context: None,
    };
    let max_tokens = max_reply_tokens(
        options.limit,
        state.max_tokens,
        prompt.tokens.len(),
        info.n_ctx,
    );
    let grammar = tools.reply_grammar(prompt.format, options.grammar)?;
    let key = conversation_key(&headers, &NameSources::default());
    let ask = Ask::new(key, prompt.tokens, max_tokens)
        .with_grammar(grammar)
        .with_template(prompt.template)
        .with_sampling(options.sampling)
        .with_stop(options.stop);
    turn::respond(&state, &lease, ask, shape, common.streams()).await
}
