//! The agent-shaped conversation `bench serve` sends (to kvrun, and to llama-server side by
//! side): system rules grown to a token count, twelve tool schemas, and user turns.

use serde_json::{json, Value};

/// Prose of an agent's system blocks (rules, conventions) of about `tokens` tokens on the
/// model's tokenizer; the first call reports the rendered prompt's real count.
pub(super) fn agent_system_text(model: &crate::llama::Model, tokens: usize) -> String {
    const RULES: [&str; 6] = [
        "Prefer editing existing files to creating new ones, and keep changes minimal.",
        "Before running a command that changes the system, explain what it does and why.",
        "When a test fails, read the failure closely and fix the cause, not the symptom.",
        "Use the search tool before guessing at a file's location or an API's signature.",
        "Keep answers short: the user reads them in a terminal, one screen at a time.",
        "Never print secrets; redact tokens and keys that appear in command output.",
    ];
    let mut text =
        String::from("You are an interactive agent that helps with software engineering tasks.\n");
    let mut counted = model.tokenize(&text, false).len();
    let mut i = 0;
    while counted < tokens {
        let rule = RULES[i % RULES.len()];
        let line = format!("{}. {rule} (section {}, rule {})\n", i + 1, i / 12, i % 12);
        counted += model.tokenize(&line, false).len();
        text.push_str(&line);
        i += 1;
    }
    text
}

/// Twelve tools with JSON schemas, the shape of a coding agent's.
pub(super) fn agent_tools() -> Value {
    let names = [
        "Bash",
        "Read",
        "Write",
        "Edit",
        "Glob",
        "Grep",
        "WebFetch",
        "TodoWrite",
        "Task",
        "NotebookEdit",
        "LS",
        "MultiEdit",
    ];
    Value::Array(
        names
            .iter()
            .map(|name| {
                json!({"type": "function", "function": {
                    "name": name,
                    "description": format!("{name}: runs the {name} operation on the workspace and returns its output."),
                    "parameters": {"type": "object", "properties": {
                        "path": {"type": "string", "description": "Absolute path of the file or folder"},
                        "pattern": {"type": "string", "description": "A glob or regular expression"},
                        "timeout_ms": {"type": "integer", "description": "Give up after this long"},
                    }, "required": ["path"]},
                }})
            })
            .collect(),
    )
}

/// The conversation after `turns` earlier exchanges: each call adds one user turn.
pub(super) fn agent_messages(system: &str, turns: usize) -> Value {
    let mut messages = vec![json!({"role": "system", "content": system})];
    for i in 0..turns {
        messages.push(json!({"role": "user", "content": format!("Task {i}: list the files.")}));
        messages.push(json!({"role": "assistant", "content": "Done."}));
    }
    messages.push(
        json!({"role": "user", "content": format!("Task {turns}: summarise the repository.")}),
    );
    Value::Array(messages)
}
