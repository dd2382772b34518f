//! Engine and sampling settings: the domain types behind the flags, and how the flag, the
//! config file and the built-in default combine (a flag wins, then the config file).

use serde::{Deserialize, Serialize};

use crate::cli::{EngineArgs, SamplingArgs};
use crate::config::FileConfig;

/// KV cache element type. Quantized types shrink every tier's bytes; quantized V needs
/// flash attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvType {
    F16,
    #[value(name = "q8_0")]
    Q8_0,
    #[value(name = "q4_0")]
    Q4_0,
}

impl KvType {
    pub fn as_str(self) -> &'static str {
        match self {
            KvType::F16 => "f16",
            KvType::Q8_0 => "q8_0",
            KvType::Q4_0 => "q4_0",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlashAttn {
    On,
    Off,
    Auto,
}

impl FlashAttn {
    pub fn as_str(self) -> &'static str {
        match self {
            FlashAttn::On => "on",
            FlashAttn::Off => "off",
            FlashAttn::Auto => "auto",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextOverflow {
    Truncate,
    Error,
}

/// The valid values of a numeric setting. Flags (through [`in_range`]), the config file
/// ([`FileConfig::validate`]) and session manifests ([`EngineSettings::validate`],
/// [`SamplingSettings::validate`]) are all checked against these, so a value means the same
/// wherever it comes from.
#[derive(Debug, Clone, Copy)]
pub struct Range {
    /// The flag's long name, which is also the config file's key.
    pub name: &'static str,
    pub min: f64,
    /// When set, `min` itself is outside the range.
    pub min_exclusive: bool,
    pub max: f64,
}

impl Range {
    const fn new(name: &'static str, min: f64, max: f64) -> Self {
        Self {
            name,
            min,
            min_exclusive: false,
            max,
        }
    }

    pub fn check(&self, value: f64) -> Result<(), SettingError> {
        let above_min = if self.min_exclusive {
            value > self.min
        } else {
            value >= self.min
        };
        if value.is_finite() && above_min && value <= self.max {
            return Ok(());
        }
        Err(SettingError {
            name: self.name,
            value: value.to_string(),
            range: self.describe(),
        })
    }

    fn describe(&self) -> String {
        let low = if self.min_exclusive {
            format!("above {}", self.min)
        } else {
            format!("at least {}", self.min)
        };
        if self.max >= f64::from(u32::MAX) {
            low
        } else {
            format!("{low} and at most {}", self.max)
        }
    }
}

/// A setting outside its [`Range`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name} {value} is out of range: it must be {range}")]
pub struct SettingError {
    pub name: &'static str,
    pub value: String,
    pub range: String,
}

pub const TEMP: Range = Range::new("temp", 0.0, 100.0);
/// 0 disables top-k.
pub const TOP_K: Range = Range::new("top-k", 0.0, i32::MAX as f64);
pub const TOP_P: Range = Range::new("top-p", 0.0, 1.0);
pub const MIN_P: Range = Range::new("min-p", 0.0, 1.0);
/// 0 would divide every logit by zero (llama.cpp then samples only one token, forever).
pub const REPEAT_PENALTY: Range = Range {
    min_exclusive: true,
    ..Range::new("repeat-penalty", 0.0, 100.0)
};
/// OpenAI's range for `presence_penalty` and `frequency_penalty`.
pub const PRESENCE_PENALTY: Range = Range::new("presence-penalty", -2.0, 2.0);
pub const FREQUENCY_PENALTY: Range = Range::new("frequency-penalty", -2.0, 2.0);
/// Values above a page are clamped to it (batches never cross a page boundary).
pub const BATCH_SIZE: Range = Range::new("batch-size", 1.0, u32::MAX as f64);
pub const CTX_SIZE: Range = Range::new("ctx-size", 1.0, u32::MAX as f64);
pub const THREADS: Range = Range::new("threads", 1.0, 512.0);
/// Sequences `kvrun serve` decodes together; each needs its share of the context.
pub const PARALLEL: Range = Range::new("parallel", 1.0, 64.0);

/// A clap value parser for a flag with a [`Range`].
pub fn in_range<T>(range: &'static Range) -> impl Fn(&str) -> Result<T, String> + Clone
where
    T: std::str::FromStr + Into<f64> + Copy,
    T::Err: std::fmt::Display,
{
    move |text| {
        let value: T = text.trim().parse().map_err(|e| format!("{e}"))?;
        range.check(value.into()).map_err(|e| e.to_string())?;
        Ok(value)
    }
}

pub const DEFAULT_CTX_SIZE: u32 = 8192;
/// Tokens per KV page. Batches never cross a page boundary, which keeps the decode schedule
/// canonical: a restored context computes what the uninterrupted one would have.
pub const DEFAULT_PAGE_TOKENS: u32 = 256;

/// Resolved engine settings: what the llama.cpp context is created with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineSettings {
    /// Requested context size; the engine caps it at the model's training context.
    pub ctx_size: u32,
    pub threads: u32,
    pub gpu_layers: u32,
    pub batch_size: u32,
    pub kv_type: KvType,
    pub flash_attn: FlashAttn,
}

impl EngineSettings {
    /// Flag, then config file, then default.
    pub fn resolve(args: &EngineArgs, config: &FileConfig) -> Self {
        let default_threads = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(4);
        let default_gpu_layers =
            if cfg!(any(feature = "cuda", feature = "vulkan", feature = "metal")) {
                u32::MAX
            } else {
                0
            };
        Self {
            ctx_size: args
                .ctx_size
                .or(config.ctx_size)
                .unwrap_or(DEFAULT_CTX_SIZE),
            threads: args.threads.or(config.threads).unwrap_or(default_threads),
            gpu_layers: args
                .gpu_layers
                .or(config.gpu_layers)
                .unwrap_or(default_gpu_layers),
            batch_size: args
                .batch_size
                .or(config.batch_size)
                .unwrap_or(DEFAULT_PAGE_TOKENS),
            kv_type: args.kv_type.or(config.kv_type).unwrap_or(KvType::F16),
            flash_attn: args
                .flash_attn
                .or(config.flash_attn)
                .unwrap_or(FlashAttn::Auto),
        }
    }
}

impl EngineSettings {
    /// Every numeric setting inside its [`Range`] (for settings read from a manifest).
    pub fn validate(&self) -> Result<(), SettingError> {
        CTX_SIZE.check(self.ctx_size.into())?;
        THREADS.check(self.threads.into())?;
        BATCH_SIZE.check(self.batch_size.into())
    }

    /// A session's recorded settings, with any flag given now taking precedence.
    pub fn resolve_over(args: &EngineArgs, base: &EngineSettings) -> Self {
        Self {
            ctx_size: args.ctx_size.unwrap_or(base.ctx_size),
            threads: args.threads.unwrap_or(base.threads),
            gpu_layers: args.gpu_layers.unwrap_or(base.gpu_layers),
            batch_size: args.batch_size.unwrap_or(base.batch_size),
            kv_type: args.kv_type.unwrap_or(base.kv_type),
            flash_attn: args.flash_attn.unwrap_or(base.flash_attn),
        }
    }
}

/// Resolved sampling settings. `temp == 0` means greedy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingSettings {
    pub temp: f32,
    pub top_k: i32,
    pub top_p: f32,
    pub min_p: f32,
    pub repeat_penalty: f32,
    pub seed: u32,
    /// Subtracted from the logit of every token already in the recent history (OpenAI's
    /// `presence_penalty`; 0 is off).
    #[serde(default)]
    pub presence_penalty: f32,
    /// Subtracted once per occurrence in the recent history (`frequency_penalty`; 0 is off).
    #[serde(default)]
    pub frequency_penalty: f32,
}

impl SamplingSettings {
    pub fn resolve(args: &SamplingArgs, config: &FileConfig) -> Self {
        Self {
            temp: args.temp.or(config.temp).unwrap_or(0.8),
            top_k: args.top_k.or(config.top_k).unwrap_or(40),
            top_p: args.top_p.or(config.top_p).unwrap_or(0.95),
            min_p: args.min_p.or(config.min_p).unwrap_or(0.05),
            repeat_penalty: args.repeat_penalty.or(config.repeat_penalty).unwrap_or(1.0),
            seed: args.seed.or(config.seed).unwrap_or_else(fresh_seed),
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
        }
    }

    /// Plain argmax: fully deterministic (benchmarks and tests).
    pub fn greedy() -> Self {
        Self {
            temp: 0.0,
            top_k: 0,
            top_p: 1.0,
            min_p: 0.0,
            repeat_penalty: 1.0,
            seed: 0,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
        }
    }

    /// A session's recorded sampling, with any flag given now taking precedence.
    pub fn resolve_over(args: &SamplingArgs, base: &SamplingSettings) -> Self {
        Self {
            temp: args.temp.unwrap_or(base.temp),
            top_k: args.top_k.unwrap_or(base.top_k),
            top_p: args.top_p.unwrap_or(base.top_p),
            min_p: args.min_p.unwrap_or(base.min_p),
            repeat_penalty: args.repeat_penalty.unwrap_or(base.repeat_penalty),
            seed: args.seed.unwrap_or(base.seed),
            ..base.clone()
        }
    }

    /// Every sampling value inside its [`Range`] (for settings read from a manifest).
    pub fn validate(&self) -> Result<(), SettingError> {
        TEMP.check(self.temp.into())?;
        TOP_K.check(self.top_k.into())?;
        TOP_P.check(self.top_p.into())?;
        MIN_P.check(self.min_p.into())?;
        REPEAT_PENALTY.check(self.repeat_penalty.into())?;
        PRESENCE_PENALTY.check(self.presence_penalty.into())?;
        FREQUENCY_PENALTY.check(self.frequency_penalty.into())
    }

    pub fn is_greedy(&self) -> bool {
        self.temp <= 0.0
    }
}

fn fresh_seed() -> u32 {
    use std::time::{SystemTime, UNIX_EPOCH};
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or(0);
    nanos ^ std::process::id().rotate_left(16)
}

/// The tier flags, then the config file, then defaults; sizes and durations parsed.
pub fn resolve_tiers(
    args: &crate::cli::TierArgs,
    config: &FileConfig,
) -> Result<crate::chat::TierSettings, String> {
    use crate::tiers::{parse_bytes, parse_duration};
    let defaults = crate::chat::TierSettings::default();
    let pick = |a: &Option<String>, c: &Option<String>| a.clone().or_else(|| c.clone());
    Ok(crate::chat::TierSettings {
        hot_sessions: args
            .hot_sessions
            .or(config.hot_sessions)
            .unwrap_or(defaults.hot_sessions)
            .max(1),
        warm_budget: match pick(&args.warm_budget, &config.warm_budget) {
            Some(s) => parse_bytes(&s)?,
            None => defaults.warm_budget,
        },
        cold_budget: pick(&args.cold_budget, &config.cold_budget)
            .map(|s| parse_bytes(&s))
            .transpose()?,
        hot_idle: pick(&args.hot_idle, &config.hot_idle)
            .map(|s| parse_duration(&s))
            .transpose()?,
        warm_idle: pick(&args.warm_idle, &config.warm_idle)
            .map(|s| parse_duration(&s))
            .transpose()?,
    })
}
