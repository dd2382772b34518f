//! A front end's dialogue: chat messages (or raw text) and the token log they produce.
//!
//! Named apart from the engine's conversations on purpose: a [`Dialogue`] is what a chat or
//! `kvrun run` holds in its own process (the messages, and how the chat template renders
//! them into tokens); the service engine's `Conversations` are the persisted sessions it
//! serves requests into, which a dialogue reaches through its handle (its Save sends a
//! `Transcript` of the dialogue). One dialogue continues one conversation.
//!
//! New turns are tokenized as the chat template's text *after* what earlier turns rendered,
//! so earlier tokens, and the KV cache that holds them, are never re-tokenized or recomputed.

use crate::llama::{ChatMessage, LlamaError, Model, TokenId};
use crate::sequence::Sequence;
use crate::session::live::ConversationState;
use crate::session::SessionManifest;
use crate::settings::ContextOverflow;
use crate::template::{to_python_json, Message, Rendered, TemplateIdentity};
use crate::tools::{ToolFormat, GENERIC_TOOL_PROMPT};

/// For a template that ignores `tools`: the tools described in the system turn, in
/// kvrun's generic format (the model answers with one JSON object).
pub(crate) fn describe_tools(messages: &mut Vec<Message>, tools: &minijinja::Value) {
    let mut text = GENERIC_TOOL_PROMPT.to_string();
    if let Ok(items) = tools.try_iter() {
        for tool in items {
            text.push('\n');
            text.push_str(&to_python_json(&tool).unwrap_or_default());
        }
    }
    match messages.first_mut() {
        Some(first) if first.role == "system" => {
            if let Some(crate::template::Content::Text(existing)) = &mut first.content {
                *existing = format!("{existing}\n\n{text}");
            }
        }
        _ => messages.insert(0, Message::text("system", &text)),
    }
}

/// Why a turn could not be added; the conversation is as it was before.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    #[error(
        "this message does not fit the context ({used} + {added} tokens > {n_ctx}); /reset, or \
         use a larger --ctx-size or --context-overflow truncate"
    )]
    DoesNotFit {
        used: usize,
        added: usize,
        n_ctx: usize,
    },
    #[error(
        "this conversation, rendered again with another chat template, does not fit the \
         context ({needed} tokens > {n_ctx}); use a larger --ctx-size or --context-overflow \
         truncate"
    )]
    RenderedAgainDoesNotFit { needed: usize, n_ctx: usize },
    #[error("this message alone ({tokens} tokens) does not fit the context; raise --ctx-size")]
    MessageTooLong { tokens: usize },
    /// The chat template failed to render the conversation.
    #[error(transparent)]
    Template(#[from] LlamaError),
}

type Result<T, E = TurnError> = std::result::Result<T, E>;

pub struct Dialogue<'m> {
    model: &'m Model,
    pub messages: Vec<ChatMessage>,
    pub seq: Sequence,
    /// Length of the template's rendering of `messages` (without the assistant opener).
    pub rendered_len: usize,
    /// Plain text, no chat template.
    pub raw: bool,
    /// Tool definitions rendered into every turn (OpenAI shape).
    pub tools: Option<minijinja::Value>,
    /// The last rendering ended inside an open `<think>` (the reply starts as reasoning).
    pub opens_reasoning: bool,
    /// Where the last turn's rendering stopped extending the previous one.
    pub cache_miss: Option<CacheMiss>,
    /// The chat template the log's turns were rendered with (`None`: this conversation's
    /// own, or unknown for a session saved before kvrun recorded it).
    rendered_with: Option<TemplateIdentity>,
}

// Persisted in manifests, so it lives with the session's on-disk data.
pub use crate::session::{CacheMiss, MissReason};

/// Characters of context shown on each side of a divergence.
const MISS_CONTEXT: usize = 24;

impl CacheMiss {
    /// The miss at token `position` and byte `byte`, where `previous` and `now` (texts that
    /// agree before `byte`, a char boundary of both) part.
    fn at(position: usize, byte: usize, (previous, now): (&str, &str), reason: MissReason) -> Self {
        let around = |text: &str| {
            let start = text[..byte]
                .char_indices()
                .rev()
                .nth(MISS_CONTEXT - 1)
                .map_or(0, |(i, _)| i);
            text[start..]
                .chars()
                .take(2 * MISS_CONTEXT)
                .collect::<String>()
        };
        Self {
            position,
            byte,
            before: around(previous),
            after: around(now),
            reason,
        }
    }
}

