//! JSON schema to llama.cpp grammar (GBNF), for constrained generation: forced tool calls
//! (`tool_choice` required or named) and `response_format` JSON schemas.
//!
//! Supported: `type` (object, array, string, number, integer, boolean, null, or a list of
//! them), `enum`, `const`, `properties` (every property is written, in schema order: always
//! valid, whatever `required` says), `items`, `maxItems`, `anyOf`/`oneOf`, `maxLength`, and
//! schemas without a type (any JSON value). Numbers have at most 16 digits and a two-digit
//! exponent, so they always parse. `$ref` and the rest are refused with an error.

use std::fmt::Write;

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

/// A grammar whose root is a JSON value valid under `schema`.
pub fn schema_grammar(schema: &Value) -> Result<String, SchemaError> {
    let root = expression(schema, 0)?;
    Ok(format!("root ::= {root}\n{BASE_RULES}"))
}

/// A grammar whose root is one call, in `format`'s syntax, to one of `tools` (OpenAI tool
/// definitions), with arguments valid under the tool's parameter schema.
pub fn tool_call_grammar(format: ToolFormat, tools: &[&Value]) -> Result<String, SchemaError> {
    let mut alternatives = Vec::new();
    for tool in tools {
        let function = tool.get("function").unwrap_or(tool);
        let name = function
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| SchemaError("a tool without a name".into()))?;
        let empty = serde_json::json!({"type": "object"});
        let parameters = function.get("parameters").unwrap_or(&empty);
        let args = expression(parameters, 0)?;
        let name = literal(&serde_json::to_string(name).expect("a string"));
        alternatives.push(match format {
            ToolFormat::Hermes => format!(
                "\"<tool_call>\\n{{\\\"name\\\": \" {name} \", \\\"arguments\\\": \" {args} \"}}\\n</tool_call>\""
            ),
            ToolFormat::Llama3 => {
                format!("\"{{\\\"name\\\": \" {name} \", \\\"parameters\\\": \" {args} \"}}\"")
            }
            ToolFormat::Mistral => format!(
                "\"[TOOL_CALLS][{{\\\"name\\\": \" {name} \", \\\"arguments\\\": \" {args} \"}}]\""
            ),
            ToolFormat::DeepSeek | ToolFormat::Generic => format!(
                "\"{{\\\"tool_call\\\": {{\\\"name\\\": \" {name} \", \\\"arguments\\\": \" {args} \"}}}}\""
            ),
        });
    }
    if alternatives.is_empty() {
        return Err(SchemaError("no tools to call".into()));
    }
    Ok(format!(
        "root ::= {}\n{BASE_RULES}",
        alternatives.join(" | ")
    ))
}

fn expression(schema: &Value, depth: usize) -> Result<String, SchemaError> {
    if depth > 32 {
        return Err(SchemaError("nested more than 32 levels".into()));
    }
    let Some(schema) = schema.as_object() else {
        // `true` (or a non-object) allows anything.
        return Ok("value".into());
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
        return Ok(format!("({})", alts.join(" | ")));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(options) = schema.get(key) {
            let options = options
                .as_array()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| SchemaError(format!("{key} must be a non-empty list")))?;
            let alts = options
                .iter()
                .map(|o| expression(o, depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(format!("({})", alts.join(" | ")));
        }
    }
    match schema.get("type") {
        None => Ok("value".into()),
        Some(Value::String(kind)) => typed(kind, schema, depth),
        Some(Value::Array(kinds)) => {
            let alts = kinds
                .iter()
                .map(|k| match k.as_str() {
                    Some(kind) => typed(kind, schema, depth),
                    None => Err(SchemaError("type lists hold strings".into())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(format!("({})", alts.join(" | ")))
        }
        Some(other) => Err(SchemaError(format!("type {other}"))),
    }
}

fn typed(
    kind: &str,
    schema: &serde_json::Map<String, Value>,
    depth: usize,
) -> Result<String, SchemaError> {
    Ok(match kind {
        "string" => match schema.get("maxLength").and_then(Value::as_u64) {
            Some(max) => format!("\"\\\"\" char{{0,{}}} \"\\\"\"", max.min(10_000)),
            None => "string".into(),
        },
        "integer" => "integer".into(),
        "number" => "number".into(),
        "boolean" => "boolean".into(),
        "null" => "null".into(),
        "array" => {
            let item = match schema.get("items") {
                Some(items) => expression(items, depth + 1)?,
                None => "value".into(),
            };
            let more = match schema.get("maxItems").and_then(Value::as_u64) {
                Some(0) => return Ok("(\"[\" ws \"]\")".into()),
                Some(max) => format!("{{0,{}}}", (max - 1).min(10_000)),
                None => "*".into(),
            };
            format!("(\"[\" ws ({item} (\",\" ws {item}){more})? \"]\")")
        }
        "object" => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return Ok("object".into());
            };
            let mut out = String::from("\"{\" ws");
            for (i, (name, property)) in properties.iter().enumerate() {
                let key = literal(&serde_json::to_string(name).expect("a string"));
                let sep = if i == 0 { "" } else { " \",\" ws" };
                let _ = write!(
                    out,
                    "{sep} {key} \":\" ws {}",
                    expression(property, depth + 1)?
                );
            }
            out.push_str(" \"}\"");
            format!("({out})")
        }
        other => return Err(SchemaError(format!("type '{other}'"))),
    })
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
        assert!(g.starts_with(
            "root ::= (\"{\" ws \"\\\"city\\\"\" \":\" ws (\"\\\"Paris\\\"\" | \"\\\"Rome\\\"\") \",\" ws \"\\\"days\\\"\" \":\" ws integer \"}\")\n"
        ), "{g}");
    }

    #[test]
    fn unsupported_schemas_are_refused() {
        assert!(schema_grammar(&json!({"$ref": "#/defs/x"})).is_err());
        assert!(schema_grammar(&json!({"type": "date"})).is_err());
        assert!(schema_grammar(&json!({"enum": []})).is_err());
    }
}
