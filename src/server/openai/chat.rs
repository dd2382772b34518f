//! `POST /v1/chat/completions`: a whole reply, or SSE chunks ending with `data: [DONE]`.

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::chat_parse::ChatRequest;
use super::fields::{chat_logprob, finish_reason, usage_object};
use crate::clock::unix_now;
use crate::llama::Model;
use crate::server::body::OpenAiBody;
use crate::server::errors::ApiError;
use crate::server::generation::{
    response_id, save_extension, start, with_save_headers, with_session_header, Generation, Step,
};
use crate::server::naming::{conversation_key, NameSources};
use crate::server::render::{max_reply_tokens, render_off_thread, ReplyReader};
use crate::server::request::{parts, stop_strings};
use crate::server::sse::{self, Disconnected, EventSink};
use crate::server::state::AppState;
use crate::service::protocol::Ask;
use crate::tools::{ParsedCall, ReplyEvent};

const CALL_ID_PREFIX: &str = "call_";

/// What shaping the reply needs.
struct Shape {
    id: String,
    created: u64,
    model_name: String,
    model: std::sync::Arc<Model>,
    reader: ReplyReader,
}

pub async fn handle(
    State(state): State<AppState>,
    headers: HeaderMap,
    OpenAiBody(request): OpenAiBody<ChatRequest>,
) -> Result<Response, ApiError> {
    request.check()?;
    let sampling = request.sampling.settings(&state.sampling)?;
    let stop = stop_strings(request.stop.clone(), "stop")?;
    let format_grammar = request.format_grammar()?;
    let conversation = request.conversation()?;
    let lease = request.target.lease(&state).await?;
    let (model, info) = parts(&lease);
    let tools = conversation.tools.clone();
    let prompt = render_off_thread(model.clone(), conversation, info.n_ctx).await?;
    let grammar = tools.reply_grammar(prompt.format, format_grammar)?;
    let key = conversation_key(
        &headers,
        &NameSources {
            prompt_cache_key: request.prompt_cache_key.as_deref(),
            user: request.user.as_deref(),
            ..Default::default()
        },
    );
    let reader = ReplyReader::new(&prompt, &tools);
    let max_tokens = max_reply_tokens(
        request.max_tokens(),
        state.max_tokens,
        prompt.tokens.len(),
        info.n_ctx,
    );
    let ask = Ask::new(key, prompt.tokens, max_tokens)
        .with_template(prompt.template)
        .with_sampling(sampling)
        .with_stop(stop)
        .with_grammar(grammar)
        .with_logprobs(request.logprobs());
    let generation = start(&state, &lease, ask).await?;
    let shape = Shape {
        id: response_id("chatcmpl-"),
        created: unix_now(),
        model_name: info.model_name,
        model,
        reader,
    };
    let session = generation.started.session.clone();
    let response = if request.stream == Some(true) {
        let include_usage = request.stream_options.is_some_and(|o| o.include_usage);
        sse::respond(move |sink| async move {
            let _ = stream(&sink, generation, &shape, include_usage).await;
        })
    } else {
        whole(generation, &shape, request.logprobs.unwrap_or(false)).await?
    };
    Ok(with_session_header(response, &session))
}

async fn whole(
    generation: Generation,
    shape: &Shape,
    logprobs: bool,
) -> Result<Response, ApiError> {
    let collected = generation.collect().await?;
    let reply = shape.reader.parse(&collected.text, CALL_ID_PREFIX);
    let logprobs = logprobs.then(|| {
        let content: Vec<Value> = collected
            .tokens
            .iter()
            .filter_map(|t| Some(chat_logprob(&shape.model, &t.text, t.logprob.as_ref()?)))
            .collect();
        json!({"content": content})
    });
    let usage = collected.usage;
    let body = Json(json!({
        "id": shape.id,
        "object": "chat.completion",
        "created": shape.created,
        "model": shape.model_name,
        "system_fingerprint": null,
        "choices": [{
            "index": 0,
            "message": reply.to_openai(),
            "logprobs": logprobs,
            "finish_reason": finish_reason(usage.finish, !reply.tool_calls.is_empty()),
        }],
        "usage": usage_object(&usage),
    }));
    Ok(with_save_headers(body.into_response(), &usage))
}

impl Shape {
    fn chunk(&self, delta: Value, finish: Option<&str>, logprobs: Option<Value>) -> Value {
        json!({
            "id": self.id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model_name,
            "system_fingerprint": null,
            "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}],
        })
    }
}

async fn stream(
    sink: &EventSink,
    mut generation: Generation,
    shape: &Shape,
    include_usage: bool,
) -> Result<(), Disconnected> {
    sink.data(&shape.chunk(json!({"role": "assistant", "content": ""}), None, None))
        .await?;
    let mut parser = shape.reader.parser();
    let mut calls = 0usize;
    // Log-probabilities of tokens whose text the parser still holds back.
    let mut pending_logprobs: Vec<Value> = Vec::new();
    let usage = loop {
        match generation.next().await {
            Ok(Step::Token(piece)) => {
                if let Some(lp) = &piece.logprob {
                    pending_logprobs.push(chat_logprob(&shape.model, &piece.text, lp));
                }
                let events = parser.push(&piece.text);
                send_events(sink, shape, events, &mut calls, &mut pending_logprobs).await?;
            }
            Ok(Step::Done(usage)) => break usage,
            Err(e) => {
                sink.data(&e.body()).await?;
                return sink.done().await;
            }
        }
    };
    let rest = parser.finish();
    send_events(sink, shape, rest, &mut calls, &mut pending_logprobs).await?;
    let finish = finish_reason(usage.finish, calls > 0);
    let mut last = shape.chunk(json!({}), Some(finish), None);
    if let Some(saved) = save_extension(&usage) {
        last["kvrun"] = saved;
    }
    sink.data(&last).await?;
    if include_usage {
        let mut last = shape.chunk(json!({}), None, None);
        last["choices"] = json!([]);
        last["usage"] = usage_object(&usage);
        sink.data(&last).await?;
    }
    sink.done().await
}

async fn send_events(
    sink: &EventSink,
    shape: &Shape,
    events: Vec<ReplyEvent>,
    calls: &mut usize,
    pending_logprobs: &mut Vec<Value>,
) -> Result<(), Disconnected> {
    for event in events {
        let delta = match event {
            ReplyEvent::Content(text) => json!({"content": text}),
            ReplyEvent::Reasoning(text) => json!({"reasoning_content": text}),
            ReplyEvent::ToolCall(call) => {
                let call = ParsedCall {
                    id: response_id(CALL_ID_PREFIX),
                    ..call
                };
                let mut entry = call.to_openai();
                entry["index"] = json!(*calls);
                *calls += 1;
                json!({"tool_calls": [entry]})
            }
        };
        let logprobs = (!pending_logprobs.is_empty())
            .then(|| json!({"content": std::mem::take(pending_logprobs)}));
        sink.data(&shape.chunk(delta, None, logprobs)).await?;
    }
    Ok(())
}
