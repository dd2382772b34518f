//! Request fields every API shares: sampling, stop strings, and the loaded model.

use std::sync::Arc;

use serde::Deserialize;

use super::errors::ApiError;
use super::state::AppState;
use crate::llama::Model;
use crate::service::fleet::KeepAlive;
use crate::service::{Lease, ServiceInfo};
use crate::settings::{
    Range, SamplingSettings, FREQUENCY_PENALTY, MIN_P, PRESENCE_PENALTY, REPEAT_PENALTY, TEMP,
    TOP_K, TOP_P,
};

/// The most stop strings a request may give (OpenAI allows 4; Anthropic more).
const MAX_STOP: usize = 16;

/// Which model a request asks for, and how long it should stay loaded after (Ollama's
/// `keep_alive`), under the names every API uses.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct ModelFields {
    /// A name; absent picks the server's default model. Read as any JSON so that another
    /// type (`null` included) is refused naming the field (serde's error would not).
    #[serde(default, deserialize_with = "given")]
    pub model: Option<serde_json::Value>,
    #[serde(default)]
    pub keep_alive: Option<serde_json::Value>,
}

/// Any JSON value, `null` included (an `Option`'s own reading takes `null` for absent).
fn given<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

impl ModelFields {
    /// The model the request names, loaded (it loads first when it is not): 404 for a
    /// name no model answers, 503 while the server's first model loads.
    pub async fn lease(&self, state: &AppState) -> Result<Lease, ApiError> {
        let keep_alive = KeepAlive::from_json(self.keep_alive.as_ref())
            .map_err(|e| ApiError::bad_request(e).param("keep_alive"))?;
        let model = match &self.model {
            None => None,
            Some(serde_json::Value::String(name)) => Some(name.as_str()),
            Some(other) => {
                return Err(
                    ApiError::bad_request(format!("model must be a string, not {other}"))
                        .param("model"),
                )
            }
        };
        Ok(state.models.acquire(model, keep_alive).await?)
    }
}

/// A loaded model's handle, model and facts.
pub fn parts(lease: &Lease) -> (Arc<Model>, ServiceInfo) {
    (lease.model().clone(), lease.info().clone())
}

/// Sampling fields under the names the APIs use. Absent ones keep kvrun's defaults.
#[derive(Debug, Default, Clone, Deserialize)]
pub struct SamplingFields {
    pub temperature: Option<f32>,
    pub top_p: Option<f32>,
    pub top_k: Option<i32>,
    pub min_p: Option<f32>,
    pub seed: Option<i64>,
    pub presence_penalty: Option<f32>,
    pub frequency_penalty: Option<f32>,
    /// llama.cpp's and Ollama's `repeat_penalty` (1 is off).
    pub repeat_penalty: Option<f32>,
}

impl SamplingFields {
    /// The sampling settings: `base` (the server's) with each field given here, checked
    /// against its range.
    pub fn settings(&self, base: &SamplingSettings) -> Result<SamplingSettings, ApiError> {
        let mut s = base.clone();
        let check = |range: &Range, field: &str, value: f64| {
            range
                .check(value)
                .map_err(|_| {
                    ApiError::bad_request(format!(
                        "{field} {value} is out of range: it must be between {} and {}",
                        range.min, range.max
                    ))
                    .param(field)
                })
                .map(|()| value)
        };
        if let Some(t) = self.temperature {
            s.temp = check(&TEMP, "temperature", t.into())? as f32;
        }
        if let Some(p) = self.top_p {
            s.top_p = check(&TOP_P, "top_p", p.into())? as f32;
        }
        if let Some(k) = self.top_k {
            // Anthropic and vLLM send -1 for "off"; kvrun's off is 0. Below -1 is an error.
            let k = if k == -1 { 0 } else { k };
            s.top_k = check(&TOP_K, "top_k", f64::from(k))? as i32;
        }
        if let Some(p) = self.min_p {
            s.min_p = check(&MIN_P, "min_p", p.into())? as f32;
        }
        if let Some(seed) = self.seed {
            // Any integer is a seed; only its low 32 bits are used.
            s.seed = seed as u32;
        }
        if let Some(p) = self.presence_penalty {
            s.presence_penalty = check(&PRESENCE_PENALTY, "presence_penalty", p.into())? as f32;
        }
        if let Some(p) = self.frequency_penalty {
            s.frequency_penalty = check(&FREQUENCY_PENALTY, "frequency_penalty", p.into())? as f32;
        }
        if let Some(p) = self.repeat_penalty {
            s.repeat_penalty = check(&REPEAT_PENALTY, "repeat_penalty", p.into())? as f32;
        }
        Ok(s)
    }
}

