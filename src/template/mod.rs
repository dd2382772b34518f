//! Chat templates: the model's own Jinja template rendered as HF transformers renders it
//! (Python's jinja2 is the reference the fidelity tests compare against byte for byte).
//!
//! Calling convention (transformers' `apply_chat_template`): `messages`, `tools`,
//! `add_generation_prompt`, `bos_token`, `eos_token`, the functions `raise_exception` and
//! `strftime_now`, HF's `tojson`, and any extra keyword such as `enable_thinking`. The
//! environment is jinja2's `trim_blocks` + `lstrip_blocks` with loop controls, like HF's.

mod builtin;
mod error;
mod guard;
mod json;
mod message;
mod python;
pub(crate) mod time;

use std::collections::BTreeMap;

use minijinja::{Environment, ErrorKind, Value};

pub use builtin::{builtin_for_architecture, builtin_named, BUILTIN_NAMES};
pub use error::TemplateError;
pub use guard::{Rendered, SpecialFinder};
pub use json::to_python_json;
pub use message::{Content, ContentPart, FunctionCall, Message, ToolCall};

/// Bounds on a template's work, so a hostile template cannot hang or exhaust the process:
/// minijinja's fuel counts executed instructions; the output cap bounds what it writes.
const FUEL: u64 = 50_000_000;
const RECURSION_LIMIT: usize = 64;
const MAX_OUTPUT_BYTES: usize = 64 << 20;

/// What a rendering needs besides the template.
#[derive(Debug, Clone, Default)]
pub struct RenderInput<'a> {
    pub messages: &'a [Message],
    /// Tool definitions (OpenAI shape: `{"type": "function", "function": {...}}`).
    pub tools: Option<&'a Value>,
    pub add_generation_prompt: bool,
    pub bos_token: &'a str,
    pub eos_token: &'a str,
    /// Further template variables, such as `enable_thinking`.
    pub extra: BTreeMap<String, Value>,
}

/// Which chat template rendered a conversation, as a session's manifest records it: a
/// session continued under another template can then say so.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TemplateIdentity {
    /// Where it came from: a GGUF key, a file, a shipped name.
    pub name: String,
    /// [`ChatTemplate::hash`] of its source.
    pub hash: String,
}

impl std::fmt::Display for TemplateIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "'{}' ({})", self.name, self.hash)
    }
}

/// A compiled chat template and where it came from.
pub struct ChatTemplate {
    name: String,
    source: String,
    env: Environment<'static>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("name", &self.name)
            .finish()
    }
}

impl ChatTemplate {
    /// Compiles `source`; `name` says where it came from in errors (a file, a GGUF key).
    pub fn new(name: &str, source: &str) -> Result<Self, TemplateError> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_fuel(Some(FUEL));
        env.set_recursion_limit(RECURSION_LIMIT);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        python::install(&mut env);
        env.add_filter("tojson", json::tojson_filter);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", time::strftime_now);
        env.add_template_owned("chat", source.to_string())
            .map_err(|e| TemplateError::Syntax {
                name: name.into(),
                detail: one_line(&e),
            })?;
        Ok(Self {
            name: name.into(),
            source: source.into(),
            env,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// A short content hash of the template text, recorded with sessions.
    pub fn hash(&self) -> String {
        blake3::hash(self.source.as_bytes()).to_hex()[..16].to_string()
    }

    /// What a session records of the template its turns were rendered with.
    pub fn identity(&self) -> TemplateIdentity {
        TemplateIdentity {
            name: self.name.clone(),
            hash: self.hash(),
        }
    }

    /// Renders the conversation to the prompt text.
    pub fn render(&self, input: &RenderInput<'_>) -> Result<String, TemplateError> {
        for (i, m) in input.messages.iter().enumerate() {
            m.check(i)?;
        }
        let messages: Vec<Value> = input
            .messages
            .iter()
            .map(Message::to_template_value)
            .collect();
        self.render_values(input, Value::from(messages))
    }

    fn render_values(
        &self,
        input: &RenderInput<'_>,
        messages: Value,
    ) -> Result<String, TemplateError> {
        let mut vars: BTreeMap<String, Value> = input.extra.clone();
        vars.insert("messages".into(), messages);
        vars.insert(
            "add_generation_prompt".into(),
            Value::from(input.add_generation_prompt),
        );
        vars.insert("bos_token".into(), Value::from(input.bos_token));
        vars.insert("eos_token".into(), Value::from(input.eos_token));
        // transformers passes `tools` and `documents` always, as None when absent, so
        // `tools is defined` holds in every rendering.
        vars.insert(
            "tools".into(),
            input.tools.cloned().unwrap_or(Value::from(())),
        );
        vars.insert("documents".into(), Value::from(()));
        let render_error = |e: minijinja::Error| TemplateError::Render {
            name: self.name.clone(),
            detail: one_line(&e),
        };
        let template = self.env.get_template("chat").map_err(render_error)?;
        let mut out = Bounded(String::new());
        template
            .render_captured_to(Value::from(vars), &mut out)
            .map_err(render_error)?;
        Ok(out.0)
    }
}

/// Collects the output, refusing more than [`MAX_OUTPUT_BYTES`].
struct Bounded(String);

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > MAX_OUTPUT_BYTES {
            return Err(std::io::Error::other(format!(
                "the rendered prompt exceeds {} MiB",
                MAX_OUTPUT_BYTES >> 20
            )));
        }
        // minijinja writes whole UTF-8 strings.
        self.0.push_str(&String::from_utf8_lossy(buf));
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn raise_exception(message: String) -> Result<Value, minijinja::Error> {
    Err(minijinja::Error::new(ErrorKind::InvalidOperation, message))
}

/// minijinja's error with its cause chain, on one line (no source excerpt).
fn one_line(e: &minijinja::Error) -> String {
    let mut text = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    if let Some(line) = e.line() {
        text.push_str(&format!(" (line {line})"));
    }
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text.replace('\n', " ")
}

#[cfg(test)]
mod tests;
