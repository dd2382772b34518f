//! Ollama's request bodies read into kvrun's terms: `options` as sampling and limits, chat
//! messages as a [`Conversation`], `format` as a grammar. Unknown fields are ignored, as
//! Ollama ignores them; an option kvrun cannot honour is logged once ([`ignored_option`]).

use std::collections::BTreeSet;
use std::sync::Mutex;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::server::errors::ApiError;
use crate::server::openai::{function_tools, tool_call};
use crate::server::render::{media_refused, text_message, Conversation};
use crate::server::request::{
    schema_grammar, stop_strings, ModelFields, SamplingFields, StopField,
};
use crate::server::tool_choice::{openai_choice, ToolSet};
use crate::settings::SamplingSettings;
use crate::template::Message;

/// `options`: the ones kvrun maps to its settings by name; the rest are kept to be logged.
#[derive(Debug, Default, Deserialize)]
pub struct Options {
    /// Tokens to generate: -1 (or absent) for as many as the context leaves.
    #[serde(default)]
    pub num_predict: Option<i64>,
    #[serde(default)]
    pub stop: Option<StopField>,
    /// temperature, top_k, top_p, min_p, seed, repeat_penalty, presence_penalty,
    /// frequency_penalty: the names Ollama and kvrun share.
    #[serde(flatten)]
    pub sampling: SamplingFields,
    /// Every other option (`num_ctx`, `num_thread`, `mirostat`…): accepted, no effect.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// Why each option kvrun does not honour has no effect, for its one log line.
fn why_ignored(name: &str) -> &'static str {
    match name {
        "num_ctx" => "kvrun sizes each model's context itself (it grows to hold a conversation)",
        "num_thread" | "num_gpu" | "main_gpu" | "num_batch" | "use_mmap" | "use_mlock" | "numa"
        | "low_vram" => "it is set when `kvrun serve` starts",
        _ => "kvrun has no such setting",
    }
}

/// Logs, once per option name and process, that an option has no effect.
fn ignored_option(name: &str) {
    static LOGGED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let mut logged = LOGGED.lock().unwrap_or_else(|p| p.into_inner());
    if logged.insert(name.to_string()) {
        tracing::info!(
            "Ollama option '{name}' is ignored: {} (logged once)",
            why_ignored(name)
        );
    }
}

impl Options {
    /// The sampling settings (`base` for what is not given), the stop strings and the
    /// reply limit (`None`: the room the context leaves).
    pub fn settings(
        &self,
        base: &SamplingSettings,
    ) -> Result<(SamplingSettings, Vec<String>, Option<u64>), ApiError> {
        for name in self.rest.keys() {
            ignored_option(name);
        }
        let sampling = self.sampling.settings(base)?;
        let stop = stop_strings(self.stop.clone(), "options.stop")?;
        let limit = match self.num_predict {
            None => None,
            Some(n) if n < 0 => None,
            Some(0) => {
                return Err(
                    ApiError::bad_request("num_predict must be at least 1, or -1")
                        .param("options.num_predict"),
                )
            }
            Some(n) => Some(n as u64),
        };
        Ok((sampling, stop, limit))
    }
}

/// What `/api/chat` and `/api/generate` share. (`think` is not read: a reply's reasoning
/// is always returned in `thinking`.)
#[derive(Debug, Default, Deserialize)]
pub struct Common {
    #[serde(flatten)]
    pub target: ModelFields,
    #[serde(default)]
    pub options: Option<Options>,
    /// `"json"`, a JSON schema, or nothing.
    #[serde(default)]
    pub format: Option<Value>,
    /// NDJSON unless `false`.
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub images: Option<Vec<Value>>,
}

impl Common {
    pub fn streams(&self) -> bool {
        self.stream != Some(false)
    }

    /// The model name as the client wrote it (`""` when absent or not a string).
    pub fn model(&self) -> &str {
        match &self.target.model {
            Some(Value::String(name)) => name,
            _ => "",
        }
    }

    pub fn options(&self, base: &SamplingSettings) -> Result<ParsedOptions, ApiError> {
        let (sampling, stop, limit) = self.options.as_ref().map_or_else(
            || Ok((base.clone(), Vec::new(), None)),
            |o| o.settings(base),
        )?;
        Ok(ParsedOptions {
            sampling,
            stop,
            limit,
            grammar: format_grammar(self.format.as_ref())?,
        })
    }