/// The length of the longest common prefix of `a` and `b`, on a char boundary.
fn common_prefix_bytes(a: &str, b: &str) -> usize {
    let mut byte = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(byte) || !b.is_char_boundary(byte) {
        byte -= 1;
    }
    byte
}

impl<'m> Dialogue<'m> {
    pub fn new(model: &'m Model, raw: bool, system: Option<&str>) -> Self {
        let mut messages = Vec::new();
        if let Some(system) = system {
            messages.push(ChatMessage {
                role: "system".into(),
                content: system.into(),
            });
        }
        Self {
            model,
            messages,
            seq: Sequence::new(),
            rendered_len: 0,
            raw,
            tools: None,
            opens_reasoning: false,
            cache_miss: None,
            rendered_with: None,
        }
    }

    /// A conversation resumed from a saved session whose token log is `seq`.
    pub fn resumed(model: &'m Model, saved: &SessionManifest, seq: Sequence) -> Self {
        let parts = (saved.messages.clone(), saved.rendered_len, saved.raw);
        Self::from_parts(model, parts, saved.chat_template.clone(), seq)
    }

    /// A conversation of `messages` (whose template rendering is `rendered_len` long, or
    /// plain text when `raw`) rendered into log `seq` with chat template `rendered_with`.
    pub fn from_parts(
        model: &'m Model,
        (messages, rendered_len, raw): (Vec<ChatMessage>, usize, bool),
        rendered_with: Option<TemplateIdentity>,
        seq: Sequence,
    ) -> Self {
        Self {
            model,
            messages,
            seq,
            rendered_len,
            raw,
            tools: None,
            opens_reasoning: false,
            cache_miss: None,
            rendered_with,
        }
    }

    /// The conversation of `messages` carried to another model (`kvrun chat`'s `/model`):
    /// its log is rendered afresh with `model`'s template, as no KV carries across models.
    pub fn carried_over(model: &'m Model, messages: Vec<ChatMessage>) -> Result<Self> {
        let mut conversation = Self::from_parts(model, (messages, 0, false), None, Sequence::new());
        conversation.rendered_with = conversation.template();
        if !conversation.messages.is_empty() {
            let rendered = conversation.render(false)?;
            let tokens = model.tokenize_rendered(&rendered, 0, true);
            conversation.seq.append(&tokens);
            conversation.rendered_len = rendered.text.len();
        }
        Ok(conversation)
    }

    /// The chat template that renders this conversation's turns (`None` for raw text).
    pub fn template(&self) -> Option<TemplateIdentity> {
        if self.raw {
            return None;
        }
        self.model
            .chat_template_for(self.tools.is_some())
            .map(|t| t.identity())
    }

    /// The template the log was rendered with, when this conversation renders with another.
    fn changed_template(&self) -> Option<TemplateIdentity> {
        if self.raw || self.seq.is_empty() {
            return None;
        }
        let old = self.rendered_with.as_ref()?;
        let new = self.template()?;
        (old.hash != new.hash).then(|| old.clone())
    }

    /// Tokens appended but not yet in the KV cache.
    pub fn pending(&self) -> usize {
        self.seq.len() - self.seq.kv_len()
    }

    /// Forgets everything but the system prompt (the holder of the log's cells drops them).
    pub fn reset(&mut self) {
        self.seq = Sequence::new().in_seq(self.seq.seq_id());
        self.messages.retain(|m| m.role == "system");
        self.messages.truncate(1);
        self.rendered_len = 0;
    }

