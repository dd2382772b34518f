//! `tojson` as HF transformers defines it for chat templates: Python's `json.dumps` with
//! `ensure_ascii=False` (non-ASCII kept), its default separators `", "` and `": "` (`","`
//! between items when indenting), optional `indent` and `sort_keys`, and no HTML escaping
//! (jinja2's own `tojson` escapes `<>&'`, HF replaces it).

use std::fmt::Write;

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

/// The filter: `value | tojson(indent=None, separators=None, sort_keys=False, ensure_ascii=False)`.
pub fn tojson_filter(value: &Value, kwargs: Kwargs) -> Result<String, Error> {
    let indent: Option<Value> = kwargs.get("indent")?;
    let separators: Option<Value> = kwargs.get("separators")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    let ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    kwargs.assert_all_used()?;
    let indent = match indent {
        None => None,
        Some(v) if v.is_none() => None,
        Some(v) => match v.as_i64() {
            Some(n) => Some(" ".repeat(n.clamp(0, 64) as usize)),
            None => Some(v.as_str().unwrap_or_default().to_string()),
        },
    };
    let (item, key) = match separators {
        Some(v) if !v.is_none() => {
            let pair: Vec<String> = v
                .try_iter()?
                .map(|s| s.as_str().unwrap_or_default().to_string())
                .collect();
            match pair.as_slice() {
                [item, key] => (item.clone(), key.clone()),
                _ => {
                    return Err(Error::new(
                        ErrorKind::InvalidOperation,
                        "separators must be a pair",
                    ))
                }
            }
        }
        // json.dumps: (', ', ': ') by default, (',', ': ') when indenting.
        _ if indent.is_some() => (",".into(), ": ".into()),
        _ => (", ".into(), ": ".into()),
    };
    let style = Style {
        indent,
        item,
        key,
        sort_keys: sort_keys.unwrap_or(false),
        ensure_ascii: ensure_ascii.unwrap_or(false),
    };
    let mut out = String::new();
    style.write(&mut out, value, 0)?;
    Ok(out)
}

/// Python's `json.dumps(value, ensure_ascii=False)`.
pub fn to_python_json(value: &Value) -> Result<String, Error> {
    let style = Style {
        indent: None,
        item: ", ".into(),
        key: ": ".into(),
        sort_keys: false,
        ensure_ascii: false,
    };
    let mut out = String::new();
    style.write(&mut out, value, 0)?;
    Ok(out)
}

struct Style {
    indent: Option<String>,
    item: String,
    key: String,
    sort_keys: bool,
    ensure_ascii: bool,
}

impl Style {
    fn write(&self, out: &mut String, value: &Value, depth: usize) -> Result<(), Error> {
        if depth > 128 {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "tojson: nesting too deep",
            ));
        }
        match value.kind() {
            ValueKind::Undefined | ValueKind::None => out.push_str("null"),
            ValueKind::Bool => out.push_str(if value.is_true() { "true" } else { "false" }),
            ValueKind::Number => write_number(out, value),
            ValueKind::String => self.write_str(out, value.as_str().unwrap_or_default()),
            // `map`, `select` and friends return generators, which json.dumps refuses.
            ValueKind::Iterable => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "Object of type generator is not JSON serializable",
                ))
            }
            ValueKind::Seq => {
                let items: Vec<Value> = value.try_iter()?.collect();
                self.write_items(out, '[', ']', items.len(), depth, |out, i| {
                    self.write(out, &items[i], depth + 1)
                })?;
            }
            ValueKind::Map => {
                let mut keys: Vec<Value> = value.try_iter()?.collect();
                if self.sort_keys {
                    keys.sort();
                }
                self.write_items(out, '{', '}', keys.len(), depth, |out, i| {
                    let key = &keys[i];
                    match key.as_str() {
                        Some(s) => self.write_str(out, s),
                        // json.dumps turns non-string keys into strings.
                        None => self.write_str(out, &key.to_string()),
                    }
                    out.push_str(&self.key);
                    self.write(out, &value.get_item(key)?, depth + 1)
                })?;
            }
            _ => self.write_str(out, &value.to_string()),
        }
        Ok(())
    }

    fn write_items(
        &self,
        out: &mut String,
        open: char,
        close: char,
        len: usize,
        depth: usize,
        mut each: impl FnMut(&mut String, usize) -> Result<(), Error>,
    ) -> Result<(), Error> {
        out.push(open);
        if len == 0 {
            out.push(close);
            return Ok(());
        }
        for i in 0..len {
            if i > 0 {
                out.push_str(&self.item);
            }
            if let Some(indent) = &self.indent {
                out.push('\n');
                out.push_str(&indent.repeat(depth + 1));
            }
            each(out, i)?;
        }
        if let Some(indent) = &self.indent {
            out.push('\n');
            out.push_str(&indent.repeat(depth));
        }
        out.push(close);
        Ok(())
    }

    fn write_str(&self, out: &mut String, s: &str) {
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                c if (c as u32) < 0x20 || (self.ensure_ascii && !c.is_ascii()) => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        let _ = write!(out, "\\u{unit:04x}");
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
}

/// Numbers as Python prints them: integers plainly, floats as `repr(float)`.
fn write_number(out: &mut String, value: &Value) {
    if let Ok(i) = i128::try_from(value.clone()) {
        if !value.to_string().contains(['.', 'e', 'E']) {
            let _ = write!(out, "{i}");
            return;
        }
    }
    let f = f64::try_from(value.clone()).unwrap_or(f64::NAN);
    out.push_str(&python_float_repr(f));
}

fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-4..1e16).contains(&abs) {
        // Python switches to exponent form outside [1e-4, 1e16): 1e+16, 1e-05.
        let s = format!("{f:e}");
        let (mantissa, exponent) = s.split_once('e').unwrap_or((&s, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let sign = if exponent < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exponent.abs());
    }
    let s = format!("{f}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(text: &str) -> String {
        to_python_json(&serde_json::from_str::<Value>(text).unwrap()).unwrap()
    }

    #[test]
    fn matches_python_json_dumps() {
        assert_eq!(
            json(r#"{"b": 1, "a": [1.5, true, null, "é\n\u0001"], "c": {}}"#),
            r#"{"b": 1, "a": [1.5, true, null, "é\n\u0001"], "c": {}}"#
        );
        assert_eq!(json("[1.0, 1e20, 0.00001, -3]"), "[1.0, 1e+20, 1e-05, -3]");
        assert_eq!(json(r#""<a & b>""#), r#""<a & b>""#);
    }
}
