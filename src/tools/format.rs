//! The tool-call syntaxes of the template families, recognised from the template text.

/// How a family's model writes a tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// Hermes, Qwen 2.5/3, QwQ: `<tool_call>{"name": …, "arguments": …}</tool_call>`.
    Hermes,
    /// Llama 3.x: a reply that is one JSON object `{"name": …, "parameters": …}`, or
    /// `<|python_tag|>` followed by one.
    Llama3,
    /// Mistral: `[TOOL_CALLS][{"name": …, "arguments": …, "id": …}, …]`.
    Mistral,
    /// DeepSeek R1: `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME
    /// ```json ARGS ```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>`.
    DeepSeek,
    /// Templates that ignore `tools`: kvrun describes the tools in the system turn
    /// ([`GENERIC_TOOL_PROMPT`]) and the model answers with one JSON object,
    /// `{"tool_call": {"name": …, "arguments": …}}` or `{"response": "…"}`.
    Generic,
}

/// The system-turn text that describes tools to a template without tool support, followed
/// by the tools' JSON definitions, one per line (the same scheme as llama.cpp's server
/// uses for such templates).
pub const GENERIC_TOOL_PROMPT: &str = "You can call tools. To call one, reply with only a JSON \
object {\"tool_call\": {\"name\": NAME, \"arguments\": {...}}}; otherwise reply with \
{\"response\": \"your answer\"}. The tools:";

impl ToolFormat {
    /// The format a template's text implies.
    pub fn detect(template: &str) -> Self {
        if template.contains("[TOOL_CALLS]") {
            Self::Mistral
        } else if template.contains("tool▁calls▁begin") {
            Self::DeepSeek
        } else if template.contains("<tool_call>") {
            Self::Hermes
        } else if template.contains("<|python_tag|>")
            || (template.contains("<|start_header_id|>") && template.contains("tools"))
        {
            Self::Llama3
        } else {
            Self::Generic
        }
    }

    /// The text every call in this format starts with (and its call grammar too), when it
    /// is distinctive enough for a lazy grammar to wait for. A Llama 3 call is bare JSON,
    /// which plain replies may hold as well; DeepSeek's markup is not what its grammar
    /// writes.
    pub fn call_opening(self) -> Option<&'static str> {
        match self {
            Self::Hermes => Some("<tool_call>"),
            Self::Mistral => Some("[TOOL_CALLS]"),
            Self::Generic => Some("{\"tool_call\""),
            Self::Llama3 | Self::DeepSeek => None,
        }
    }

    /// Whether the template itself renders `tools` (else kvrun adds the generic prompt).
    pub fn template_renders_tools(template: &str) -> bool {
        template.contains("tools")
    }
}
