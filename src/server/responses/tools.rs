//! The Responses API's tools as chat templates read them. Function tools come flat
//! (`{type, name, description, parameters}`) or nested as chat has them. A `namespace` tool
//! groups function tools under one name (Codex puts its sub-agent tools in one, and each
//! MCP server's tools in another); templates know only flat functions, so each nested
//! function is shown to the model as `<namespace>__<name>`, and a call to that name goes
//! back to the client as `name` and `namespace` apart, which is the only form Codex runs
//! (a joined, bare or dotted name gets "unsupported call").

use std::collections::HashMap;

use minijinja::Value;

use crate::server::errors::ApiError;
use crate::server::openai::function_tools;
use crate::server::tool_choice::{function_tool, openai_choice, tool_name, ToolChoice};

/// The template's name for `name` in `namespace`: the two joined by `__`, once (Codex's MCP
/// namespaces, `mcp__server__`, already end in it, which gives the `mcp__server__tool`
/// names Codex itself uses for MCP tools).
pub fn flat_name(namespace: &str, name: &str) -> String {
    if namespace.ends_with("__") {
        format!("{namespace}{name}")
    } else {
        format!("{namespace}__{name}")
    }
}

/// The namespaced tools of a request, by their flat name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Namespaces {
    by_flat: HashMap<String, (String, String)>,
}

impl Namespaces {
    /// `(namespace, name)` of a flat name, when it names a namespaced tool.
    pub fn split(&self, flat: &str) -> Option<(&str, &str)> {
        self.by_flat
            .get(flat)
            .map(|(namespace, name)| (namespace.as_str(), name.as_str()))
    }
}

fn attr(value: &Value, key: &str) -> Option<Value> {
    value.get_attr(key).ok().filter(|v| !v.is_undefined())
}

fn string(value: &Value, key: &str) -> Option<String> {
    attr(value, key).and_then(|v| v.as_str().map(str::to_string))
}

/// A flat function tool's name, or `None` for any other tool.
fn flat_function(tool: &Value) -> Option<String> {
    let is_function = string(tool, "type").as_deref() == Some("function");
    (is_function && attr(tool, "function").is_none())
        .then(|| string(tool, "name"))
        .flatten()
}

/// The tools in OpenAI's chat shape, namespaces expanded, and the namespaced names. Other
/// types (also inside a namespace) are dropped with [`function_tools`]' warning. A flat
/// name that two tools would share is refused: a call to it could not be routed back.
pub fn definitions(tools: &[Value]) -> Result<(Vec<Value>, Namespaces), ApiError> {
    let mut converted = Vec::new();
    let mut namespaces = Namespaces::default();
    for (i, tool) in tools.iter().enumerate() {
        if string(tool, "type").as_deref() != Some("namespace") {
            converted.push(match flat_function(tool) {
                Some(name) => chat_shaped(tool, &name),
                None => tool.clone(),
            });
            continue;
        }
        let namespace = string(tool, "name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                ApiError::bad_request(format!("tools[{i}] is a namespace without a name"))
                    .param(&format!("tools[{i}].name"))
            })?;
        let nested = attr(tool, "tools");
        for inner in nested
            .iter()
            .flat_map(|t| t.try_iter().into_iter().flatten())
        {
            let Some(name) = flat_function(&inner) else {
                converted.push(inner);
                continue;
            };
            let flat = flat_name(&namespace, &name);
            converted.push(chat_shaped(&inner, &flat));
            namespaces.by_flat.insert(flat, (namespace.clone(), name));
        }
    }
    let definitions = function_tools(&converted);
    // Only a namespaced name is checked: two plain tools of one name were served before
    // namespaces were, and a client may rely on it.
    let mut seen = std::collections::HashSet::new();
    for name in definitions.iter().filter_map(tool_name) {
        if !seen.insert(name.clone()) && namespaces.split(&name).is_some() {
            return Err(ApiError::bad_request(format!(
                "two tools are named '{name}' (a namespace's tools are named \
                 <namespace>__<name>); rename one"
            ))
            .param("tools"));
        }
    }
    Ok((definitions, namespaces))
}

