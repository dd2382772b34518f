//! JSON schema to llama.cpp grammar (GBNF), for constrained generation: forced tool calls
//! (`tool_choice` required or named) and `response_format` JSON schemas. Also the same
//! tool calls as a Lark grammar for llguidance ([`tool_call_lark`]), which takes the
//! schemas whole.
//!
//! Supported: `type` (object, array, string, number, integer, boolean, null, or a list of
//! them), `enum`, `const`, `properties` (every property is written, in schema order: always
//! valid, whatever `required` says), `items`, `maxItems`, `anyOf`/`oneOf`, `maxLength`, and
//! schemas without a type (any JSON value). Numbers have at most 16 digits and a two-digit
//! exponent, so they always parse. `$ref` and the rest are refused with an error.

use std::fmt::Write;

use llguidance::api::{GrammarInit, ParserLimits, TopLevelGrammar};
use llguidance::earley::ValidationResult;
use serde_json::Value;

use super::ToolFormat;

#[derive(Debug, thiserror::Error)]
#[error("JSON schema not supported for constrained output: {0}")]
pub struct SchemaError(String);

const BASE_RULES: &str = r#"char ::= [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})
string ::= "\"" char* "\""
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?
boolean ::= "true" | "false"
null ::= "null"
ws ::= " "?
value ::= object | array | string | number | boolean | null
object ::= "{" ws (string ":" ws value ("," ws string ":" ws value)*)? "}"
array ::= "[" ws (value ("," ws value)*)? "]"
"#;

/// Bounded repetitions above this are written unbounded. llama.cpp expands `x{0,n}` into
/// n rules and refuses a grammar once a repetition would make more than 2,000 (its
/// `MAX_REPETITION_THRESHOLD`); real agents' schemas (`maxItems`, `maxLength`) go past that.
/// What is relaxed is logged: the reply may then break that one bound, never the shape.
const MAX_BOUNDED_REPEAT: u64 = 64;

/// A grammar whose root is a JSON value valid under `schema`.
pub fn schema_grammar(schema: &Value) -> Result<String, SchemaError> {
    let mut rules = Rules::default();
    let root = rules.expression(schema, 0)?;
    Ok(rules.finish(&root))
}

/// A grammar whose root is one call, in `format`'s syntax, to one of `tools` (OpenAI tool
/// definitions), with arguments valid under the tool's parameter schema.
pub fn tool_call_grammar(format: ToolFormat, tools: &[&Value]) -> Result<String, SchemaError> {
    let mut rules = Rules::default();
    let alternatives = calls(format, tools, |name, parameters| {
        rules.context = format!("tool '{name}'");
        rules.expression(parameters, 0)
    })?;
    Ok(rules.finish(&alternatives.join(" | ")))
}

/// [`tool_call_grammar`] for llguidance, which kvrun's tool calls use: a Lark grammar whose
/// arguments are the tools' JSON schemas as they are (`%json`), so no schema is refused for
/// its size, and whose rule `call` is the call (`start: call` comes first, as a lazy grammar
/// needs). Separators are fixed (`", "`, `": "`), as in the GBNF. Checked here, without a
/// model: a schema llguidance cannot compile is refused now. As in the GBNF, an object's
/// declared properties are all written, in order, and no others ([`every_property`]).
pub fn tool_call_lark(format: ToolFormat, tools: &[&Value]) -> Result<String, SchemaError> {
    let options = serde_json::json!({
        "whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "});
    let alternatives = calls(format, tools, |_, parameters| {
        let mut schema = parameters.clone();
        every_property(&mut schema);
        if let Value::Object(map) = &mut schema {
            map.insert("x-guidance".into(), options.clone());
        }
        Ok(format!("%json {schema}"))
    })?;
    let mut out = String::from("start: call\ncall: ");
    out.push_str(&alternatives.join("\n    | "));
    out.push('\n');
    let grammar = GrammarInit::Serialized(TopLevelGrammar::from_lark(out.clone()));
    match grammar.validate(None, ParserLimits::default()) {
        ValidationResult::Error(e) => Err(SchemaError(e)),
        ValidationResult::Valid | ValidationResult::Warnings(_) => Ok(out),
    }
}

