//! Chat templates and sessions on the tiny model, through the CLI: a session records the
//! template its turns were rendered with, and one continued under another template is
//! rendered again with it (with a note naming both), never a mix of the two.

use crate::common::*;
use kvrun::llama::Model;
use kvrun::template::{builtin_named, ChatTemplate, Message};
use serde_json::Value;

fn turn(home: &Home, session: &str, prompt: &str, extra: &[&str]) -> (Value, String) {
    let model = tiny_model();
    let mut args = vec![
        "run",
        path_str(&model),
        "--session",
        session,
        "-p",
        prompt,
        "-n",
        "4",
        "--temp",
        "0",
        "--json",
    ];
    args.extend_from_slice(extra);
    let out = home.run(&args);
    assert!(out.status.success(), "kvrun {args:?}: {}", stderr(&out));
    (serde_json::from_slice(&out.stdout).unwrap(), stderr(&out))
}

fn hash_of(source: &str) -> String {
    ChatTemplate::new("t", source).unwrap().hash()
}

#[test]
fn a_session_continued_under_another_template_is_rendered_again_with_it() {
    let home = Home::new();
    let (first, _) = turn(&home, "t", "hello there", &[]);
    let manifest = manifest_json(&home, "t");
    assert_eq!(
        manifest["chat_template"]["name"], "tokenizer.chat_template",
        "{manifest}"
    );
    let chatml_hash = hash_of(kvrun::synth::CHATML_TEMPLATE);
    assert_eq!(manifest["chat_template"]["hash"], chatml_hash.as_str());
    assert!(first.get("cache_miss").is_none(), "{first}");

    let (second, note) = turn(&home, "t", "and again", &["--chat-template", "gemma3"]);
    let gemma_hash = hash_of(builtin_named("gemma3").unwrap());
    assert!(
        note.contains(&chatml_hash) && note.contains(&gemma_hash) && note.contains("'gemma3'"),
        "the note must name both templates: {note}"
    );
    assert_eq!(note.trim().lines().count(), 1, "{note}");
    // The log is gemma3's rendering of the whole conversation, then the reply: no ChatML
    // markup from the first turn is left in it.
    let manifest = manifest_json(&home, "t");
    assert_eq!(manifest["chat_template"]["name"], "gemma3", "{manifest}");
    assert_eq!(manifest["chat_template"]["hash"], gemma_hash.as_str());
    let messages: Vec<Message> = manifest["messages"].as_array().unwrap()[..3]
        .iter()
        .map(|m| Message::text(m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    let mut model = Model::load(&tiny_model(), 0).unwrap();
    model.set_chat_template("gemma3").unwrap();
    let rendered = model.render_chat(&messages, None, true).unwrap();
    assert!(rendered.text.contains("<start_of_turn>user\nhello there"));
    let mut expected = model.tokenize_rendered(&rendered, 0, true);
    assert_eq!(second["prompt_tokens"], expected.len(), "{second}");
    expected.extend(tokens(&second).iter().map(|&t| t as i32));
    let log: Vec<i32> = manifest["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap() as i32)
        .collect();
    assert_eq!(log, expected);
    // The miss is where the two renderings part (after the BOS they share).
    let miss = &second["cache_miss"];
    assert!(miss["position"].as_u64().unwrap() >= 1, "{second}");
    assert!(
        miss["before"].as_str().unwrap().contains("<|im_start|>"),
        "{second}"
    );
    assert!(
        miss["after"].as_str().unwrap().contains("<start_of_turn>"),
        "{second}"
    );
    assert_eq!(miss["reason"], "template_changed", "{second}");
    assert_eq!(&manifest["cache_miss"], miss, "{manifest}");

    // Continued under the template it now records: no note, the turn just extends the log.
    let (third, note) = turn(&home, "t", "once more", &["--chat-template", "gemma3"]);
    assert!(!note.contains("rendered"), "{note}");
    assert!(third.get("cache_miss").is_none(), "{third}");
    assert_eq!(
        third["session_tokens"].as_u64().unwrap(),
        (log.len() + tokens(&third).len()) as u64 + third["prompt_tokens"].as_u64().unwrap(),
        "{third}"
    );

    let shown = home.run(&["session", "show", "t"]);
    assert!(shown.status.success(), "{}", stderr(&shown));
    let text = stdout(&shown);
    assert!(
        text.contains(&format!("template  'gemma3' ({gemma_hash})")),
        "{text}"
    );
    // The third turn missed nothing: the last miss shown is still the template change.
    assert!(
        text.contains(&format!(
            "miss      at token {}: the session was rendered again with another chat template",
            miss["position"]
        )),
        "{text}"
    );
}

/// The motivating case: a template that inserts a default system prompt when the
/// conversation has none (SmolLM2's, from the fidelity corpus). The model is fed exactly
/// the tokens of Python jinja2's rendering of it, system turn included.
#[test]
fn a_default_system_prompt_reaches_the_model_as_jinja2_renders_it() {
    let home = Home::new();
    let template_file = "tests/templates/smollm2.jinja";
    let source = std::fs::read_to_string(project_root().join(template_file)).unwrap();
    let model = home.path().join("tiny-smollm2.gguf");
    let spec = kvrun::synth::TinyLlamaSpec {
        chat_template: source,
        ..Default::default()
    };
    kvrun::synth::write_tiny_llama(&model, &spec).unwrap();
    let question = "What is the capital of France? Answer in one word.";

    // jinja2's rendering, through the fidelity test's reference renderer.
    let corpus = home.path().join("corpus.json");
    let conversations = home.path().join("conversations.json");
    let entry =
        serde_json::json!([{"file": template_file, "bos_token": "<s>", "eos_token": "</s>"}]);
    std::fs::write(&corpus, entry.to_string()).unwrap();
    let conversation = serde_json::json!([{"name": "capital", "messages": [{"role": "user", "content": question}]}]);
    std::fs::write(&conversations, conversation.to_string()).unwrap();
    let rendered = jinja2_renderings(&corpus, &conversations);
    let reference = rendered[format!("{template_file}|capital|true")]["ok"]
        .as_str()
        .unwrap_or_else(|| panic!("{rendered}"))
        .to_string();
    assert!(
        reference.contains("<|im_start|>system\nYou are a helpful AI assistant named SmolLM"),
        "{reference}"
    );

    // The chat prompt kvrun builds, and jinja2's text fed as it is (--raw): one token log.
    let m = path_str(&model);
    let chat = run_json(
        &home,
        &["run", m, "--session", "chat", "-p", question, "-n", "0"],
    );
    let raw = run_json(
        &home,
        &[
            "run",
            m,
            "--session",
            "raw",
            "--raw",
            "-p",
            &reference,
            "-n",
            "0",
        ],
    );
    let chat_log = &manifest_json(&home, "chat")["tokens"];
    assert_eq!(chat_log, &manifest_json(&home, "raw")["tokens"]);
    assert_eq!(chat["prompt_tokens"], raw["prompt_tokens"]);
    assert_eq!(chat["prompt_tokens"], chat_log.as_array().unwrap().len());
}
