//! A request's tools and what the model must do with them, whichever API described them:
//! definitions in OpenAI's chat shape (what chat templates read), and the choice that
//! decides whether calls are parsed and whether one is forced by a grammar.

use minijinja::Value;

use super::errors::ApiError;
use crate::llama::Grammar;
use crate::service::protocol::ReplyGrammar;
use crate::tools::{tool_call_lark, ToolFormat};

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model may call a tool or answer.
    #[default]
    Auto,
    /// The model answers; calls are not parsed.
    None,
    /// The model must call one of the tools.
    Required,
    /// The model must call this tool.
    Named(String),
}

#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    /// `{"type": "function", "function": {name, description, parameters}}`, key order kept
    /// (the template prints them).
    pub definitions: Vec<Value>,
    pub choice: ToolChoice,
}

/// One function tool in OpenAI's chat shape, from its parts (Anthropic's `input_schema`
/// and the Responses API's flat tools arrive this way).
pub fn function_tool(name: &str, description: Option<&Value>, parameters: Option<&Value>) -> Value {
    let mut function = vec![("name", Value::from(name))];
    if let Some(description) = description.filter(|d| !d.is_none() && !d.is_undefined()) {
        function.push(("description", description.clone()));
    }
    if let Some(parameters) = parameters.filter(|p| !p.is_none() && !p.is_undefined()) {
        function.push(("parameters", parameters.clone()));
    }
    Value::from_iter([
        ("type", Value::from("function")),
        ("function", Value::from_iter(function)),
    ])
}

fn field(value: &Value, key: &str) -> Option<Value> {
    value.get_attr(key).ok().filter(|v| !v.is_undefined())
}

/// A tool definition's function name.
pub fn tool_name(tool: &Value) -> Option<String> {
    let function = field(tool, "function")?;
    field(&function, "name")?.as_str().map(str::to_string)
}

/// `tool_choice` in OpenAI's shapes: `"auto"`, `"none"`, `"required"`, or a named function
/// (`{"type": "function", "function": {"name"}}` in chat, `{"type": "function", "name"}`
/// in Responses). Anything else (such as `allowed_tools`) is treated as `auto`.
pub fn openai_choice(value: Option<&serde_json::Value>) -> Result<ToolChoice, ApiError> {
    use serde_json::Value as J;
    let Some(value) = value else {
        return Ok(ToolChoice::Auto);
    };
    let bad = || {
        ApiError::bad_request(format!(
            "tool_choice {value} is not one of auto, none, required or a named function"
        ))
        .param("tool_choice")
    };
    match value {
        J::Null => Ok(ToolChoice::Auto),
        J::String(s) => match s.as_str() {
            "auto" => Ok(ToolChoice::Auto),
            "none" => Ok(ToolChoice::None),
            "required" | "any" => Ok(ToolChoice::Required),
            _ => Err(bad()),
        },
        J::Object(o) => match o.get("type").and_then(J::as_str) {
            Some("function") => o
                .get("function")
                .and_then(|f| f.get("name"))
                .or_else(|| o.get("name"))
                .and_then(J::as_str)
                .map(|n| ToolChoice::Named(n.to_string()))
                .ok_or_else(bad),
            Some(other) => {
                tracing::debug!("tool_choice of type '{other}' is treated as auto");
                Ok(ToolChoice::Auto)
            }
            None => Err(bad()),
        },
        _ => Err(bad()),
    }
}

impl ToolSet {
    /// Checks the definitions and the choice: every tool has a name, a named choice names
    /// one of them, and a forced call has a tool to call.
    pub fn new(definitions: Vec<Value>, choice: ToolChoice) -> Result<Self, ApiError> {
        for (i, tool) in definitions.iter().enumerate() {
            if tool_name(tool).is_none_or(|n| n.is_empty()) {
                return Err(
                    ApiError::bad_request(format!("tool {i} has no function name"))
                        .param(&format!("tools[{i}]")),
                );
            }
        }
        let names: Vec<String> = definitions.iter().filter_map(tool_name).collect();
        match &choice {
            ToolChoice::Named(name) if !names.contains(name) => {
                return Err(ApiError::bad_request(format!(
                    "tool_choice names '{name}', which is not among the tools ({})",
                    names.join(", ")
                ))
                .param("tool_choice"))
            }
            ToolChoice::Required if definitions.is_empty() => {
                return Err(ApiError::bad_request(
                    "tool_choice requires a tool call, but no tools are given",
                )
                .param("tool_choice"))
            }
            _ => {}
        }
        Ok(Self {
            definitions,
            choice,
        })
    }

    /// The tools as the template sees them; `None` without tools.
    pub fn template_value(&self) -> Option<Value> {
        (!self.definitions.is_empty()).then(|| Value::from(self.definitions.clone()))
    }

    /// Whether tool calls are parsed from the reply.
    pub fn parses_calls(&self) -> bool {
        !self.definitions.is_empty() && self.choice != ToolChoice::None
    }

    /// The grammar of the reply: a forced call wins, then the request's response format
    /// (`response_format`, `text.format`), then a lazy `auto` call grammar.
    pub fn reply_grammar(
        &self,
        format: ToolFormat,
        response_format: Option<String>,
    ) -> Result<Option<ReplyGrammar>, ApiError> {
        Ok(match self.grammar(format)? {
            Some(forced) if forced.after.is_none() => Some(forced),
            lazy => response_format
                .map(|gbnf| ReplyGrammar::forced(Grammar::Gbnf(gbnf)))
                .or(lazy),
        })
    }