    /// The tokens a user turn adds (nothing is appended yet).
    pub fn user_turn_tokens(&mut self, text: &str) -> Result<Vec<TokenId>> {
        if self.raw {
            return Ok(if self.seq.is_empty() {
                self.model.tokenize_prompt(text)
            } else {
                self.model.tokenize(text, false)
            });
        }
        let rendered = self.push_user(text)?;
        self.opens_reasoning = rendered.text.trim_end().ends_with("<think>");
        let previous = self.earlier_rendering();
        self.cache_miss = previous
            .as_deref()
            .and_then(|p| self.divergence(p, &rendered.text));
        if let (Some(previous), None) = (&previous, &self.cache_miss) {
            // The new turn starts where this template's rendering of the earlier turns ends
            // (a session saved under another template recorded another length).
            self.rendered_len = previous.len();
        }
        Ok(self.delta_tokens(&rendered))
    }

    /// Adds the user's message and renders the conversation up to the reply (the message
    /// is taken back when that fails).
    fn push_user(&mut self, text: &str) -> Result<Rendered> {
        self.messages.push(ChatMessage {
            role: "user".into(),
            content: text.into(),
        });
        self.render(true).map_err(|e| {
            self.messages.pop();
            TurnError::Template(e)
        })
    }

    /// The earlier turns (the reply included) as the template renders them now.
    fn earlier_rendering(&self) -> Option<String> {
        if self.seq.is_empty() || self.messages.len() < 2 {
            return None;
        }
        let earlier = &self.messages[..self.messages.len() - 1];
        self.render_messages(earlier, false).ok().map(|r| r.text)
    }

    /// Where `rendered` stops extending `previous`, if it does.
    fn divergence(&self, previous: &str, rendered: &str) -> Option<CacheMiss> {
        if rendered.starts_with(previous) {
            return None;
        }
        let byte = common_prefix_bytes(previous, rendered);
        let position = self.model.tokenize(&rendered[..byte], true).len();
        let texts = (previous, rendered);
        Some(CacheMiss::at(
            position,
            byte,
            texts,
            MissReason::HistoryRewritten,
        ))
    }

    /// Where the token log `now` stops extending `previous`, if it does.
    fn token_divergence(&self, previous: &[TokenId], now: &[TokenId]) -> Option<CacheMiss> {
        let position = previous.iter().zip(now).take_while(|(a, b)| a == b).count();
        if position == previous.len() {
            return None;
        }
        let (previous, now) = (
            self.model.tokens_text(previous),
            self.model.tokens_text(now),
        );
        let byte = common_prefix_bytes(&previous, &now);
        let texts = (previous.as_str(), now.as_str());
        Some(CacheMiss::at(
            position,
            byte,
            texts,
            MissReason::TemplateChanged,
        ))
    }

    /// Adds a user turn to a context of `n_ctx` cells, handling an overflow as asked. When
    /// the log had to be rebuilt (older turns dropped, or rendered again with another
    /// template) its `kv_len` is 0 and the holder of its cells must drop them.
    pub fn add_user(
        &mut self,
        n_ctx: usize,
        text: &str,
        overflow: ContextOverflow,
    ) -> Result<Option<String>> {
        if let Some(old) = self.changed_template() {
            return self.rerender(n_ctx, text, overflow, &old);
        }
        let new_tokens = self.user_turn_tokens(text)?;
        // Leave room for at least a short reply.
        let reserve = 16.min(n_ctx / 4);
        if self.seq.len() + new_tokens.len() + reserve <= n_ctx {
            self.seq.append(&new_tokens);
            return Ok(None);
        }
        match (overflow, self.raw) {
            (ContextOverflow::Error, _) | (_, true) => {
                if !self.raw {
                    self.messages.pop();
                }
                Err(TurnError::DoesNotFit {
                    used: self.seq.len(),
                    added: new_tokens.len(),
                    n_ctx,
                })
            }
            (ContextOverflow::Truncate, false) => self.truncate_to_fit(n_ctx - reserve),
        }
    }