fn chat_shaped(tool: &Value, name: &str) -> Value {
    function_tool(
        name,
        attr(tool, "description").as_ref(),
        attr(tool, "parameters").as_ref(),
    )
}

/// `tool_choice`, where a named function may carry its `namespace`
/// (`{"type": "function", "name", "namespace"}`): that names the flat tool.
pub fn choice(value: Option<&serde_json::Value>) -> Result<ToolChoice, ApiError> {
    let namespaced = value.and_then(|v| {
        let namespace = v.get("namespace")?.as_str()?;
        let name = v.get("name")?.as_str()?;
        Some(flat_name(namespace, name))
    });
    match namespaced {
        Some(flat) => Ok(ToolChoice::Named(flat)),
        None => openai_choice(value),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools(value: serde_json::Value) -> Vec<Value> {
        value
            .as_array()
            .unwrap()
            .iter()
            .map(Value::from_serialize)
            .collect()
    }

    fn names(definitions: &[Value]) -> Vec<String> {
        definitions.iter().filter_map(tool_name).collect()
    }

    #[test]
    fn namespaces_are_flattened_and_mapped_back() {
        let params = json!({"type": "object", "properties": {"id": {"type": "string"}}});
        let request = tools(json!([
            {"type": "function", "name": "exec_command", "parameters": params},
            {"type": "namespace", "name": "multi_agent_v1", "description": "Sub-agents.",
             "tools": [
                {"type": "function", "name": "spawn_agent", "description": "Spawn.", "parameters": params},
                {"type": "web_search"},
                {"type": "function", "name": "wait_agent"},
             ]},
            {"type": "namespace", "name": "mcp__docs__", "tools": [
                {"type": "function", "name": "search", "parameters": params},
            ]},
            {"type": "web_search"},
        ]));
        let (definitions, namespaces) = definitions(&request).unwrap();
        assert_eq!(
            names(&definitions),
            [
                "exec_command",
                "multi_agent_v1__spawn_agent",
                "multi_agent_v1__wait_agent",
                "mcp__docs__search"
            ]
        );
        // The nested tool keeps its description and schema, in chat's shape.
        let spawn = serde_json::to_value(&definitions[1]).unwrap();
        assert_eq!(
            spawn,
            json!({"type": "function", "function": {"name": "multi_agent_v1__spawn_agent",
                "description": "Spawn.", "parameters": params}})
        );
        assert_eq!(
            namespaces.split("multi_agent_v1__spawn_agent"),
            Some(("multi_agent_v1", "spawn_agent"))
        );
        assert_eq!(
            namespaces.split("mcp__docs__search"),
            Some(("mcp__docs__", "search"))
        );
        assert_eq!(namespaces.split("exec_command"), None);
        assert_eq!(namespaces.split("spawn_agent"), None);
    }

    #[test]
    fn a_flat_name_two_tools_would_share_is_refused() {
        let request = tools(json!([
            {"type": "function", "name": "a__b"},
            {"type": "namespace", "name": "a", "tools": [{"type": "function", "name": "b"}]},
        ]));
        let e = definitions(&request).unwrap_err();
        assert!(e.message.contains("'a__b'"), "{}", e.message);
        let nameless = tools(json!([{"type": "namespace", "tools": []}]));
        assert_eq!(
            definitions(&nameless).unwrap_err().param.as_deref(),
            Some("tools[0].name")
        );
    }

    #[test]
    fn a_forced_call_may_name_its_namespace() {
        let forced =
            json!({"type": "function", "name": "spawn_agent", "namespace": "multi_agent_v1"});
        assert_eq!(
            choice(Some(&forced)).unwrap(),
            ToolChoice::Named("multi_agent_v1__spawn_agent".into())
        );
        let plain = json!({"type": "function", "name": "exec_command"});
        assert_eq!(
            choice(Some(&plain)).unwrap(),
            ToolChoice::Named("exec_command".into())
        );
        assert_eq!(choice(None).unwrap(), ToolChoice::Auto);
    }
}
