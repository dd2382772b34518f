//! `kvrun run --tools FILE [--tool-choice C]` and `--json-schema FILE`: reading and
//! checking them, the grammar that forces a call or a schema, and the parsed reply's
//! fields in the --json report.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;
use serde_json::Value;

use crate::cli::RunArgs;
use crate::exit::usage;
use crate::llama::{Grammar, Model, Sampler};
use crate::tools::{schema_grammar, tool_call_lark, ParsedReply, ToolFormat};

/// A tools or schema file larger than this is refused.
const MAX_JSON_FILE_BYTES: u64 = 4 << 20;

enum ToolChoice {
    Auto,
    None,
    Required,
    Named(String),
}

/// The tools of a run and what the model must do with them.
pub(super) struct ToolRequest {
    /// As the template sees them (JSON key order kept).
    pub template_value: minijinja::Value,
    definitions: Vec<Value>,
    choice: ToolChoice,
}

impl ToolRequest {
    pub fn load(args: &RunArgs) -> Result<Option<Self>> {
        let Some(path) = &args.tools else {
            return Ok(None);
        };
        let text = read_json_file(path, "--tools")?;
        let definitions: Vec<Value> = serde_json::from_str(&text).map_err(|e| {
            usage(format!(
                "--tools {}: not a JSON list of tool definitions: {e}",
                path.display()
            ))
        })?;
        for (i, tool) in definitions.iter().enumerate() {
            check_tool(tool)
                .map_err(|e| usage(format!("--tools {}: tool {i}: {e}", path.display())))?;
        }
        let names: Vec<&str> = definitions.iter().filter_map(tool_name).collect();
        let choice = match args.tool_choice.as_deref().unwrap_or("auto") {
            "auto" => ToolChoice::Auto,
            "none" => ToolChoice::None,
            "required" => ToolChoice::Required,
            name if names.contains(&name) => ToolChoice::Named(name.to_string()),
            name => {
                return Err(usage(format!(
                    "--tool-choice '{name}' names no tool in {} (tools: {})",
                    path.display(),
                    names.join(", ")
                )))
            }
        };
        let template_value = serde_json::from_str(&text)?;
        Ok(Some(Self {
            template_value,
            definitions,
            choice,
        }))
    }

    /// Whether calls are parsed from the reply.
    pub fn parses_calls(&self) -> bool {
        !matches!(self.choice, ToolChoice::None)
    }

    /// The grammar of the call: forced for `required` and a named tool; for `auto`, lazy
    /// (from the format's call opening on), where the format has a distinctive one.
    pub fn constraint(&self, format: ToolFormat) -> Result<Option<Constraint>> {
        let (tools, after): (Vec<&Value>, _) = match &self.choice {
            ToolChoice::None => return Ok(None),
            ToolChoice::Auto => match format.call_opening() {
                Some(opening) => (self.definitions.iter().collect(), Some(opening)),
                None => return Ok(None),
            },
            ToolChoice::Required => (self.definitions.iter().collect(), None),
            ToolChoice::Named(name) => (
                self.definitions
                    .iter()
                    .filter(|t| tool_name(t) == Some(name.as_str()))
                    .collect(),
                None,
            ),
        };
        let grammar = tool_call_lark(format, &tools).map_err(|e| usage(e.to_string()))?;
        Ok(Some(Constraint {
            grammar: Grammar::Lark(grammar),
            after,
        }))
    }
}

/// A grammar the reply must match.
pub(super) struct Constraint {
    pub grammar: Grammar,
    /// Lazy: the grammar holds from this text on (before it the reply is free).
    pub after: Option<&'static str>,
}

impl Constraint {
    pub fn apply(&self, model: &Model, sampler: &mut Sampler) -> Result<()> {
        match self.after {
            Some(opening) => sampler.constrain_after(model, &self.grammar, opening)?,
            None => sampler.constrain(model, &self.grammar)?,
        }
        Ok(())
    }
}

/// The grammar of `--json-schema FILE`.
pub(super) fn schema_file_grammar(args: &RunArgs) -> Result<Option<Constraint>> {
    let Some(path) = &args.json_schema else {
        return Ok(None);
    };
    let text = read_json_file(path, "--json-schema")?;
    let schema: Value = serde_json::from_str(&text)
        .map_err(|e| usage(format!("--json-schema {}: not JSON: {e}", path.display())))?;
    let grammar = schema_grammar(&schema)
        .map_err(|e| usage(format!("--json-schema {}: {e}", path.display())))?;
    Ok(Some(Constraint {
        grammar: Grammar::Gbnf(grammar),
        after: None,
    }))
}

/// What --json adds for a chat-mode reply: the reply split into content, reasoning and
/// OpenAI-shaped tool calls.
#[derive(Serialize, Default)]
pub(super) struct ReplyFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<Value>,
}

impl ReplyFields {
    pub fn new(reply: &ParsedReply, with_tools: bool) -> Self {
        let split = with_tools || reply.reasoning.is_some();
        Self {
            content: split.then(|| reply.content.clone()),
            reasoning_content: reply.reasoning.clone(),
            tool_calls: reply.tool_calls.iter().map(|c| c.to_openai()).collect(),
        }
    }
}

fn tool_name(tool: &Value) -> Option<&str> {
    tool.get("function")?.get("name")?.as_str()
}

fn check_tool(tool: &Value) -> Result<(), String> {
    let function = tool
        .get("function")
        .filter(|_| tool.get("type").and_then(Value::as_str) == Some("function"))
        .ok_or("expected {\"type\": \"function\", \"function\": {...}}")?;
    let name = function
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("the function needs a non-empty \"name\"")?;
    match function.get("parameters") {
        None => Ok(()),
        Some(p) if p.is_object() => schema_grammar(p)
            .map(|_| ())
            .map_err(|e| format!("{name}: {e}")),
        Some(_) => Err(format!(
            "{name}: \"parameters\" must be a JSON schema object"
        )),
    }
}

fn read_json_file(path: &Path, flag: &str) -> Result<String> {
    let meta =
        std::fs::metadata(path).map_err(|e| usage(format!("{flag} {}: {e}", path.display())))?;
    if !meta.is_file() || meta.len() > MAX_JSON_FILE_BYTES {
        return Err(usage(format!(
            "{flag} {}: not a regular file of at most {} MiB",
            path.display(),
            MAX_JSON_FILE_BYTES >> 20
        )));
    }
    std::fs::read_to_string(path).map_err(|e| usage(format!("{flag} {}: {e}", path.display())))
}
