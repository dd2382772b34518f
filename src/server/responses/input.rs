//! A Responses request's `input` (a string, or items) as template messages. Item ids are
//! never rendered (Codex sends fresh random ones per item). Reasoning items are not
//! rendered; nor are items of built-in tools (`web_search_call`, ...), which are logged.

use serde_json::Value;

use super::tools::flat_name;
use crate::server::errors::ApiError;
use crate::server::openai::tool_call;
use crate::server::render::{content_text, text_message};
use crate::template::Message;

const MESSAGE_ROLES: [&str; 4] = ["system", "developer", "user", "assistant"];

/// Appends `input` to `messages`.
pub fn push_input(messages: &mut Vec<Message>, input: &Value) -> Result<(), ApiError> {
    match input {
        Value::String(text) => messages.push(text_message("user", text.clone())),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                push_item(messages, item, &format!("input[{i}]"))?;
            }
        }
        _ => {
            return Err(
                ApiError::bad_request("input must be a string or a list of items").param("input"),
            )
        }
    }
    Ok(())
}

fn push_item(messages: &mut Vec<Message>, item: &Value, at: &str) -> Result<(), ApiError> {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or(if item.get("role").is_some() {
            "message"
        } else {
            ""
        });
    let string = |key: &str| item.get(key).and_then(Value::as_str).map(str::to_string);
    match kind {
        "message" => {
            let role = item.get("role").and_then(Value::as_str).unwrap_or("");
            if !MESSAGE_ROLES.contains(&role) {
                return Err(ApiError::bad_request(format!(
                    "{at} has unknown role '{role}' (expected one of {})",
                    MESSAGE_ROLES.join(", ")
                ))
                .param(&format!("{at}.role")));
            }
            let content = item.get("content").unwrap_or(&Value::Null);
            let text = content_text(content, &format!("{at}.content"))?;
            messages.push(text_message(role, text));
        }
        "function_call" => {
            let mut call = tool_call(item, at)?;
            call.id = string("call_id").or(call.id);
            // A namespaced tool's call, rendered under the name the template shows it by.
            if let Some(namespace) = string("namespace") {
                call.function.name = flat_name(&namespace, &call.function.name);
            }
            // Calls right after an assistant turn belong to it (chat templates expect one
            // assistant message holding its text and its calls).
            match messages.last_mut() {
                Some(last) if last.role == "assistant" => last.tool_calls.push(call),
                _ => {
                    let mut message = text_message("assistant", String::new());
                    message.tool_calls.push(call);
                    messages.push(message);
                }
            }
        }
        "function_call_output" | "custom_tool_call_output" => {
            let output = item.get("output").unwrap_or(&Value::Null);
            let text = content_text(output, &format!("{at}.output"))?;
            let Some(call_id) = string("call_id") else {
                return Err(ApiError::bad_request(format!(
                    "{at}.call_id: a {kind} needs the call_id of the call it answers"
                ))
                .param(&format!("{at}.call_id")));
            };
            let mut message = text_message("tool", text);
            message.tool_call_id = Some(call_id);
            message.name = message
                .tool_call_id
                .as_deref()
                .and_then(|id| call_name(messages, id));
            messages.push(message);
        }
        "reasoning" => {}
        "" => {
            return Err(ApiError::bad_request(format!("{at} has no \"type\"")).param(at));
        }
        other => tracing::warn!("ignoring input item of type '{other}' ({at})"),
    }
    Ok(())
}

/// The function an earlier call with `call_id` named.
fn call_name(messages: &[Message], call_id: &str) -> Option<String> {
    messages
        .iter()
        .rev()
        .flat_map(|m| &m.tool_calls)
        .find(|c| c.id.as_deref() == Some(call_id))
        .map(|c| c.function.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn codex_shaped_input() {
        let mut messages = Vec::new();
        push_input(&mut messages, &json!([
            {"type": "message", "id": "msg_random1", "role": "developer",
             "content": [{"type": "input_text", "text": "You are Codex."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "zzz"},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": "{\"cmd\":\"ls\"}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
            {"type": "web_search_call", "id": "ws_1"},
        ]))
        .unwrap();
        let roles: Vec<&str> = messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["developer", "user", "assistant", "tool"]);
        assert_eq!(messages[2].tool_calls[0].id.as_deref(), Some("call_1"));
        assert_eq!(messages[3].name.as_deref(), Some("shell"));
        let rendered = serde_json::to_string(&messages).unwrap();
        assert!(
            !rendered.contains("msg_random1") && !rendered.contains("fc_1"),
            "{rendered}"
        );
    }

    #[test]
    fn a_namespaced_call_is_rendered_under_its_flat_name() {
        let mut messages = Vec::new();
        push_input(
            &mut messages,
            &json!([
                {"type": "message", "role": "user", "content": "spawn one"},
                {"type": "function_call", "call_id": "call_1", "namespace": "multi_agent_v1",
                 "name": "spawn_agent", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": "agent 7"},
            ]),
        )
        .unwrap();
        let flat = "multi_agent_v1__spawn_agent";
        assert_eq!(messages[1].tool_calls[0].function.name, flat);
        assert_eq!(messages[2].name.as_deref(), Some(flat));
    }

    #[test]
    fn bad_items() {
        let mut messages = Vec::new();
        assert!(push_input(&mut messages, &json!(5)).is_err());
        let e = push_input(
            &mut messages,
            &json!([{"type": "message", "role": "wizard", "content": "x"}]),
        )
        .unwrap_err();
        assert_eq!(e.param.as_deref(), Some("input[0].role"));
        let image =
            json!([{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]);
        assert!(push_input(&mut messages, &image).is_err());
    }
}
