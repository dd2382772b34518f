//! The `kvrun bench` subcommands' arguments.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::shared::{in_range, LlamaArgs, ModelArg};
use crate::settings::{self, KvType};

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Prefill and decode tokens per second, kvrun's schedule next to llama.cpp's.
    Speed(BenchArgs),
    /// Session restore against cold prefill and llama.cpp's own state files.
    Restore(BenchRestoreArgs),
    /// Switching between many sessions through the hot, warm and cold tiers.
    Switch(BenchSwitchArgs),
    /// `kvrun serve` over HTTP: time to first token of an agent-sized prompt (first call,
    /// next turn, after a restart), the server's overhead, concurrent decode.
    Serve(BenchServeArgs),
    /// Concurrent streams through the service engine against llama.cpp's batched decode.
    Batch(BenchBatchArgs),
    /// KV element types against f16: bytes per token, restore time, greedy agreement and
    /// log-probability drift.
    KvTypes(BenchKvTypesArgs),
    /// The elastic context (`kvrun serve --ctx-size auto`) against a fixed one of the same
    /// ceiling: the server's resident memory idle and holding each length, and what a
    /// growth step paused.
    Ctx(BenchCtxArgs),
    /// `kvrun serve` of two models under a budget that holds one: what a swap costs (unload
    /// with its saves, then load; from the page cache and cold) against a fresh process,
    /// a returning conversation's time to first token against a cold prefill, and the
    /// peak resident memory against the budget.
    Swap(BenchSwapArgs),
    /// Checkpoints of recurrent and hybrid models: bytes and capture time of each against
    /// the prefill that made them, and the time to first token of a prompt that parts from
    /// a held conversation, from the last checkpoint before the parting point.
    Checkpoints(BenchCheckpointsArgs),
    /// Tool-call constraints on the recorded agents' tool schemas (tests/agents): the time
    /// to build each (llama.cpp's GBNF, forced and lazy, and llguidance) and its cost per
    /// sampled token against unconstrained sampling.
    Grammar(BenchGrammarArgs),
}

#[derive(Debug, Args)]
pub struct BenchCheckpointsArgs {
    /// Recurrent or hybrid models: .gguf paths or names in the models folder [default:
    /// kvrun's tiny random-weight Mamba2, Granite-hybrid, LFM2 (with and without a sliding
    /// window) and Qwen3.5 models, written into the benchmark's folder]
    #[arg(value_name = "MODEL")]
    pub models: Vec<String>,
    /// Prompt tokens of each measurement.
    #[arg(long, value_delimiter = ',', default_values_t = [1024, 4096])]
    pub tokens: Vec<u32>,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

#[derive(Debug, Args)]
pub struct BenchGrammarArgs {
    /// Models, each a .gguf path, a name in the models folder, or smollm2/gemma3
    #[arg(long, value_delimiter = ',', default_values_t = ["smollm2".to_string(), "gemma3".to_string()])]
    pub models: Vec<String>,
    /// The folder of recorded agent requests (claude-code-messages.json,
    /// codex-responses.json, opencode-main.json)
    #[arg(long, value_name = "DIR", default_value = "tests/agents")]
    pub agents: PathBuf,
    /// Tokens generated under each constraint, at most (a call may end sooner)
    #[arg(long, default_value_t = 64)]
    pub tokens: u32,
    /// Builds of each constraint; the table shows the median
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

#[derive(Debug, Args)]
pub struct BenchSwapArgs {
    /// The two models, each a .gguf path, a name in the models folder, or smollm2/gemma3
    #[arg(long, value_delimiter = ',', default_values_t = ["gemma3".to_string(), "smollm2".to_string()])]
    pub models: Vec<String>,
    /// Prompt tokens of each conversation (about: the text is tokenized by each model)
    #[arg(long, default_value_t = 2048)]
    pub prompt_tokens: u32,
    /// Times each model is swapped back in
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// The memory budget [default: the larger model's measured charge, plus 5%]
    #[arg(long, value_name = "SIZE")]
    pub budget: Option<String>,
    /// Mixed load: clients per model looping on both models at once
    #[arg(long, default_value_t = 3)]
    pub clients: usize,
    /// Mixed load: seconds the clients loop
    #[arg(long, default_value_t = 60)]
    pub mixed_secs: u64,
    /// Mixed load: the server's `--swap-wait` [default: serve's]
    #[arg(long, value_name = "DURATION")]
    pub swap_wait: Option<String>,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

#[derive(Debug, Args)]
pub struct BenchKvTypesArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// KV types to compare; f16, the reference, is always measured.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [KvType::Q8_0, KvType::Q4_0])]
    pub types: Vec<KvType>,
    /// Session lengths to measure, in tokens.
    #[arg(long, value_delimiter = ',', default_values_t = [1024, 8192, 32000])]
    pub tokens: Vec<u32>,
    /// Greedy tokens generated after each session (and scored under teacher forcing).
    #[arg(long, default_value_t = 256)]
    pub decode_tokens: u32,
    /// Measure kvrun's tiny random-weight llama test model (written into the benchmark's
    /// folder) instead of --model.
    #[arg(long, conflicts_with = "model")]
    pub tiny: bool,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

#[derive(Debug, Args)]
pub struct BenchServeArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// Tokens in the agent-shaped prompt (system blocks and tool schemas)
    #[arg(long, default_value_t = 21000)]
    pub prompt_tokens: u32,
    /// Tokens generated per call
    #[arg(long, default_value_t = 32)]
    pub decode_tokens: u32,
    /// Concurrent streams for the aggregate decode rows
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4, 8])]
    pub streams: Vec<u32>,
    /// A llama-server binary to run the same conversation against, side by side (same model,
    /// threads, context, one slot, greedy); prints that table instead of the others. Build it
    /// from the pinned llama.cpp as the README's "Serving over HTTP" benchmark says.
    #[arg(long, value_name = "PATH")]
    pub llama_server: Option<PathBuf>,
    /// Times each side-by-side row is measured, each from a fresh home; medians are shown
    #[arg(long, default_value_t = 1, requires = "llama_server", value_parser = clap::value_parser!(u32).range(1..=20))]
    pub repeat: u32,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