    /// The grammar of a call, in `format`'s syntax: forced for `required` or a named tool;
    /// for `auto`, lazy (the reply is free until the format's call opening, and the call
    /// after it must parse), where the format has a distinctive opening.
    fn grammar(&self, format: ToolFormat) -> Result<Option<ReplyGrammar>, ApiError> {
        let (forced, opening): (Vec<&Value>, _) = match &self.choice {
            ToolChoice::None => return Ok(None),
            ToolChoice::Auto => match format.call_opening() {
                Some(opening) if !self.definitions.is_empty() => {
                    (self.definitions.iter().collect(), Some(opening))
                }
                _ => return Ok(None),
            },
            ToolChoice::Required => (self.definitions.iter().collect(), None),
            ToolChoice::Named(name) => (
                self.definitions
                    .iter()
                    .filter(|t| tool_name(t).as_deref() == Some(name.as_str()))
                    .collect(),
                None,
            ),
        };
        let as_json: Vec<serde_json::Value> = forced
            .iter()
            .map(|t| serde_json::to_value(t).map_err(|e| ApiError::bad_request(e.to_string())))
            .collect::<Result<_, _>>()?;
        let refs: Vec<&serde_json::Value> = as_json.iter().collect();
        match (tool_call_lark(format, &refs), opening) {
            (Ok(lark), None) => Ok(Some(ReplyGrammar::forced(Grammar::Lark(lark)))),
            (Ok(lark), Some(opening)) => Ok(Some(ReplyGrammar {
                grammar: Grammar::Lark(lark),
                after: Some(opening.to_string()),
            })),
            (Err(e), None) => Err(ApiError::bad_request(e.to_string()).param("tools")),
            // A schema the grammar cannot express does not stop a reply that may not call
            // a tool at all: `auto` then stays unconstrained, as before the call opens.
            (Err(e), Some(_)) => {
                tracing::debug!("tool_choice auto left unconstrained: {e}");
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weather() -> Value {
        let schema: Value = serde_json::from_str(
            r#"{"type": "object", "properties": {"city": {"type": "string"}}}"#,
        )
        .unwrap();
        function_tool("get_weather", Some(&Value::from("Weather")), Some(&schema))
    }

    #[test]
    fn function_tool_keeps_key_order() {
        let json = serde_json::to_string(&weather()).unwrap();
        assert!(
            json.starts_with(
                r#"{"type":"function","function":{"name":"get_weather","description""#
            ),
            "{json}"
        );
        assert_eq!(tool_name(&weather()).as_deref(), Some("get_weather"));
    }

    #[test]
    fn openai_choice_shapes() {
        use serde_json::json;
        let parse = |v: serde_json::Value| openai_choice(Some(&v));
        assert_eq!(openai_choice(None).unwrap(), ToolChoice::Auto);
        assert_eq!(parse(json!("none")).unwrap(), ToolChoice::None);
        assert_eq!(parse(json!("required")).unwrap(), ToolChoice::Required);
        let named = ToolChoice::Named("f".into());
        assert_eq!(
            parse(json!({"type": "function", "function": {"name": "f"}})).unwrap(),
            named
        );
        assert_eq!(
            parse(json!({"type": "function", "name": "f"})).unwrap(),
            named
        );
        assert!(parse(json!("sometimes")).is_err());
        assert!(parse(json!(3)).is_err());
    }

    #[test]
    fn choices_are_checked() {
        assert!(ToolSet::new(vec![weather()], ToolChoice::Named("nope".into())).is_err());
        assert!(ToolSet::new(vec![], ToolChoice::Required).is_err());
        let nameless = Value::from_iter([("type", Value::from("function"))]);
        assert!(ToolSet::new(vec![nameless], ToolChoice::Auto).is_err());
        let none = ToolSet::new(vec![weather()], ToolChoice::None).unwrap();
        assert!(!none.parses_calls());
        assert_eq!(none.grammar(ToolFormat::Generic).unwrap(), None);
        let named = ToolSet::new(vec![weather()], ToolChoice::Named("get_weather".into())).unwrap();
        let grammar = named.grammar(ToolFormat::Generic).unwrap().unwrap();
        assert!(
            grammar.grammar.text().contains("get_weather"),
            "{grammar:?}"
        );
        assert_eq!(grammar.after, None);
    }

    #[test]
    fn a_forced_call_beats_the_response_format_which_beats_a_lazy_auto_call() {
        let schema = Some("root ::= \"{}\"".to_string());
        let auto = ToolSet::new(vec![weather()], ToolChoice::Auto).unwrap();
        let lazy = auto
            .reply_grammar(ToolFormat::Hermes, None)
            .unwrap()
            .unwrap();
        assert_eq!(lazy.after.as_deref(), Some("<tool_call>"));
        assert!(lazy.grammar.text().contains("get_weather"));
        let format = auto.reply_grammar(ToolFormat::Hermes, schema.clone());
        assert_eq!(
            format.unwrap(),
            Some(ReplyGrammar::forced(Grammar::Gbnf(schema.clone().unwrap())))
        );
        // A format whose calls have no distinctive opening: auto stays free.
        assert_eq!(auto.reply_grammar(ToolFormat::Llama3, None).unwrap(), None);
        let required = ToolSet::new(vec![weather()], ToolChoice::Required).unwrap();
        let forced = required
            .reply_grammar(ToolFormat::Hermes, schema)
            .unwrap()
            .unwrap();
        assert_eq!(forced.after, None);
        assert!(forced.grammar.text().contains("get_weather"));
    }
}
