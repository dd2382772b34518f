//! The optional config file (`config.toml`): defaults for the same options the flags set,
//! under the same names (`ctx-size = 16384`, `kv-type = "q8_0"`, `model = "..."`).

use std::path::Path;

use serde::Deserialize;

use crate::settings::{self, ContextOverflow, FlashAttn, KvType, SettingError};

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
    // `kvrun serve` (the API key is deliberately not a key: it belongs in KVRUN_API_KEY).
    pub host: Option<String>,
    pub port: Option<u16>,
    pub parallel: Option<u32>,
    pub max_ctx_size: Option<u32>,
    pub alias: Option<String>,
    pub max_queue: Option<u32>,
    pub max_tokens: Option<u32>,
    pub max_body_bytes: Option<String>,
    pub request_timeout: Option<String>,
    pub header_timeout: Option<String>,
    pub body_timeout: Option<String>,
    pub cors_origin: Option<Vec<String>>,
    pub durability: Option<settings::Durability>,
    // `kvrun serve` without MODEL.
    pub default_model: Option<String>,
    /// Alias (or `*` pattern) to model: `"claude-haiku-*" = "smollm2"`.
    pub model_aliases: Option<std::collections::BTreeMap<String, String>>,
    pub memory_budget: Option<String>,
    pub keep_alive: Option<String>,
    pub swap_wait: Option<String>,
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
        let config: Self = toml::from_str(text).map_err(|e| describe_toml_error(text, &e))?;
        config
            .validate()
            .map_err(|e| format!("key `{}`: {e}", e.name))?;
        Ok(config)
    }

    /// Every numeric value inside the range its flag accepts.
    pub fn validate(&self) -> Result<(), SettingError> {
        let f32s = [
            (&settings::TEMP, self.temp),
            (&settings::TOP_P, self.top_p),
            (&settings::MIN_P, self.min_p),
            (&settings::REPEAT_PENALTY, self.repeat_penalty),
        ];
        for (range, value) in f32s {
            value.map_or(Ok(()), |v| range.check(v.into()))?;
        }
        let u32s = [
            (&settings::CTX_SIZE, self.ctx_size),
            (&settings::THREADS, self.threads),
            (&settings::BATCH_SIZE, self.batch_size),
            (&settings::PARALLEL, self.parallel),
            (&settings::CTX_SIZE, self.max_ctx_size),
        ];
        for (range, value) in u32s {
            value.map_or(Ok(()), |v| range.check(v.into()))?;
        }
        self.top_k
            .map_or(Ok(()), |v| settings::TOP_K.check(v.into()))
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
    fn out_of_range_values_name_the_key_and_the_range() {
        for (text, key, range) in [
            ("top-p = 2.0\n", "`top-p`", "at most 1"),
            ("min-p = -0.5\n", "`min-p`", "at least 0"),
            ("repeat-penalty = 0.0\n", "`repeat-penalty`", "above 0"),
            ("temp = -1.0\n", "`temp`", "at least 0"),
            ("top-k = -3\n", "`top-k`", "at least 0"),
            ("batch-size = 0\n", "`batch-size`", "at least 1"),
            ("ctx-size = 0\n", "`ctx-size`", "at least 1"),
            ("temp = nan\n", "`temp`", "at least 0"),
        ] {
            let e = FileConfig::parse(text).unwrap_err();
            assert!(e.contains(key) && e.contains(range), "{text}: {e}");
        }
        FileConfig::parse("top-p = 1.0\nmin-p = 0.0\nrepeat-penalty = 1.1\ntop-k = 0\n").unwrap();
    }

    #[test]
    fn serve_keys_parse_and_parallel_is_checked() {
        let c = FileConfig::parse(
            "host = \"0.0.0.0\"\nport = 9000\nparallel = 8\ncors-origin = [\"http://a\"]\n",
        )
        .unwrap();
        assert_eq!((c.port, c.parallel), (Some(9000), Some(8)));
        assert_eq!(c.cors_origin.unwrap(), ["http://a"]);
        let e = FileConfig::parse("parallel = 0\n").unwrap_err();
        assert!(e.contains("`parallel`"), "{e}");
        // The key has no config key: it belongs in the environment.
        assert!(FileConfig::parse("api-key = \"k\"\n").is_err());
    }

    #[test]
    fn durability_takes_before_or_after_and_names_itself_otherwise() {
        let c = FileConfig::parse("durability = \"after\"\n").unwrap();
        assert_eq!(c.durability, Some(settings::Durability::After));
        let e = FileConfig::parse("durability = \"sometimes\"\n").unwrap_err();
        assert!(e.contains("`durability`") && e.contains("before"), "{e}");
    }

    #[test]
    fn wrong_type_names_the_key() {
        let e = FileConfig::parse("threads = \"many\"\n").unwrap_err();
        assert!(e.contains("`threads`"), "{e}");
    }
}
