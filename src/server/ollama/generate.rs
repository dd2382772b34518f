//! `POST /api/generate`: a prompt completed. Rendered as one user turn (after `system`)
//! with the model's chat template, through a plain `template` of the request's own, or
//! with `raw: true` tokenized as it is. An empty prompt loads or unloads the model.

use std::time::Instant;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use super::parse::{fill_template, GenerateRequest};
use super::stream::{Kind, Shape};
use super::turn;
use crate::llama::{Grammar, Model, TokenId};
use crate::server::body::OllamaBody;
use crate::server::errors::ApiError;
use crate::server::naming::{conversation_key, NameSources};
use crate::server::render::{
    check_fits, check_length_fits, max_reply_tokens, render_off_thread, text_message, Conversation,
    ReplyReader,
};
use crate::server::request::parts;
use crate::server::state::AppState;
use crate::service::protocol::{Ask, ReplyGrammar};
use crate::template::TemplateIdentity;

pub async fn handle(
    State(state): State<AppState>,
    headers: HeaderMap,
    OllamaBody(request): OllamaBody<GenerateRequest>,
) -> Response {
    match generate(state, headers, request).await {
        Ok(response) => response,
        Err(e) => e.ollama().into_response(),
    }
}

/// The prompt's tokens, how to read its reply, and the chat template that rendered it.
struct Rendered {
    tokens: Vec<TokenId>,
    reader: Option<ReplyReader>,
    template: Option<TemplateIdentity>,
}

async fn generate(
    state: AppState,
    headers: HeaderMap,
    request: GenerateRequest,
) -> Result<Response, ApiError> {
    let received = Instant::now();
    let common = &request.common;
    common.refuse_images()?;
    let options = common.options(&state.sampling)?;
    let prompt = request.prompt.as_deref().unwrap_or("");
    let system = request.system.as_deref().unwrap_or("");
    if prompt.is_empty() && system.is_empty() && request.template.is_none() {
        return turn::load_or_unload(&state, common, Kind::Generate).await;
    }
    if request.suffix.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(ApiError::bad_request(
            "suffix needs a fill-in-the-middle template, which kvrun's chat templates do not \
             have; send raw: true with the model's own FIM tokens",
        )
        .param("suffix"));
    }
    let (lease, load) = turn::lease(&state, common).await?;
    let (model, info) = parts(&lease);
    let rendered = match (&request.template, request.raw) {
        (_, true) => plain(&model, prompt, info.n_ctx)?,
        (Some(template), false) => plain(
            &model,
            &fill_template(template, system, prompt)?,
            info.n_ctx,
        )?,
        (None, false) => {
            let mut messages = Vec::new();
            if !system.is_empty() {
                messages.push(text_message("system", system.to_string()));
            }
            messages.push(text_message("user", prompt.to_string()));
            let conversation = Conversation {
                messages,
                tools: Default::default(),
            };
            let prompt = render_off_thread(model, conversation, info.n_ctx).await?;
            Rendered {
                reader: Some(ReplyReader::new(&prompt, &Default::default())),
                template: prompt.template,
                tokens: prompt.tokens,
            }
        }
    };
    let shape = Shape {
        kind: Kind::Generate,
        model: common.model().to_string(),
        reader: rendered.reader,
        received,
        load,
        // Ollama returns no context for a raw prompt.
        context: (!request.raw).then(|| rendered.tokens.clone()),
    };
    let max_tokens = max_reply_tokens(
        options.limit,
        state.max_tokens,
        rendered.tokens.len(),
        info.n_ctx,
    );
    let grammar = options
        .grammar
        .map(|gbnf| ReplyGrammar::forced(Grammar::Gbnf(gbnf)));
    let key = conversation_key(&headers, &NameSources::default());
    let ask = Ask::new(key, rendered.tokens, max_tokens)
        .with_grammar(grammar)
        .with_template(rendered.template)
        .with_sampling(options.sampling)
        .with_stop(options.stop);
    turn::respond(&state, &lease, ask, shape, common.streams()).await
}

/// A prompt tokenized as it is (with the BOS the model wants), its reply read as text.
fn plain(model: &Model, text: &str, n_ctx: usize) -> Result<Rendered, ApiError> {
    check_length_fits(model, text, n_ctx).map_err(|e| e.param("prompt"))?;
    let tokens = model.tokenize_prompt(text);
    check_fits(tokens.len(), n_ctx)?;
    Ok(Rendered {
        tokens,
        reader: None,
        template: None,
    })
}