/// Makes every declared property of the schema's objects required and closes them to
/// others (unless the schema says otherwise): the calls small models write then hold the
/// whole shape, as the GBNF's do, instead of stopping early or inventing keys. Integers
/// without bounds get 16 digits at most, as in the GBNF, so they always parse.
fn every_property(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if map.get("type").and_then(Value::as_str) == Some("integer") {
        const MOST: i64 = 9_999_999_999_999_999;
        map.entry("minimum").or_insert(Value::from(-MOST));
        map.entry("maximum").or_insert(Value::from(MOST));
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        let names: Vec<Value> = properties.keys().cloned().map(Value::String).collect();
        properties.values_mut().for_each(every_property);
        map.insert("required".into(), Value::Array(names));
        map.entry("additionalProperties")
            .or_insert(Value::Bool(false));
    }
    for key in ["items", "additionalProperties", "not", "if", "then", "else"] {
        if let Some(inner) = map.get_mut(key) {
            every_property(inner);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(inner)) = map.get_mut(key) {
            inner.iter_mut().for_each(every_property);
        }
    }
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(inner)) = map.get_mut(key) {
            inner.values_mut().for_each(every_property);
        }
    }
}

/// One alternative per tool, in `format`'s syntax: literal text around the tool's name and
/// `args(name, parameters)`, the arguments' expression (GBNF and Lark read the same string
/// literals).
fn calls(
    format: ToolFormat,
    tools: &[&Value],
    mut args: impl FnMut(&str, &Value) -> Result<String, SchemaError>,
) -> Result<Vec<String>, SchemaError> {
    let (open, key, close) = match format {
        ToolFormat::Hermes => ("<tool_call>\n{\"name\": ", "arguments", "}\n</tool_call>"),
        ToolFormat::Llama3 => ("{\"name\": ", "parameters", "}"),
        ToolFormat::Mistral => ("[TOOL_CALLS][{\"name\": ", "arguments", "}]"),
        ToolFormat::DeepSeek | ToolFormat::Generic => {
            ("{\"tool_call\": {\"name\": ", "arguments", "}}")
        }
    };
    let empty = serde_json::json!({"type": "object"});
    let mut alternatives = Vec::new();
    for tool in tools {
        let function = tool.get("function").unwrap_or(tool);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| SchemaError("a tool without a name".into()))?;
        let parameters = function.get("parameters").unwrap_or(&empty);
        let args = args(name, parameters)?;
        let quoted = serde_json::to_string(name).expect("a string");
        alternatives.push(format!(
            "{} {} {} {args} {}",
            literal(open),
            literal(&quoted),
            literal(&format!(", \"{key}\": ")),
            literal(close)
        ));
    }
    if alternatives.is_empty() {
        return Err(SchemaError("no tools to call".into()));
    }
    Ok(alternatives)
}

/// The rules a schema needs beyond [`BASE_RULES`]. Every compound expression becomes a
/// named rule of its own, so a repetition always repeats one rule reference: llama.cpp
/// multiplies a repeated group's inner rules by the repetition count, and inline nesting
/// makes Claude Code's tool schemas exceed its limit.
#[derive(Default)]
struct Rules {
    /// `(name, body)` in the order they were made.
    named: Vec<(String, String)>,
    /// The same body is one rule (tool schemas repeat shapes).
    by_body: std::collections::HashMap<String, String>,
    /// Which tool or schema is being written, for the relaxation log.
    context: String,
}

impl Rules {
    /// A reference to a rule with this body.
    fn rule(&mut self, body: String) -> String {
        if let Some(name) = self.by_body.get(&body) {
            return name.clone();
        }
        let name = format!("r{}", self.named.len());
        self.by_body.insert(body.clone(), name.clone());
        self.named.push((name.clone(), body));
        name
    }

