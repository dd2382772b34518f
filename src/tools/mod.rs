//! Tool calls and reasoning in generated text: which format a template's family uses, and
//! a streaming parser that splits a reply into content, reasoning and tool calls. Pure
//! Rust, no model needed.

mod format;
mod grammar;
mod parser;
mod shape;

pub use format::{ToolFormat, GENERIC_TOOL_PROMPT};
pub use grammar::{schema_grammar, tool_call_grammar, tool_call_lark, SchemaError};
pub use parser::{collect, parse_reply, ReplyEvent, ReplyParser};
pub use shape::{ParsedCall, ParsedReply};

#[cfg(test)]
mod tests;