    /// Adds a user turn to a log rendered with another chat template (`old`): the whole
    /// conversation is rendered again with this one and the log rebuilt from it, so the model
    /// never sees two templates' markup mixed. Prefix reuse then restores the stored pages
    /// the two logs share; the cache misses from where they part.
    fn rerender(
        &mut self,
        n_ctx: usize,
        text: &str,
        overflow: ContextOverflow,
        old: &TemplateIdentity,
    ) -> Result<Option<String>> {
        let previous = self.seq.tokens().to_vec();
        let rendered = self.push_user(text)?;
        let budget = n_ctx - 16.min(n_ctx / 4);
        let needed = self.model.tokenize_rendered(&rendered, 0, true).len();
        if needed > budget && overflow == ContextOverflow::Error {
            self.messages.pop();
            return Err(TurnError::RenderedAgainDoesNotFit { needed, n_ctx });
        }
        let dropped = self.truncate_to_fit(budget)?;
        self.opens_reasoning = rendered.text.trim_end().ends_with("<think>");
        self.cache_miss = self.token_divergence(&previous, self.seq.tokens());
        self.rendered_with = self.template();
        let new = self
            .rendered_with
            .as_ref()
            .map_or(String::new(), |t| t.to_string());
        let kept = self
            .cache_miss
            .as_ref()
            .map_or(previous.len(), |m| m.position);
        let mut note = format!(
            "its turns were rendered with chat template {old}; all {} messages are rendered \
             again with {new} (the two renderings agree on the first {kept} tokens)",
            self.messages.len()
        );
        if let Some(dropped) = dropped {
            note = format!("{note}; {dropped}");
        }
        Ok(Some(note))
    }

    /// Drops the oldest turns (keeping the system prompt) until the conversation fits, then
    /// rebuilds the token log from the template. Returns a note for the user.
    fn truncate_to_fit(&mut self, budget: usize) -> Result<Option<String>> {
        let first = usize::from(self.messages.first().is_some_and(|m| m.role == "system"));
        let mut dropped = 0;
        loop {
            let rendered = self.render(true)?;
            let tokens = self.model.tokenize_rendered(&rendered, 0, true);
            if tokens.len() <= budget {
                self.seq = Sequence::new().in_seq(self.seq.seq_id());
                self.seq.append(&tokens);
                self.rendered_len = self.render(false)?.text.len();
                return Ok((dropped > 0)
                    .then(|| format!("(context full: dropped the {dropped} oldest message(s))")));
            }
            if self.messages.len() <= first + 1 {
                self.messages.pop();
                return Err(TurnError::MessageTooLong {
                    tokens: tokens.len(),
                });
            }
            self.messages.remove(first);
            dropped += 1;
        }
    }

    /// The conversation through the chat template.
    fn render(&self, add_generation_prompt: bool) -> Result<Rendered, LlamaError> {
        self.render_messages(&self.messages, add_generation_prompt)
    }

    fn render_messages(
        &self,
        messages: &[ChatMessage],
        add_generation_prompt: bool,
    ) -> Result<Rendered, LlamaError> {
        let mut messages: Vec<Message> = messages
            .iter()
            .map(|m| Message::text(&m.role, &m.content))
            .collect();
        if let Some(tools) = self
            .tools
            .as_ref()
            .filter(|_| !self.model.template_renders_tools())
        {
            describe_tools(&mut messages, tools);
        }
        self.model
            .render_chat(&messages, self.tools.as_ref(), add_generation_prompt)
    }

    /// How the model writes tool calls under this conversation's template.
    pub fn tool_format(&self) -> ToolFormat {
        self.model.tool_format(self.tools.is_some())
    }

    /// The tokens for the rendered conversation beyond what the log already holds.
    fn delta_tokens(&self, rendered: &Rendered) -> Vec<TokenId> {
        if self.seq.is_empty() {
            return self.model.tokenize_rendered(rendered, 0, true);
        }
        match rendered.text.get(self.rendered_len..) {
            Some(_) => self
                .model
                .tokenize_rendered(rendered, self.rendered_len, false),
            // The template re-rendered earlier turns differently: fall back to the whole.
            None => self.model.tokenize_rendered(rendered, 0, false),
        }
    }

    /// What a session save records besides the tokens.
    pub fn state(&self) -> ConversationState<'_> {
        ConversationState {
            messages: &self.messages,
            rendered_len: self.rendered_len,
            raw: self.raw,
            template: self.template(),
            cache_miss: self.cache_miss.as_ref(),
        }
    }

    /// Records the model's reply.
    pub fn add_assistant(&mut self, text: String) {
        if self.raw {
            return;
        }
        self.messages.push(ChatMessage {
            role: "assistant".into(),
            content: text,
        });
        if let Ok(rendered) = self.render(false) {
            self.rendered_len = rendered.text.len();
        }
    }
}
