//! `kvrun run --tools` and `--json-schema`: constrained generation on the tiny random
//! model must still produce calls and JSON valid under the schemas; bad input is refused.

use serde_json::Value;

const TOOLS: &str = r#"[
 {"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Rome"]},
   "days": {"type": "integer"}, "metric": {"type": "boolean"}}, "required": ["city"]}}},
 {"type": "function", "function": {"name": "add",
  "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}}}}
]"#;

fn run_json(home: &crate::common::Home, extra: &[&str]) -> Value {
    let model = crate::common::tiny_model();
    let mut args = vec!["run", model.to_str().unwrap(), "-p", "weather?", "--json"];
    args.extend_from_slice(extra);
    let out = home.run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn write(home: &crate::common::Home, name: &str, text: &str) -> String {
    let path = home.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

/// The arguments of a call, checked against the TOOLS schemas.
fn check_call(call: &Value) -> (String, Value) {
    assert_eq!(call["type"], "function");
    assert_eq!(call["id"].as_str().unwrap().len(), 9);
    let name = call["function"]["name"].as_str().unwrap().to_string();
    let args: Value =
        serde_json::from_str(call["function"]["arguments"].as_str().unwrap()).unwrap();
    match name.as_str() {
        "get_weather" => {
            assert!(
                ["Paris", "Rome"].contains(&args["city"].as_str().unwrap()),
                "{args}"
            );
            assert!(
                args["days"].is_i64() && args["metric"].is_boolean(),
                "{args}"
            );
        }
        "add" => assert!(args["a"].is_number() && args["b"].is_number(), "{args}"),
        other => panic!("unknown tool {other}"),
    }
    (name, args)
}

#[test]
fn required_and_named_tool_choice_force_schema_valid_calls() {
    let home = crate::common::Home::new();
    let tools = write(&home, "tools.json", TOOLS);
    for seed in ["1", "2"] {
        let report = run_json(
            &home,
            &[
                "--tools",
                &tools,
                "--tool-choice",
                "required",
                "--temp",
                "1",
                "--seed",
                seed,
            ],
        );
        assert_eq!(report["stop_reason"], "end_of_generation", "{report}");
        assert_eq!(
            report["tool_calls"].as_array().unwrap().len(),
            1,
            "{report}"
        );
        check_call(&report["tool_calls"][0]);
    }
    let report = run_json(
        &home,
        &[
            "--tools",
            &tools,
            "--tool-choice",
            "get_weather",
            "--temp",
            "0",
        ],
    );
    let (name, _) = check_call(&report["tool_calls"][0]);
    assert_eq!(name, "get_weather");
}

#[test]
fn json_schema_forces_valid_json() {
    let home = crate::common::Home::new();
    let schema = write(
        &home,
        "schema.json",
        r#"{"type": "object", "properties": {"answer": {"enum": ["yes", "no"]},
            "score": {"type": "number"}, "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3}}}"#,
    );
    let report = run_json(
        &home,
        &["--json-schema", &schema, "--temp", "0", "-n", "300"],
    );
    assert_eq!(report["stop_reason"], "end_of_generation", "{report}");
    let value: Value = serde_json::from_str(report["text"].as_str().unwrap()).unwrap();
    assert!(
        ["yes", "no"].contains(&value["answer"].as_str().unwrap()),
        "{value}"
    );
    assert!(value["score"].is_number(), "{value}");
    assert!(value["tags"].as_array().unwrap().len() <= 3, "{value}");
    for tag in value["tags"].as_array().unwrap() {
        assert!(tag.as_str().unwrap().chars().count() <= 4, "{value}");
    }
}

#[test]
fn bad_tool_input_is_a_usage_error() {
    let home = crate::common::Home::new();
    let model = crate::common::tiny_model();
    let model = model.to_str().unwrap();
    let tools = write(&home, "tools.json", TOOLS);
    let cases: [(&[&str], &str); 4] = [
        (
            &["--tools", &tools, "--tool-choice", "nope"],
            "names no tool",
        ),
        (
            &["--tools", &write(&home, "bad.json", "{\"a\": 1}")],
            "not a JSON list",
        ),
        (
            &[
                "--tools",
                &write(
                    &home,
                    "ref.json",
                    r#"[{"type": "function", "function": {"name": "f", "parameters": {"$ref": "defs.json"}}}]"#,
                ),
            ],
            "$ref",
        ),
        (
            &[
                "--tools",
                &write(
                    &home,
                    "noname.json",
                    r#"[{"type": "function", "function": {}}]"#,
                ),
            ],
            "name",
        ),
    ];
    for (extra, needle) in cases {
        let mut args = vec!["run", model, "-p", "hi", "-n", "1"];
        args.extend_from_slice(extra);
        let out = home.run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
}

/// A template that rewrites history (it drops earlier replies, as some drop reasoning):
/// the second turn reports where its rendering stopped extending the first.
const FORGETFUL: &str = "{% for m in messages %}{% if m.role == 'assistant' and not loop.last %}<|im_start|>assistant\n(dropped)<|im_end|>\n{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

#[test]
fn a_template_that_rewrites_history_is_reported_as_a_cache_miss() {
    let home = crate::common::Home::new();
    let template = write(&home, "forgetful.jinja", FORGETFUL);
    let model = crate::common::tiny_model();
    let turn = |template: Option<&str>, prompt: &str, session: &str| {
        let mut args = vec![
            "run",
            model.to_str().unwrap(),
            "--session",
            session,
            "-p",
            prompt,
        ];
        args.extend(["--json", "-n", "4", "--temp", "0"]);
        if let Some(t) = template {
            args.extend(["--chat-template", t]);
        }
        let out = home.run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let first = turn(Some(&template), "hello there", "f");
    assert!(first.get("cache_miss").is_none(), "{first}");
    let second = turn(Some(&template), "and again", "f");
    let miss = &second["cache_miss"];
    assert!(miss["position"].as_u64().unwrap() > 0, "{second}");
    assert!(
        miss["after"].as_str().unwrap().contains("(dropped)"),
        "{second}"
    );
    assert!(
        !miss["before"].as_str().unwrap().contains("(dropped)"),
        "{second}"
    );
    assert_eq!(miss["reason"], "history_rewritten", "{second}");
    // `session show` reports the session's last miss, in text and in --json.
    let shown = home.run(&["session", "show", "f"]);
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        text.contains(&format!(
            "miss      at token {}: the chat template renders earlier turns differently",
            miss["position"]
        )),
        "{text}"
    );
    let shown = home.run(&["session", "show", "f", "--json"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(&shown["cache_miss"], miss, "{shown}");
    // The tiny model's own (ChatML) template extends each turn: no miss.
    turn(None, "hello there", "s");
    let stable = turn(None, "and again", "s");
    assert!(stable.get("cache_miss").is_none(), "{stable}");
    let shown = home.run(&["session", "show", "s", "--json"]);
    let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert!(shown.get("cache_miss").is_none(), "{shown}");
}

/// A Hermes-style template that renders tools, for a tiny model whose vocabulary holds
/// `<tool_call>` and `</tool_call>` as tokens (as real Hermes and Qwen models do).
const HERMES_STYLE: &str = "{% if tools %}<|im_start|>system\nTools: {{ tools | tojson }}\nCall one as <tool_call>{\"name\": NAME, \"arguments\": ARGS}</tool_call><|im_end|>\n{% endif %}{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

/// `tool_choice: auto` leaves the reply free until it opens a call, then llama.cpp's lazy
/// grammar holds: every reply of a sampled spread that opens a call holds one complete,
/// schema-valid call (the random model opens them by chance, so the spread must hit some).
#[test]
fn auto_tool_choice_constrains_a_call_once_the_reply_opens_one() {
    let home = crate::common::Home::new();
    let model = home.path().join("tiny-hermes.gguf");
    let spec = kvrun::synth::TinyLlamaSpec {
        chat_template: HERMES_STYLE.into(),
        extra_tokens: vec!["<tool_call>".into(), "</tool_call>".into()],
        ..Default::default()
    };
    kvrun::synth::write_tiny_llama(&model, &spec).unwrap();
    let tools = write(&home, "tools.json", TOOLS);
    let (mut completed, mut free) = (0, 0);
    for seed in 1..=SEEDS {
        let seed = seed.to_string();
        let args = [
            "run",
            model.to_str().unwrap(),
            "-p",
            "weather?",
            "--json",
            "--tools",
            &tools,
            // Near-uniform sampling over the whole vocabulary, so that the call-opening
            // token turns up by chance.
            "--temp",
            "3",
            "--top-k",
            "0",
            "--top-p",
            "1",
            "--min-p",
            "0",
            "--seed",
            &seed,
            "-n",
            "200",
        ];
        let out = home.run(&args);
        assert!(out.status.success(), "{}", crate::common::stderr(&out));
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        let text = report["text"].as_str().unwrap();
        let Some((_, call)) = text.split_once("<tool_call>") else {
            free += 1;
            continue;
        };
        if report["stop_reason"] == "max_tokens" {
            // Opened too late to finish: the grammar still held when -n ran out.
            assert!(!call.contains("</tool_call>"), "{report}");
            continue;
        }
        completed += 1;
        assert_eq!(report["stop_reason"], "end_of_generation", "{report}");
        assert!(call.trim_end().ends_with("</tool_call>"), "{report}");
        let calls = report["tool_calls"].as_array().unwrap();
        assert_eq!(calls.len(), 1, "{report}");
        check_call(&calls[0]);
    }
    assert!(
        completed > 0,
        "no reply of {SEEDS} made a call: raise SEEDS"
    );
    assert!(
        free > 0,
        "every reply opened a call: the grammar is not lazy"
    );
}

/// Sampled replies in the auto test.
const SEEDS: u32 = 4;

/// The tools real agents send (recorded in tests/agents/), as OpenAI function definitions:
/// Anthropic's `input_schema`, the Responses API's flat functions and Chat Completions'
/// nested ones alike.
fn recorded_agent_tools(fixture: &str) -> Vec<Value> {
    let path = crate::common::project_root()
        .join("tests/agents")
        .join(fixture);
    let recorded: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    recorded["body"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| {
            let function = tool.get("function").unwrap_or(tool);
            let parameters = function
                .get("parameters")
                .or_else(|| tool.get("input_schema"))?;
            Some(serde_json::json!({"name": function["name"], "parameters": parameters}))
        })
        .collect()
}

/// Claude Code's twelve tool schemas (about 48 KB, with `maxItems`, nested arrays and
/// enums) once expanded past llama.cpp's grammar limits, and every request that offered
/// them was refused with a 400. Each agent's tools, in every call format, forced or lazy,
/// must make a grammar llguidance (what kvrun constrains calls with) and llama.cpp's GBNF
/// sampler (`bench grammar` compares them) accept.
#[test]
fn real_agents_tool_schemas_make_grammars_llama_cpp_accepts() {
    use kvrun::llama::{Grammar, Model, Sampler};
    use kvrun::settings::SamplingSettings;
    use kvrun::tools::{tool_call_grammar, tool_call_lark, ToolFormat};
    let model = Model::load(&crate::common::tiny_model(), 0).unwrap();
    let formats = [
        ToolFormat::Hermes,
        ToolFormat::Llama3,
        ToolFormat::Mistral,
        ToolFormat::Generic,
    ];
    for fixture in [
        "claude-code-messages.json",
        "codex-responses.json",
        "opencode-main.json",
    ] {
        let tools = recorded_agent_tools(fixture);
        assert!(tools.len() >= 7, "{fixture}: {} tools", tools.len());
        let refs: Vec<&Value> = tools.iter().collect();
        for format in formats {
            let gbnf = tool_call_grammar(format, &refs)
                .unwrap_or_else(|e| panic!("{fixture} {format:?}: {e}"));
            let lark = tool_call_lark(format, &refs)
                .unwrap_or_else(|e| panic!("{fixture} {format:?}: {e}"));
            for grammar in [Grammar::Gbnf(gbnf), Grammar::Lark(lark)] {
                let mut sampler = Sampler::new(&model, &SamplingSettings::greedy(), &[]);
                if let Err(e) = sampler.constrain(&model, &grammar) {
                    panic!("{fixture} {format:?}: the forced grammar was refused: {e}");
                }
                if let Some(opening) = format.call_opening() {
                    let mut lazy = Sampler::new(&model, &SamplingSettings::greedy(), &[]);
                    if let Err(e) = lazy.constrain_after(&model, &grammar, opening) {
                        panic!("{fixture} {format:?}: the lazy grammar was refused: {e}");
                    }
                }
            }
        }
    }
}
