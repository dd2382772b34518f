//! The optional config file (`config.toml`): defaults for the same options the flags set,
//! under the same names (`ctx-size = 16384`, `kv-type = "q8_0"`, `model = "..."`).

use std::path::Path;

use serde::Deserialize;

use crate::settings::{ContextOverflow, FlashAttn, KvType};

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub struct FileConfig {
    pub model: Option<String>,
    pub ctx_size: Option<u32>,
    pub threads: Option<u32>,
    pub gpu_layers: Option<u32>,
    pub batch_size: Option<u32>,
    pub kv_type: Option<KvType>,
    pub flash_attn: Option<FlashAttn>,
    pub temp: Option<f32>,
    pub top_k: Option<i32>,
    pub top_p: Option<f32>,
    pub min_p: Option<f32>,
    pub repeat_penalty: Option<f32>,
    pub seed: Option<u32>,
    pub context_overflow: Option<ContextOverflow>,
    pub chat_template: Option<String>,
    pub hot_sessions: Option<u32>,
    pub warm_budget: Option<String>,
    pub cold_budget: Option<String>,
    pub hot_idle: Option<String>,
    pub warm_idle: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {detail}")]
    Invalid { path: String, detail: String },
}

impl FileConfig {
    /// Loads the config file; a missing file is an empty config.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                })
            }
        };
        Self::parse(&text).map_err(|detail| ConfigError::Invalid {
            path: path.display().to_string(),
            detail,
        })
    }

    /// Parses config text; the error is one line naming the line and key at fault.
    pub fn parse(text: &str) -> Result<Self, String> {
        toml::from_str(text).map_err(|e| describe_toml_error(text, &e))
    }
}

/// toml's own message spans several lines with a source excerpt; a CLI error is one line, so
/// keep the message and name the line and the key it points at.
fn describe_toml_error(text: &str, err: &toml::de::Error) -> String {
    let message = err.message().trim().replace('\n', " ");
    let Some(span) = err.span() else {
        return message;
    };
    let line_no = text[..span.start.min(text.len())].matches('\n').count() + 1;
    let line = text.lines().nth(line_no - 1).unwrap_or("");
    match line.split_once('=') {
        Some((key, _)) if !key.trim().is_empty() => {
            format!("line {line_no}, key `{}`: {message}", key.trim())
        }
        _ => format!("line {line_no}: {message}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_known_keys() {
        let c = FileConfig::parse("ctx-size = 2048\nkv-type = \"q8_0\"\ntemp = 0.0\n").unwrap();
        assert_eq!(c.ctx_size, Some(2048));
        assert_eq!(c.kv_type, Some(KvType::Q8_0));
        assert_eq!(c.temp, Some(0.0));
    }

    #[test]
    fn unknown_key_is_named() {
        let e = FileConfig::parse("ctx-size = 1\nbogus-key = 3\n").unwrap_err();
        assert!(e.contains("bogus-key"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn wrong_type_names_the_key() {
        let e = FileConfig::parse("threads = \"many\"\n").unwrap_err();
        assert!(e.contains("`threads`"), "{e}");
    }
}
