//! The arguments several commands share: which model, and how llama.cpp runs it.

use clap::Args;

use crate::settings::{self, CtxSize, FlashAttn, KvType, Range};

/// Where the model comes from: a path, a name in the models folder, or (when omitted)
/// KVRUN_MODEL, then the config file, then the pulled default model.
#[derive(Debug, Args, Clone, Default)]
pub struct ModelArg {
    /// Model: a .gguf path, a name in the models folder, or smollm2/gemma3 [default:
    /// KVRUN_MODEL, the config file's `model`, then the command's default model: smollm2
    /// for chat and run, gemma3 for serve and bench]
    #[arg(value_name = "MODEL")]
    pub model: Option<String>,
    /// Chat template: a Jinja file, or a shipped one (gemma3, chatml) [default: the config
    /// file's `chat-template`, then the model's own, then its architecture's default]
    #[arg(long, value_name = "FILE|NAME")]
    pub chat_template: Option<String>,
}

/// Options that shape the llama.cpp context. Every one can also be set in the config file
/// under the same name.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "llama.cpp")]
pub struct LlamaArgs {
    /// Context size in tokens, or `auto`: grow with the live tokens (kvrun serve up to
    /// --max-ctx-size, kvrun chat up to the model's training context; other commands take
    /// 8192) [default: auto for kvrun serve, else 8192; capped at the model's training
    /// context]
    #[arg(short = 'c', long, value_name = "N|auto", value_parser = ctx_size_arg)]
    pub ctx_size: Option<CtxSize>,
    /// CPU threads [default: the number of cores]
    #[arg(short = 't', long, value_name = "N", value_parser = in_range::<u32>(&settings::THREADS))]
    pub threads: Option<u32>,
    /// Layers to offload to the GPU (needs a GPU build) [default: all when built with a GPU
    /// backend, else 0]
    #[arg(long, value_name = "N")]
    pub gpu_layers: Option<u32>,
    /// Largest prompt batch in tokens: whole KV pages above one page; one page on
    /// sliding-window, recurrent and hybrid models. Restores round down to a batch start to
    /// recompute exactly [default: 512]
    #[arg(short = 'b', long, value_name = "N", value_parser = in_range::<u32>(&settings::BATCH_SIZE))]
    pub batch_size: Option<u32>,
    /// KV cache element type [default: f16]
    #[arg(long, value_enum, value_name = "TYPE")]
    pub kv_type: Option<KvType>,
    /// Flash attention [default: auto]
    #[arg(long, value_enum, value_name = "MODE")]
    pub flash_attn: Option<FlashAttn>,
}

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

/// `--ctx-size`: `auto` or a number of tokens in [`settings::CTX_SIZE`].
fn ctx_size_arg(text: &str) -> Result<CtxSize, String> {
    if text.trim().eq_ignore_ascii_case("auto") {
        return Ok(CtxSize::Auto);
    }
    in_range::<u32>(&settings::CTX_SIZE)(text).map(CtxSize::Tokens)
}
