//! Special-token injection guard. A user who types `<start_of_turn>` (or a file pasted into
//! an agent's context that holds `<|im_end|>`) must get those characters as text, never the
//! control token: only the template's own markup may become control tokens.
//!
//! The template is rendered twice: as is, and with the first character of every control-token
//! text inside message content (and tool definitions) replaced by `\x01` bytes of the same
//! length. The two renderings line up byte for byte; where they differ is exactly the
//! control-token text that came from content, whatever the template did around it (trim,
//! split, concatenate). Those ranges are tokenised as plain text.

use std::collections::BTreeSet;
use std::ops::Range;

use minijinja::value::ValueKind;
use minijinja::Value;

use super::{ChatTemplate, Message, RenderInput, TemplateError};

/// A rendered prompt and the byte ranges of it that must be tokenised as plain text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rendered {
    pub text: String,
    /// Sorted, non-overlapping.
    pub plain: Vec<Range<usize>>,
}

/// The tokenizer's knowledge the guard needs: which control-token texts occur in a text.
pub trait SpecialFinder {
    fn control_texts(&self, text: &str) -> Vec<String>;
}

const MARK: u8 = 0x01;

impl ChatTemplate {
    /// Renders, and marks the control-token text that came from content as plain.
    pub fn render_guarded(
        &self,
        input: &RenderInput<'_>,
        finder: &dyn SpecialFinder,
    ) -> Result<Rendered, TemplateError> {
        for (i, m) in input.messages.iter().enumerate() {
            m.check(i)?;
        }
        let messages = Value::from(
            input
                .messages
                .iter()
                .map(Message::to_template_value)
                .collect::<Vec<_>>(),
        );
        let text = self.render_values(input, messages.clone())?;
        let mut specials = BTreeSet::new();
        let mut collect = |s: &str| {
            specials.extend(finder.control_texts(s));
            s.to_string()
        };
        map_strings(&messages, &mut collect);
        if let Some(tools) = input.tools {
            map_strings(tools, &mut collect);
        }
        if specials.is_empty() {
            return Ok(Rendered {
                text,
                plain: Vec::new(),
            });
        }
        let mut neutralise = |s: &str| neutralised(s, &specials);
        let shadow_messages = map_strings(&messages, &mut neutralise);
        let shadow_tools = input.tools.map(|t| map_strings(t, &mut neutralise));
        let shadow_input = RenderInput {
            tools: shadow_tools.as_ref(),
            ..input.clone()
        };
        let shadow = self.render_values(&shadow_input, shadow_messages)?;
        let plain = align(&text, &shadow, &specials).ok_or_else(|| TemplateError::Injection {
            name: self.name.clone(),
            text: specials.iter().next().cloned().unwrap_or_default(),
        })?;
        Ok(Rendered { text, plain })
    }
}

/// `s` with the first character of each special text replaced by as many MARK bytes.
fn neutralised(s: &str, specials: &BTreeSet<String>) -> String {
    let mut out = s.to_string();
    for special in specials {
        let Some(first) = special.chars().next() else {
            continue;
        };
        let marks = String::from_utf8(vec![MARK; first.len_utf8()]).expect("ASCII");
        let replacement = format!("{marks}{}", &special[first.len_utf8()..]);
        out = out.replace(special.as_str(), &replacement);
    }
    out
}

/// The ranges where `shadow` has MARKs in place of a special text of `text`; None when the
/// renderings differ in any other way (the template branched on the special text).
fn align(text: &str, shadow: &str, specials: &BTreeSet<String>) -> Option<Vec<Range<usize>>> {
    let (t, s) = (text.as_bytes(), shadow.as_bytes());
    if t.len() != s.len() {
        return None;
    }
    let mut plain = Vec::new();
    let mut i = 0;
    while i < t.len() {
        if t[i] == s[i] {
            i += 1;
            continue;
        }
        if s[i] != MARK {
            return None;
        }
        let special = specials
            .iter()
            .filter(|sp| text[i..].starts_with(sp.as_str()))
            .max_by_key(|sp| sp.len())?;
        let first = special.chars().next()?.len_utf8();
        if t[i + first..i + special.len()] != s[i + first..i + special.len()]
            || s[i..i + first].iter().any(|&b| b != MARK)
        {
            return None;
        }
        plain.push(i..i + special.len());
        i += special.len();
    }
    Some(plain)
}

/// A copy of `value` with every string (keys excepted) passed through `f`.
fn map_strings(value: &Value, f: &mut dyn FnMut(&str) -> String) -> Value {
    match value.kind() {
        ValueKind::String => Value::from(f(value.as_str().unwrap_or_default())),
        ValueKind::Seq => Value::from(
            value
                .try_iter()
                .map(|items| items.map(|v| map_strings(&v, f)).collect::<Vec<_>>())
                .unwrap_or_default(),
        ),
        ValueKind::Map => {
            let keys: Vec<Value> = value.try_iter().map(|k| k.collect()).unwrap_or_default();
            keys.into_iter()
                .map(|k| {
                    let v = value.get_item(&k).unwrap_or_default();
                    (k, map_strings(&v, f))
                })
                .collect()
        }
        _ => value.clone(),
    }
}