/// The grammar a JSON output format asks for: `json_object` (any object) or
/// `json_schema` (its `schema`); `None` for `text`. `field` names the format in errors.
pub fn json_format_grammar(
    format: &serde_json::Value,
    schema: Option<&serde_json::Value>,
    field: &str,
) -> Result<Option<String>, ApiError> {
    let refused = |e: String| ApiError::bad_request(e).param(field);
    if !format.is_object() {
        return Err(refused(format!("{field} must be an object")));
    }
    let schema = match format.get("type").and_then(serde_json::Value::as_str) {
        None | Some("text") => return Ok(None),
        Some("json_object") => serde_json::json!({"type": "object"}),
        Some("json_schema") => schema
            .cloned()
            .ok_or_else(|| refused("json_schema needs a \"schema\"".into()))?,
        Some(other) => return Err(refused(format!("unknown {field} type '{other}'"))),
    };
    schema_grammar(&schema, field).map(Some)
}

/// The grammar of replies valid against a JSON schema; a schema that is not one is a 400
/// naming `field`.
pub fn schema_grammar(schema: &serde_json::Value, field: &str) -> Result<String, ApiError> {
    let refused = |e: String| ApiError::bad_request(e).param(field);
    if let Some(name) = undeclared_required(schema) {
        return Err(refused(format!(
            "{field}: the schema's required property {name} is not among its properties, so \
             no reply could satisfy it"
        )));
    }
    crate::tools::schema_grammar(schema).map_err(|e| refused(e.to_string()))
}

/// A name an object schema, at any depth, requires without declaring any properties (the
/// grammar checks one declared among others; with none declared it allows any object, so
/// the reply `{}` would break the schema).
fn undeclared_required(schema: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match schema {
        Value::Object(map) => {
            let required = map.get("required").and_then(Value::as_array);
            if let Some(name) = required.and_then(|r| r.first()) {
                if !map.contains_key("properties") {
                    return Some(name.to_string());
                }
            }
            map.values().find_map(undeclared_required)
        }
        Value::Array(items) => items.iter().find_map(undeclared_required),
        _ => None,
    }
}

/// `stop`: a string or a list of strings.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum StopField {
    One(String),
    Many(Vec<String>),
}

/// The stop strings; too many, or an empty one (it would stop before the first token), is
/// a 400.
pub fn stop_strings(stop: Option<StopField>, field: &str) -> Result<Vec<String>, ApiError> {
    let all = match stop {
        None => Vec::new(),
        Some(StopField::One(s)) => vec![s],
        Some(StopField::Many(v)) => v,
    };
    if all.len() > MAX_STOP {
        return Err(ApiError::bad_request(format!(
            "{field} has {} entries; at most {MAX_STOP} are allowed",
            all.len()
        ))
        .param(field));
    }
    if all.iter().any(String::is_empty) {
        return Err(
            ApiError::bad_request(format!("{field} must not hold an empty string")).param(field),
        );
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sampling_fields_are_checked() {
        let ok = SamplingFields {
            temperature: Some(0.0),
            top_k: Some(-1),
            seed: Some(-5),
            ..Default::default()
        };
        let base = SamplingSettings::greedy();
        let s = ok.settings(&base).unwrap();
        assert_eq!((s.temp, s.top_k), (0.0, 0));
        let bad = SamplingFields {
            top_p: Some(1.5),
            ..Default::default()
        };
        let e = bad.settings(&base).unwrap_err();
        assert_eq!(e.param.as_deref(), Some("top_p"));
        let bad = SamplingFields {
            presence_penalty: Some(3.0),
            ..Default::default()
        };
        assert!(bad.settings(&base).is_err());
        let bad = SamplingFields {
            top_k: Some(-5),
            ..Default::default()
        };
        assert_eq!(
            bad.settings(&base).unwrap_err().param.as_deref(),
            Some("top_k")
        );
    }

    #[test]
    fn json_schemas_that_are_not_schemas_are_refused() {
        let format = serde_json::json!({"type": "json_schema"});
        for schema in [
            serde_json::json!(5),
            serde_json::json!(false),
            serde_json::json!("object"),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}},
                "required": ["a", "b"]}),
            serde_json::json!({"type": "object", "required": ["a"]}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "object",
                "required": ["b"]}}}),
        ] {
            let refused = json_format_grammar(&format, Some(&schema), "response_format");
            assert!(refused.is_err(), "{schema}");
        }
        let ok = serde_json::json!({"type": "object", "properties": {"a": {"type": "string"}},
            "required": ["a"]});
        assert!(json_format_grammar(&format, Some(&ok), "response_format").is_ok());
        assert!(json_format_grammar(&format, Some(&serde_json::json!(true)), "f").is_ok());
    }

    #[test]
    fn stop_forms() {
        assert_eq!(
            stop_strings(Some(StopField::One("x".into())), "stop").unwrap(),
            vec!["x"]
        );
        let many = StopField::Many(vec!["a".into(), "b".into()]);
        assert_eq!(stop_strings(Some(many), "stop").unwrap(), vec!["a", "b"]);
        let empty = StopField::Many(vec!["a".into(), "".into()]);
        assert_eq!(
            stop_strings(Some(empty), "stop")
                .unwrap_err()
                .param
                .as_deref(),
            Some("stop")
        );
        let too_many = StopField::Many(vec!["a".into(); 17]);
        assert!(stop_strings(Some(too_many), "stop").is_err());
    }
}
