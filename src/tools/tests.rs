use serde_json::json;

use super::*;

/// Parses `text` whole, and streamed one character at a time; both must agree.
fn both(format: ToolFormat, in_reasoning: bool, text: &str) -> ParsedReply {
    let whole = parse_reply(format, true, in_reasoning, text);
    let mut parser = ReplyParser::new(format, true, in_reasoning);
    let mut events = Vec::new();
    for c in text.chars() {
        events.extend(parser.push(&c.to_string()));
    }
    events.extend(parser.finish());
    assert_eq!(
        collect(events),
        whole,
        "streamed and whole differ on {text:?}"
    );
    whole
}

fn call(reply: &ParsedReply, i: usize) -> (&str, &serde_json::Value) {
    (&reply.tool_calls[i].name, &reply.tool_calls[i].arguments)
}

#[test]
fn formats_are_recognised_from_the_corpus_templates() {
    let read = |f: &str| std::fs::read_to_string(format!("tests/templates/{f}")).unwrap();
    assert_eq!(ToolFormat::detect(&read("qwen3.jinja")), ToolFormat::Hermes);
    assert_eq!(
        ToolFormat::detect(&read("qwq-32b.jinja")),
        ToolFormat::Hermes
    );
    assert_eq!(
        ToolFormat::detect(&read("hermes-3-llama-3.1-tool_use.jinja")),
        ToolFormat::Hermes
    );
    assert_eq!(
        ToolFormat::detect(&read("llama-3.3-70b.jinja")),
        ToolFormat::Llama3
    );
    assert_eq!(
        ToolFormat::detect(&read("mistral-nemo-2407.jinja")),
        ToolFormat::Mistral
    );
    assert_eq!(
        ToolFormat::detect(&read("deepseek-r1-llama-cpp.jinja")),
        ToolFormat::DeepSeek
    );
    assert_eq!(
        ToolFormat::detect(&read("gemma-2.jinja")),
        ToolFormat::Generic
    );
    assert!(!ToolFormat::template_renders_tools(&read(
        "phi-3.5-mini.jinja"
    )));
}

#[test]
fn hermes_calls_with_text_before_and_reasoning() {
    let text = "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Zürich\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
    let reply = both(ToolFormat::Hermes, false, text);
    assert_eq!(reply.reasoning.as_deref(), Some("The user wants weather."));
    assert_eq!(reply.content, "Let me check.");
    assert_eq!(
        call(&reply, 0),
        ("get_weather", &json!({"location": "Zürich"}))
    );
    assert_eq!(call(&reply, 1), ("now", &json!({})));
    assert_eq!(reply.tool_calls[0].id.len(), 9);
}

#[test]
fn a_broken_call_is_kept_as_text() {
    let text = "Try <tool_call>{not json}</tool_call> then.";
    let reply = both(ToolFormat::Hermes, false, text);
    assert!(reply.tool_calls.is_empty());
    assert_eq!(reply.content, text);
    // An opener that never closes is text too.
    let reply = both(ToolFormat::Hermes, false, "a <tool_call>{\"name\": \"x\"");
    assert_eq!(reply.content, "a <tool_call>{\"name\": \"x\"");
}

#[test]
fn text_that_only_looks_like_a_marker_start_streams_through() {
    let mut parser = ReplyParser::new(ToolFormat::Hermes, true, false);
    assert_eq!(
        parser.push("x <tool_"),
        vec![ReplyEvent::Content("x ".into())]
    );
    assert_eq!(
        parser.push("box> y"),
        vec![ReplyEvent::Content("<tool_box> y".into())]
    );
    assert!(parser.finish().is_empty());
}

#[test]
fn llama3_bare_json_and_python_tag() {
    let reply = both(
        ToolFormat::Llama3,
        false,
        "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}",
    );
    assert_eq!(
        call(&reply, 0),
        ("get_weather", &json!({"location": "Paris"}))
    );
    assert_eq!(reply.content, "");
    let reply = both(
        ToolFormat::Llama3,
        false,
        "<|python_tag|>{\"name\": \"search\", \"parameters\": {\"q\": \"kv\"}}",
    );
    assert_eq!(call(&reply, 0), ("search", &json!({"q": "kv"})));
    let reply = both(ToolFormat::Llama3, false, "{braces} in an answer");
    assert_eq!(reply.content, "{braces} in an answer");
}

