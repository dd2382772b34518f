//! Engine, sampling and tier settings: the domain types behind the flags, their valid
//! ranges and kvrun's defaults. Nothing here knows the CLI or the config file: `cli` maps
//! clap values onto these types, and [`crate::resolve`] layers a flag over the config file
//! over the defaults. The llama.cpp adapter and the session manifest depend on this module
//! alone.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// KV cache element type. Quantized types shrink every tier's bytes; quantized V needs
/// flash attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KvType {
    F16,
    Q8_0,
    Q4_0,
}

/// Session length above which a q4_0 KV cache draws a warning: at this length of the default
/// model `kvrun bench kv-types --tokens 1024` showed q4_0's greedy run leaving f16's early,
/// where q8_0 matched it throughout; shorter sessions were not measured.
pub const Q4_0_WARN_TOKENS: usize = 1024;

impl KvType {
    /// Bytes one K or V value takes in a cache of this type (a quantized block's bytes
    /// shared out over its values).
    pub fn value_bytes(self) -> f64 {
        let element = match self {
            KvType::F16 => crate::gguf::GgmlType::F16,
            KvType::Q8_0 => crate::gguf::GgmlType::Q8_0,
            KvType::Q4_0 => crate::gguf::GgmlType::Q4_0,
        };
        element.type_size() as f64 / element.block_size() as f64
    }

    pub fn as_str(self) -> &'static str {
        match self {
            KvType::F16 => "f16",
            KvType::Q8_0 => "q8_0",
            KvType::Q4_0 => "q4_0",
        }
    }

    /// Why a session of `tokens` tokens should not use this KV type, where it measurably
    /// loses precision at that length.
    pub fn precision_warning(self, tokens: usize) -> Option<String> {
        (self == KvType::Q4_0 && tokens > Q4_0_WARN_TOKENS).then(|| {
            format!(
                "{tokens} tokens in a q4_0 KV cache: above {Q4_0_WARN_TOKENS} tokens its \
                 output drifts from f16's (README, \"Quantized KV\"); --kv-type q8_0 keeps \
                 it close at half f16's size"
            )
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextOverflow {
    Truncate,
    Error,
}

impl ContextOverflow {
    pub fn as_str(self) -> &'static str {
        match self {
            ContextOverflow::Truncate => "truncate",
            ContextOverflow::Error => "error",
        }
    }
}

/// `serve --durability`: when a finished reply's save must be on disk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// The save is durable before the reply's final event is sent, so a client that read
    /// the end of a turn never loses it to a crash (the default: no exit path loses a
    /// conversation).
    #[default]
    Before,
    /// The save lands shortly after the final event (lowest latency at a turn's end); a
    /// crash in between loses that turn.
    After,
}

impl Durability {
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Before => "before",
            Durability::After => "after",
        }
    }
}

/// The valid values of a numeric setting. Flags (through `cli`'s value parsers), the config file
/// ([`crate::config::FileConfig::validate`]) and session manifests ([`LlamaSettings::validate`],
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
/// Rounded down to whole pages above one page ([`crate::llama::batch_span`]).
pub const BATCH_SIZE: Range = Range::new("batch-size", 1.0, u32::MAX as f64);
pub const CTX_SIZE: Range = Range::new("ctx-size", 1.0, u32::MAX as f64);
pub const THREADS: Range = Range::new("threads", 1.0, 512.0);
/// Sequences `kvrun serve` decodes together; each needs its share of the context.
pub const PARALLEL: Range = Range::new("parallel", 1.0, 64.0);

pub const DEFAULT_CTX_SIZE: u32 = 8192;

/// `--ctx-size`: a number of tokens, or `auto`, `kvrun serve`'s default, where the context
/// holds the live tokens and grows with them (up to `--max-ctx-size`; `kvrun chat -c auto`
/// up to the training context). The other commands size their one session's context up
/// front; for them `auto` means their default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtxSize {
    Auto,
    Tokens(u32),
}

