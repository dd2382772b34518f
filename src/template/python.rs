//! Where jinja2 and minijinja differ in ways HF templates can see, kvrun follows jinja2:
//! - `str()` of a list or dict is Python's repr (`['a', {'k': None}]`), in output, `string`
//!   and `trim`;
//! - `map`, `select`, `reject`, `selectattr` and `rejectattr` return generators, which
//!   iterate and `| list` as usual but which `tojson` refuses, as `json.dumps` does.

use std::borrow::Cow;

use minijinja::value::{Rest, ValueKind};
use minijinja::{filters, Environment, Error, Output, State, Value};

pub fn install(env: &mut Environment<'static>) {
    env.set_formatter(format_output);
    env.add_filter("string", |v: &Value| python_str(v));
    env.add_filter("trim", trim);
    env.add_filter("map", |state: &State, v: Value, args: Rest<Value>| {
        filters::map(state, v, args).map(generator)
    });
    env.add_filter(
        "select",
        |state: &State, v: Value, test: Option<Cow<'_, str>>, args: Rest<Value>| {
            filters::select(state, v, test, args).map(generator)
        },
    );
    env.add_filter(
        "reject",
        |state: &State, v: Value, test: Option<Cow<'_, str>>, args: Rest<Value>| {
            filters::reject(state, v, test, args).map(generator)
        },
    );
    env.add_filter(
        "selectattr",
        |state: &State,
         v: Value,
         attr: Cow<'_, str>,
         test: Option<Cow<'_, str>>,
         args: Rest<Value>| {
            filters::selectattr(state, v, attr, test, args).map(generator)
        },
    );
    env.add_filter(
        "rejectattr",
        |state: &State,
         v: Value,
         attr: Cow<'_, str>,
         test: Option<Cow<'_, str>>,
         args: Rest<Value>| {
            filters::rejectattr(state, v, attr, test, args).map(generator)
        },
    );
}

/// A lazily iterated sequence: minijinja's "iterable" kind, which `tojson` tells apart.
fn generator(items: Vec<Value>) -> Value {
    Value::make_iterable(move || items.clone().into_iter())
}

fn format_output(out: &mut Output, state: &State, value: &Value) -> Result<(), Error> {
    match value.kind() {
        ValueKind::Seq | ValueKind::Map => out.write_str(&python_str(value)).map_err(Error::from),
        _ => minijinja::escape_formatter(out, state, value),
    }
}

/// jinja2's `trim`: `str(value).strip(chars)`.
fn trim(value: &Value, chars: Option<Cow<'_, str>>) -> String {
    let text = python_str(value);
    match chars {
        Some(chars) => text.trim_matches(|c| chars.contains(c)).to_string(),
        None => text.trim().to_string(),
    }
}

/// Python's `str(value)`.
pub fn python_str(value: &Value) -> String {
    match value.kind() {
        ValueKind::String => value.as_str().unwrap_or_default().to_string(),
        ValueKind::Undefined => String::new(),
        _ => python_repr(value),
    }
}

/// Python's `repr(value)` for the JSON-like values templates see.
fn python_repr(value: &Value) -> String {
    match value.kind() {
        ValueKind::String => repr_str(value.as_str().unwrap_or_default()),
        ValueKind::Seq | ValueKind::Iterable => {
            let items: Vec<String> = value
                .try_iter()
                .map(|it| it.map(|v| python_repr(&v)).collect())
                .unwrap_or_default();
            format!("[{}]", items.join(", "))
        }
        ValueKind::Map => {
            let items: Vec<String> = value
                .try_iter()
                .map(|keys| {
                    keys.map(|k| {
                        let v = value.get_item(&k).unwrap_or_default();
                        format!("{}: {}", python_repr(&k), python_repr(&v))
                    })
                    .collect()
                })
                .unwrap_or_default();
            format!("{{{}}}", items.join(", "))
        }
        ValueKind::Undefined | ValueKind::None => "None".into(),
        _ => value.to_string(),
    }
}

/// `repr(str)`: single quotes unless the text has one and no double quote.
fn repr_str(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_matches_python() {
        let v: Value =
            serde_json::from_str(r#"[{"type": "text", "text": "it's"}, null, true, 1.5, "a\nb"]"#)
                .unwrap();
        assert_eq!(
            python_str(&v),
            r#"[{'type': 'text', 'text': "it's"}, None, True, 1.5, 'a\nb']"#
        );
    }
}