    /// `{0,max}` after one rule reference, or `*` when the bound is too large to expand.
    fn up_to(&self, max: u64, what: &str) -> String {
        if max > MAX_BOUNDED_REPEAT {
            let context = if self.context.is_empty() {
                "the schema"
            } else {
                &self.context
            };
            tracing::info!(
                "{context}: {what} {max} is not enforced by the grammar (above \
                 {MAX_BOUNDED_REPEAT}); the rest of the schema is"
            );
            "*".into()
        } else {
            format!("{{0,{max}}}")
        }
    }

    fn finish(self, root: &str) -> String {
        let mut out = format!("root ::= {root}\n");
        for (name, body) in &self.named {
            let _ = writeln!(out, "{name} ::= {body}");
        }
        out.push_str(BASE_RULES);
        out
    }

    fn expression(&mut self, schema: &Value, depth: usize) -> Result<String, SchemaError> {
        if depth > 32 {
            return Err(SchemaError("nested more than 32 levels".into()));
        }
        let schema = match schema {
            Value::Object(schema) => schema,
            // JSON Schema's `true` allows anything; `false` allows nothing, and anything else
            // is not a schema.
            Value::Bool(true) => return Ok("value".into()),
            Value::Bool(false) => return Err(SchemaError("`false` allows no value".into())),
            other => return Err(SchemaError(format!("{other} is not a schema"))),
        };
        if schema.contains_key("$ref") {
            return Err(SchemaError("$ref".into()));
        }
        if let Some(value) = schema.get("const") {
            return Ok(literal(&value.to_string()));
        }
        if let Some(values) = schema.get("enum") {
            let values = values
                .as_array()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| SchemaError("enum must be a non-empty list".into()))?;
            let alts: Vec<String> = values.iter().map(|v| literal(&v.to_string())).collect();
            return Ok(self.rule(alts.join(" | ")));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(options) = schema.get(key) {
                let options = options
                    .as_array()
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| SchemaError(format!("{key} must be a non-empty list")))?;
                let alts = options
                    .iter()
                    .map(|o| self.expression(o, depth + 1))
                    .collect::<Result<Vec<_>, _>>()?;
                return Ok(self.rule(alts.join(" | ")));
            }
        }
        match schema.get("type") {
            None => Ok("value".into()),
            Some(Value::String(kind)) => self.typed(kind, schema, depth),
            Some(Value::Array(kinds)) => {
                let alts = kinds
                    .iter()
                    .map(|k| match k.as_str() {
                        Some(kind) => self.typed(kind, schema, depth),
                        None => Err(SchemaError("type lists hold strings".into())),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(self.rule(alts.join(" | ")))
            }
            Some(other) => Err(SchemaError(format!("type {other}"))),
        }
    }

    fn typed(
        &mut self,
        kind: &str,
        schema: &serde_json::Map<String, Value>,
        depth: usize,
    ) -> Result<String, SchemaError> {
        Ok(match kind {
            "string" => match schema.get("maxLength").and_then(Value::as_u64) {
                Some(max) => {
                    let more = self.up_to(max, "maxLength");
                    self.rule(format!("\"\\\"\" char{more} \"\\\"\""))
                }
                None => "string".into(),
            },
            "integer" => "integer".into(),
            "number" => "number".into(),
            "boolean" => "boolean".into(),
            "null" => "null".into(),
            "array" => {
                let item = match schema.get("items") {
                    Some(items) => self.expression(items, depth + 1)?,
                    None => "value".into(),
                };
                let more = match schema.get("maxItems").and_then(Value::as_u64) {
                    Some(0) => return Ok(self.rule("\"[\" ws \"]\"".into())),
                    Some(max) => self.up_to(max - 1, "maxItems"),
                    None => "*".into(),
                };
                let rest = self.rule(format!("\",\" ws {item}"));
                self.rule(format!("\"[\" ws ({item} {rest}{more})? \"]\""))
            }
            "object" => {
                let properties = schema.get("properties").and_then(Value::as_object);
                // Every property is written (see the module's note), so a required one that
                // is not declared could never appear: the schema contradicts itself.
                let required = schema.get("required").and_then(Value::as_array);
                for name in required.into_iter().flatten() {
                    let declared = name
                        .as_str()
                        .is_some_and(|n| properties.is_some_and(|p| p.contains_key(n)));
                    if !declared && properties.is_some() {
                        return Err(SchemaError(format!(
                            "required property {name} is not among the properties"
                        )));
                    }
                }
                let Some(properties) = properties else {
                    return Ok("object".into());
                };
                let mut out = String::from("\"{\" ws");
                for (i, (name, property)) in properties.iter().enumerate() {
                    let key = literal(&serde_json::to_string(name).expect("a string"));
                    let sep = if i == 0 { "" } else { " \",\" ws" };
                    let value = self.expression(property, depth + 1)?;
                    let _ = write!(out, "{sep} {key} \":\" ws {value}");
                }
                out.push_str(" \"}\"");
                self.rule(out)
            }
            other => return Err(SchemaError(format!("type '{other}'"))),
        })
    }
}

