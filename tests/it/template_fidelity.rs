//! Template fidelity: every template of the corpus (tests/templates/corpus.json, each with
//! its source) rendered over every conversation (tests/templates/conversations.json) by
//! kvrun and by Python's jinja2 under transformers' calling convention
//! (tests/templates/render.py) must be byte-identical, and fail in the same cases.
//!
//! The reference needs jinja2: `.ci/setup --tests` installs it into `.venv`; `KVRUN_TEST_PYTHON`
//! names another interpreter. Without one the test fails: it never skips.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::{jinja2_renderings, project_root};

use kvrun::template::{ChatTemplate, Message, RenderInput};
use serde::Deserialize;

#[derive(Deserialize)]
struct CorpusEntry {
    file: String,
    family: String,
    bos_token: String,
    eos_token: String,
    /// A `tool_use` variant: kvrun selects it only when tools are given.
    #[serde(default)]
    tools_only: bool,
}

#[derive(Deserialize)]
struct Conversation {
    name: String,
    messages: Vec<Message>,
    #[serde(default)]
    tools: Option<minijinja::Value>,
    #[serde(default)]
    extra: BTreeMap<String, minijinja::Value>,
}

#[derive(Deserialize)]
struct Reference {
    ok: Option<String>,
    error: Option<String>,
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn reference(corpus: &Path, conversations: &Path) -> BTreeMap<String, Reference> {
    serde_json::from_value(jinja2_renderings(corpus, conversations)).unwrap()
}

#[test]
fn corpus_renders_byte_identical_to_jinja2() {
    let corpus_path = project_root().join("tests/templates/corpus.json");
    let conversations_path = project_root().join("tests/templates/conversations.json");
    let corpus: Vec<CorpusEntry> = serde_json::from_str(&read(&corpus_path)).unwrap();
    // Parsed from the text so that JSON key order (tool schemas, arguments) is kept.
    let conversations: Vec<Conversation> =
        serde_json::from_str(&read(&conversations_path)).unwrap();
    let expected = reference(&corpus_path, &conversations_path);

    let mut failures = Vec::new();
    let mut rendered = 0;
    for entry in &corpus {
        let template =
            ChatTemplate::new(&entry.file, &read(&project_root().join(&entry.file))).unwrap();
        let mut family_ok = 0;
        for conversation in &conversations {
            if entry.tools_only && conversation.tools.is_none() {
                continue;
            }
            for agp in [true, false] {
                let key = format!("{}|{}|{agp}", entry.file, conversation.name);
                let input = RenderInput {
                    messages: &conversation.messages,
                    tools: conversation.tools.as_ref(),
                    add_generation_prompt: agp,
                    bos_token: &entry.bos_token,
                    eos_token: &entry.eos_token,
                    extra: conversation.extra.clone(),
                };
                let ours = template.render(&input);
                let theirs = &expected[&key];
                match (&ours, &theirs.ok) {
                    (Ok(a), Some(b)) if a == b => family_ok += 1,
                    (Ok(a), Some(b)) => {
                        failures.push(format!("{key}: kvrun {a:?}\n  jinja2 {b:?}"))
                    }
                    (Err(_), None) => {}
                    (Ok(a), None) => failures.push(format!(
                        "{key}: kvrun rendered {a:?}, jinja2 failed: {:?}",
                        theirs.error
                    )),
                    (Err(e), Some(_)) => failures.push(format!("{key}: kvrun failed: {e}")),
                }
            }
        }
        assert!(
            family_ok >= 6,
            "{} ({}): only {family_ok} renderings succeeded; the corpus must exercise it",
            entry.file,
            entry.family
        );
        rendered += family_ok;
    }
    assert!(
        failures.is_empty(),
        "{} of the renderings differ from jinja2:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(rendered >= 150, "{rendered}");
}