#[test]
fn mistral_call_array() {
    let text = "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"x\": 1}, \"id\": \"abcdefghi\"}, {\"name\": \"b\", \"arguments\": \"{\\\"y\\\": 2}\"}]";
    let reply = both(ToolFormat::Mistral, false, text);
    assert_eq!(call(&reply, 0), ("a", &json!({"x": 1})));
    assert_eq!(reply.tool_calls[0].id, "abcdefghi");
    assert_eq!(call(&reply, 1), ("b", &json!({"y": 2})));
}

#[test]
fn deepseek_r1_reasoning_from_the_prompt_and_calls() {
    let text = "I should look it up.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>lookup\n```json\n{\"word\": \"cache\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>";
    let reply = both(ToolFormat::DeepSeek, true, text);
    assert_eq!(reply.reasoning.as_deref(), Some("I should look it up."));
    assert_eq!(call(&reply, 0), ("lookup", &json!({"word": "cache"})));
}

#[test]
fn generic_format_call_and_response() {
    let reply = both(
        ToolFormat::Generic,
        false,
        " {\"tool_call\": {\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}}",
    );
    assert_eq!(call(&reply, 0), ("add", &json!({"a": 1, "b": 2})));
    let reply = both(ToolFormat::Generic, false, "{\"response\": \"Hello!\"}");
    assert_eq!(reply.content, "Hello!");
    assert!(reply.tool_calls.is_empty());
    let reply = both(ToolFormat::Generic, false, "Plain answer.");
    assert_eq!(reply.content, "Plain answer.");
}

#[test]
fn a_generic_call_after_text_is_a_call_and_an_unfinished_one_stays_text() {
    // What `tool_choice: auto`'s lazy grammar produces once a reply opens a call mid-text.
    let text =
        "Sure. {\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}}";
    let reply = both(ToolFormat::Generic, false, text);
    assert_eq!(reply.content, "Sure.");
    assert_eq!(call(&reply, 0), ("get_weather", &json!({"city": "Paris"})));
    // Cut off before the object closes, or not a call: the text comes back as it was.
    for text in [
        "Sure. {\"tool_call\": {\"name\": \"get_wea",
        "Use {\"tool_call\": 3} to call.",
        "A brace { and {\"tool\": 1} stay.",
    ] {
        let reply = both(ToolFormat::Generic, false, text);
        assert_eq!(reply.content, text);
        assert!(reply.tool_calls.is_empty(), "{text}");
    }
}

#[test]
fn without_tools_only_reasoning_is_split() {
    let reply = parse_reply(
        ToolFormat::Hermes,
        false,
        false,
        "<think>hm</think>ok <tool_call>{}</tool_call>",
    );
    assert_eq!(reply.reasoning.as_deref(), Some("hm"));
    assert_eq!(reply.content, "ok <tool_call>{}</tool_call>");
}

#[test]
fn openai_and_anthropic_shapes() {
    let reply = both(
        ToolFormat::Hermes,
        false,
        "<think>r</think><tool_call>{\"name\": \"f\", \"arguments\": {\"k\": \"v\"}}</tool_call>",
    );
    let openai = reply.to_openai();
    assert_eq!(openai["content"], serde_json::Value::Null);
    assert_eq!(openai["reasoning_content"], "r");
    assert_eq!(
        openai["tool_calls"][0]["function"]["arguments"],
        "{\"k\":\"v\"}"
    );
    let anthropic = reply.to_anthropic();
    assert_eq!(anthropic[0], json!({"type": "thinking", "thinking": "r"}));
    assert_eq!(anthropic[1]["type"], "tool_use");
    assert_eq!(anthropic[1]["input"], json!({"k": "v"}));
}