/// `text` as a GBNF string literal: a JSON string literal is one (GBNF reads the same
/// `\"`, `\\`, `\n`, `\uXXXX` escapes).
fn literal(text: &str) -> String {
    serde_json::to_string(text).expect("a string serialises")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn object_schemas_become_rules() {
        let g = schema_grammar(&json!({"type": "object", "properties": {
            "city": {"enum": ["Paris", "Rome"]}, "days": {"type": "integer"}}}))
        .unwrap();
        assert!(g.starts_with(concat!(
            "root ::= r1\n",
            "r0 ::= \"\\\"Paris\\\"\" | \"\\\"Rome\\\"\"\n",
            "r1 ::= \"{\" ws \"\\\"city\\\"\" \":\" ws r0 \",\" ws \"\\\"days\\\"\" \":\" ws integer \"}\"\n",
        )), "{g}");
    }

    #[test]
    fn repetitions_repeat_one_rule_and_large_bounds_are_unbounded() {
        let g = schema_grammar(&json!({"type": "array", "maxItems": 3,
            "items": {"type": "object", "properties": {"a": {"type": "string", "maxLength": 5000}}}}))
        .unwrap();
        // The item is a rule of its own; `maxLength` 5000 would expand past llama.cpp's limit.
        assert!(g.contains("r0 ::= \"\\\"\" char* \"\\\"\"\n"), "{g}");
        assert!(g.contains("(r1 r2{0,2})?"), "{g}");
        let small = schema_grammar(&json!({"type": "string", "maxLength": 8})).unwrap();
        assert!(small.contains("char{0,8}"), "{small}");
    }

    #[test]
    fn lark_calls_embed_schemas_with_every_property() {
        let tool = json!({"type": "function", "function": {"name": "f", "parameters": {
            "type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "object",
            "properties": {"c": {"type": "integer"}}}}}}});
        let g = tool_call_lark(ToolFormat::Hermes, &[&tool]).unwrap();
        assert!(
            g.starts_with("start: call\ncall: \"<tool_call>\\n{\\\"name\\\": \" \"\\\"f\\\"\""),
            "{g}"
        );
        assert!(g.contains(r#""required":["a","b"]"#), "{g}");
        assert!(g.contains(r#""required":["c"]"#), "{g}");
        assert!(g.contains(r#""additionalProperties":false"#), "{g}");
        let bad = json!({"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "date"}}}});
        assert!(tool_call_lark(ToolFormat::Generic, &[&bad]).is_err());
    }

    #[test]
    fn unsupported_schemas_are_refused() {
        assert!(schema_grammar(&json!({"$ref": "#/defs/x"})).is_err());
        assert!(schema_grammar(&json!({"type": "date"})).is_err());
        assert!(schema_grammar(&json!({"enum": []})).is_err());
    }
}