impl CtxSize {
    pub fn tokens(self) -> Option<u32> {
        match self {
            CtxSize::Auto => None,
            CtxSize::Tokens(n) => Some(n),
        }
    }
}
/// Tokens per KV page. Prompt batches are whole pages ([`DEFAULT_BATCH_SIZE`]), which keeps
/// the decode schedule canonical: a restored context computes what the uninterrupted one
/// would have.
pub const DEFAULT_PAGE_TOKENS: u32 = 256;
/// Two pages: llama.cpp's own default micro-batch, and what a CPU prefill needs to match
/// llama-server's speed (unified attention caches only; others keep one page). Exact
/// restores round down to a batch start, so a wider batch costs a partial restore up to one
/// batch of recompute.
pub const DEFAULT_BATCH_SIZE: u32 = 2 * DEFAULT_PAGE_TOKENS;

/// Resolved llama.cpp settings: what the llama.cpp context is created with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LlamaSettings {
    /// Requested context size; kvrun caps it at the model's training context.
    pub ctx_size: u32,
    pub threads: u32,
    pub gpu_layers: u32,
    pub batch_size: u32,
    pub kv_type: KvType,
    pub flash_attn: FlashAttn,
}

impl LlamaSettings {
    /// kvrun's defaults: every core, every layer on the GPU when built with a GPU backend,
    /// one page per batch.
    pub fn defaults() -> Self {
        let threads = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(4);
        let gpu_layers = if cfg!(any(feature = "cuda", feature = "vulkan", feature = "metal")) {
            u32::MAX
        } else {
            0
        };
        Self {
            ctx_size: DEFAULT_CTX_SIZE,
            threads,
            gpu_layers,
            batch_size: DEFAULT_BATCH_SIZE,
            kv_type: KvType::F16,
            flash_attn: FlashAttn::Auto,
        }
    }

    /// Every numeric setting inside its [`Range`] (for settings read from a manifest).
    pub fn validate(&self) -> Result<(), SettingError> {
        CTX_SIZE.check(self.ctx_size.into())?;
        THREADS.check(self.threads.into())?;
        BATCH_SIZE.check(self.batch_size.into())
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
    /// kvrun's defaults, with a fresh seed.
    pub fn defaults() -> Self {
        Self {
            temp: 0.8,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.0,
            seed: fresh_seed(),
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

/// The clock's fast-changing low bits folded with the process id.
fn fresh_seed() -> u32 {
    let nanos = crate::clock::unix_nanos();
    (nanos as u32) ^ ((nanos >> 32) as u32) ^ std::process::id().rotate_left(16)
}

/// Budgets and idle timeouts of the tiers.
#[derive(Debug, Clone)]
pub struct TierSettings {
    /// Sessions kept resident in the context at once.
    pub hot_sessions: u32,
    pub warm_budget: u64,
    pub cold_budget: Option<u64>,
    /// A session idle this long leaves the context (its pages stay warm).
    pub hot_idle: Option<Duration>,
    /// Pages unused this long leave RAM (they stay on disk).
    pub warm_idle: Option<Duration>,
}

impl Default for TierSettings {
    fn default() -> Self {
        Self {
            hot_sessions: 4,
            warm_budget: 2 << 30,
            cold_budget: None,
            hot_idle: None,
            warm_idle: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_q4_0_past_the_threshold_draws_a_precision_warning() {
        assert!(KvType::Q4_0.precision_warning(Q4_0_WARN_TOKENS).is_none());
        let warning = KvType::Q4_0
            .precision_warning(Q4_0_WARN_TOKENS + 1)
            .unwrap();
        assert!(warning.contains("q4_0"), "{warning}");
        assert!(!warning.contains('\n'), "{warning}");
        for kv in [KvType::F16, KvType::Q8_0] {
            assert!(kv.precision_warning(1 << 20).is_none(), "{kv:?}");
        }
    }
}