    /// Images are refused: the models kvrun serves read text.
    pub fn refuse_images(&self) -> Result<(), ApiError> {
        refuse_images(self.images.as_deref(), "images")
    }
}

/// A request's options and format, checked.
pub struct ParsedOptions {
    pub sampling: SamplingSettings,
    pub stop: Vec<String>,
    pub limit: Option<u64>,
    pub grammar: Option<String>,
}

fn refuse_images(images: Option<&[Value]>, field: &str) -> Result<(), ApiError> {
    match images {
        Some(list) if !list.is_empty() => Err(media_refused("image", field)),
        _ => Ok(()),
    }
}

/// `format`: `"json"` (any object), a JSON schema, or nothing (`""`, `null`).
pub fn format_grammar(format: Option<&Value>) -> Result<Option<String>, ApiError> {
    let schema = match format {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) if s.is_empty() => return Ok(None),
        Some(Value::String(s)) if s == "json" => serde_json::json!({"type": "object"}),
        Some(schema @ Value::Object(_)) => schema.clone(),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "format must be \"json\" or a JSON schema, not {other}"
            ))
            .param("format"))
        }
    };
    schema_grammar(&schema, "format").map(Some)
}

/// `POST /api/chat`.
#[derive(Debug, Deserialize)]
pub struct ChatRequest {
    #[serde(default)]
    pub messages: Vec<Value>,
    #[serde(default)]
    pub tools: Option<Vec<minijinja::Value>>,
    /// Not Ollama's: OpenAI's `tool_choice`, for clients that must force a call.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    #[serde(flatten)]
    pub common: Common,
}

const ROLES: [&str; 4] = ["system", "user", "assistant", "tool"];

impl ChatRequest {
    pub fn conversation(&self) -> Result<Conversation, ApiError> {
        let messages = self
            .messages
            .iter()
            .enumerate()
            .map(|(i, m)| message(i, m))
            .collect::<Result<Vec<_>, _>>()?;
        let tools = function_tools(self.tools.as_deref().unwrap_or_default());
        Ok(Conversation {
            messages,
            tools: ToolSet::new(tools, openai_choice(self.tool_choice.as_ref())?)?,
        })
    }
}

/// One Ollama message: `role`, `content` (text), `thinking`, `tool_calls` (arguments as
/// an object), `tool_name` on a tool result, `images` (refused).
fn message(i: usize, value: &Value) -> Result<Message, ApiError> {
    let at = format!("messages[{i}]");
    let bad = |what: String, field: &str| ApiError::bad_request(what).param(field);
    let object = value
        .as_object()
        .ok_or_else(|| bad(format!("{at} must be an object"), &at))?;
    let role = object.get("role").and_then(Value::as_str).ok_or_else(|| {
        bad(
            format!("{at} needs a string \"role\""),
            &format!("{at}.role"),
        )
    })?;
    if !ROLES.contains(&role) {
        return Err(bad(
            format!(
                "{at} has unknown role '{role}' (expected one of {})",
                ROLES.join(", ")
            ),
            &format!("{at}.role"),
        ));
    }
    let images = object.get("images").and_then(Value::as_array);
    refuse_images(images.map(Vec::as_slice), &format!("{at}.images"))?;
    let text = match object.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return Err(bad(
                format!("{at}.content must be a string"),
                &format!("{at}.content"),
            ))
        }
    };
    let mut message = text_message(role, text);
    let string = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_string);
    if role == "assistant" {
        message.reasoning_content = string("thinking").filter(|t| !t.is_empty());
        if let Some(calls) = object.get("tool_calls").and_then(Value::as_array) {
            for (j, call) in calls.iter().enumerate() {
                let call = tool_call(call, &format!("{at}.tool_calls[{j}]"))?;
                message.tool_calls.push(call);
            }
        }
    }
    if role == "tool" {
        message.name = string("tool_name").or_else(|| string("name"));
        message.tool_call_id = string("tool_call_id");
    }
    Ok(message)
}

/// `POST /api/generate`.
#[derive(Debug, Deserialize)]
pub struct GenerateRequest {
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default)]
    pub suffix: Option<String>,
    /// A Go template over `.System`, `.Prompt` and `.Response` (only those are read).
    #[serde(default)]
    pub template: Option<String>,
    /// The prompt is sent as it is, with no template.
    #[serde(default)]
    pub raw: bool,
    #[serde(flatten)]
    pub common: Common,
}