#[derive(Debug, Args)]
pub struct BenchBatchArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// Concurrent streams to measure.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4, 8])]
    pub streams: Vec<u32>,
    /// Prompt tokens of each stream.
    #[arg(long, default_value_t = 128)]
    pub prompt_tokens: u32,
    /// Tokens each stream generates.
    #[arg(long, default_value_t = 64)]
    pub decode_tokens: u32,
    /// Measurements of each stream count, the service's and llama.cpp's alternating; the
    /// table shows the best throughput (the least disturbed on a shared machine) and the
    /// slowest time to first token.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

#[derive(Debug, Args)]
pub struct BenchCtxArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// Tokens one conversation holds at each measurement (it grows from one to the next).
    #[arg(long, value_delimiter = ',', default_values_t = [1024, 4096, 16384])]
    pub tokens: Vec<u32>,
    /// The ceiling of the elastic context and the size of the fixed one [default: the
    /// model's training context]
    #[arg(long, value_name = "N", value_parser = in_range::<u32>(&settings::CTX_SIZE))]
    pub max_ctx_size: Option<u32>,
    /// Measure kvrun's tiny random-weight llama test model (written into the benchmark's
    /// folder, with a training context of the ceiling or 32768) instead of --model.
    #[arg(long, conflicts_with = "model")]
    pub tiny: bool,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

#[derive(Debug, Args)]
pub struct BenchSwitchArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// Sessions to switch between.
    #[arg(long, default_value_t = 6)]
    pub sessions: u32,
    /// Tokens in each session.
    #[arg(long, default_value_t = 8192)]
    pub tokens: u32,
    /// Rounds of switching through all sessions.
    #[arg(long, default_value_t = 2)]
    pub rounds: u32,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

#[derive(Debug, Args)]
pub struct BenchRestoreArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// Session lengths to measure, in tokens.
    #[arg(long, value_delimiter = ',', default_values_t = [1024, 4096, 16384, 32000])]
    pub tokens: Vec<u32>,
    /// Sessions in the prefix-sharing row (they share a --share-prefix-token prefix).
    #[arg(long, default_value_t = 10)]
    pub share_sessions: u32,
    #[arg(long, default_value_t = 4096)]
    pub share_prefix: u32,
    /// Instead of MODEL, benchmark a generated random-weight model of this shape (no
    /// download; written into the benchmark's temp folder unless --shape-dir is given)
    #[arg(long, value_enum, conflicts_with = "model")]
    pub shape: Option<BenchShape>,
    /// Keep the generated --shape model in this folder, and reuse it when already there
    #[arg(long, value_name = "DIR", requires = "shape")]
    pub shape_dir: Option<PathBuf>,
    /// Build each session from deterministic noise KV (no prefill) and time restore only:
    /// for lengths whose prefill would take hours; the rows' values are not the model's
    #[arg(long)]
    pub synthetic: bool,
    /// Times each restore is measured (llama.cpp's load, kvrun's in process and in a fresh
    /// process, the cold read), alternating, each from a cold page cache, then llama.cpp's
    /// load and kvrun's restore again from a warm one; medians are shown
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub repeat: u32,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

/// A generated benchmark model (`bench restore --shape`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchShape {
    /// The tests' tiny random llama (4 layers, 1 KiB of KV per token) with a 64k context
    #[value(name = "tiny")]
    Tiny,
    /// An 8B llama's shape (32 layers, 4096 wide, 8 KV heads of 128, FFN 14336), random
    /// Q4_0 weights: about 3.9 GB, 128 KiB of KV per token
    #[value(name = "llama-8b")]
    Llama8b,
    /// The same KV shape with a 512-wide FFN: about a fifth of the weights
    #[value(name = "llama-8b-narrow-ffn")]
    Llama8bNarrowFfn,
    /// Qwen3.5-27B's hybrid cache (16 attention layers: 64 KiB of KV per token; 48 gated
    /// delta-net layers: 150 MiB of state) in a narrow model (256-wide stream, 4 query
    /// heads, 512-wide FFN), random f16 weights: about 0.6 GiB
    #[value(name = "qwen35-27b-cache")]
    Qwen35_27bCache,
    /// Granite-4.0-H-Small's hybrid cache (4 attention layers: 16 KiB of KV per token; 36
    /// Mamba2 layers: 146 MiB of state) in a narrow model (256-wide stream, 512-wide FFN),
    /// random f16 weights: about 0.2 GiB
    #[value(name = "granite-4-h-small-cache")]
    Granite4HSmallCache,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// Prompt lengths to measure, in tokens.
    #[arg(long, value_delimiter = ',', default_values_t = [512, 2048, 8192])]
    pub prompt_tokens: Vec<u32>,
    /// Tokens to generate for the decode figure.
    #[arg(long, default_value_t = 64)]
    pub decode_tokens: u32,
    /// Repetitions per row; the table shows the median.
    #[arg(long, default_value_t = 1)]
    pub repeat: u32,
    #[command(flatten)]
    pub llama: LlamaArgs,
}