/// `template`'s fields written out. Ollama's templates are Go templates; kvrun reads the
/// plain `{{ .System }}`, `{{ .Prompt }}` and `{{ .Response }}` fields (what a custom
/// generate template uses) and refuses anything else rather than send it literally.
pub fn fill_template(template: &str, system: &str, prompt: &str) -> Result<String, ApiError> {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find("}}").ok_or_else(|| {
            ApiError::bad_request("template has an unclosed {{").param("template")
        })?;
        let inner = &after[..end];
        // `{{-` and `-}}` trim the whitespace beside them, as in Go.
        if inner.starts_with('-') {
            out.truncate(out.trim_end().len());
        }
        let field = inner.trim_matches(|c: char| c == '-' || c.is_whitespace());
        match field {
            ".System" => out.push_str(system),
            ".Prompt" => out.push_str(prompt),
            ".Response" => {}
            other => {
                return Err(ApiError::bad_request(format!(
                    "template: '{{{{ {other} }}}}' is not supported; kvrun fills .System, \
                     .Prompt and .Response (or send raw: true with the prompt written out)"
                ))
                .param("template"))
            }
        }
        rest = &after[end + 2..];
        if inner.ends_with('-') {
            rest = rest.trim_start();
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn options_map_to_settings_and_the_rest_is_kept() {
        let options: Options = serde_json::from_value(json!({
            "temperature": 0, "top_k": 5, "seed": 3, "repeat_penalty": 1.1,
            "num_predict": 7, "stop": ["\n"], "num_ctx": 4096, "mirostat": 1,
        }))
        .unwrap();
        let (s, stop, limit) = options.settings(&SamplingSettings::defaults()).unwrap();
        assert_eq!((s.temp, s.top_k, s.seed), (0.0, 5, 3));
        assert!((s.repeat_penalty - 1.1).abs() < 1e-6);
        assert_eq!((stop, limit), (vec!["\n".to_string()], Some(7)));
        let mut rest: Vec<&String> = options.rest.keys().collect();
        rest.sort();
        assert_eq!(rest, ["mirostat", "num_ctx"]);
        let bad: Options = serde_json::from_value(json!({"top_p": 3})).unwrap();
        assert!(bad.settings(&SamplingSettings::defaults()).is_err());
        let endless: Options = serde_json::from_value(json!({"num_predict": -1})).unwrap();
        assert_eq!(
            endless.settings(&SamplingSettings::defaults()).unwrap().2,
            None
        );
    }

    #[test]
    fn formats() {
        assert!(format_grammar(None).unwrap().is_none());
        assert!(format_grammar(Some(&json!(""))).unwrap().is_none());
        assert!(format_grammar(Some(&json!("json"))).unwrap().is_some());
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        assert!(format_grammar(Some(&schema)).unwrap().is_some());
        assert!(format_grammar(Some(&json!("yaml"))).is_err());
        let undeclared = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "required": ["a", "b"]});
        assert!(format_grammar(Some(&undeclared)).is_err());
    }

    #[test]
    fn messages_in_ollama_shape() {
        let r: ChatRequest = serde_json::from_value(json!({
            "model": "gemma3", "messages": [
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                {"role": "tool", "content": "sunny", "tool_name": "get_weather"},
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather"}}],
        }))
        .unwrap();
        let c = r.conversation().unwrap();
        assert_eq!(c.messages[1].tool_calls[0].function.name, "get_weather");
        assert_eq!(c.messages[2].name.as_deref(), Some("get_weather"));
        let image: ChatRequest = serde_json::from_value(json!({"messages": [
            {"role": "user", "content": "what is this", "images": ["aGk="]}]}))
        .unwrap();
        let e = image.conversation().unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert!(e.message.contains("text only"), "{}", e.message);
        let role: ChatRequest =
            serde_json::from_value(json!({"messages": [{"role": "wizard"}]})).unwrap();
        assert!(role.conversation().is_err());
    }

    #[test]
    fn templates_fill_their_plain_fields() {
        let t = "<s>{{ .System }}\nQ: {{- .Prompt }}\nA: {{ .Response }}";
        assert_eq!(fill_template(t, "sys", "hi").unwrap(), "<s>sys\nQ:hi\nA: ");
        assert!(fill_template("{{ if .System }}x{{ end }}", "", "").is_err());
        assert!(fill_template("{{ .Prompt", "", "").is_err());
    }
}
