//! The command line: clap definitions only. Behaviour lives in `commands/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::settings::{self, ContextOverflow, Durability, FlashAttn, KvType};

mod bench;
mod shared;
pub use bench::{
    BenchArgs, BenchBatchArgs, BenchCheckpointsArgs, BenchCommand, BenchCtxArgs, BenchGrammarArgs,
    BenchKvTypesArgs, BenchRestoreArgs, BenchServeArgs, BenchShape, BenchSwapArgs, BenchSwitchArgs,
};
pub use shared::{in_range, LlamaArgs, ModelArg};

/// Local LLM inference on GGUF models, with a persistent, paged KV cache.
///
/// kvrun wraps llama.cpp. Sessions keep their KV cache on disk as shared, checksummed
/// pages, so a long agent session resumes in about a second instead of re-running prefill.
#[derive(Debug, Parser)]
#[command(
    name = "kvrun",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Show more diagnostics on stderr (-v: info and llama.cpp's log, -vv: debug).
    /// KVRUN_LOG takes a tracing filter instead (e.g. KVRUN_LOG=kvrun=debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Hide progress bars and notes; errors still print.
    #[arg(short, long, global = true)]
    pub quiet: bool,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
// Parsed once per process: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Chat interactively with a model (line mode; streams tokens as they come).
    Chat(ChatArgs),
    /// Run one prompt and print only the generated text (for scripts and agents).
    Run(RunArgs),
    /// Serve OpenAI- and Anthropic-compatible HTTP; every conversation is a persistent session.
    Serve(ServeArgs),
    /// Watch a running `kvrun serve`: the TUI's memory panel and sessions list, live.
    Top(TopArgs),
    /// Download a model: the default models, one by name, a URL, or hf:OWNER/REPO/FILE.gguf.
    Pull(PullArgs),
    /// List the models in kvrun's models folder.
    Models(ModelsArgs),
    /// Save, restore, list, fork, export and import persistent sessions.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Delete KV pages that no session references any more.
    Gc(GcArgs),
    /// Memory tiers and devices: the page store, RAM, disk and GPU figures.
    Stats(StatsArgs),
    /// Benchmarks that print tables: prefill/decode speed, session restore.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Print a shell completion script.
    Completions(CompletionsArgs),
    /// Print the man page (or write one page per subcommand with --dir).
    Man(ManArgs),
}

/// Sampling options. `--temp 0` is greedy and fully deterministic.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Sampling")]
pub struct SamplingArgs {
    /// Temperature; 0 is greedy [default: 0.8]
    #[arg(long, value_name = "T", value_parser = in_range::<f32>(&settings::TEMP))]
    pub temp: Option<f32>,
    /// Keep only the K most likely tokens; 0 disables [default: 40]
    #[arg(long, value_name = "K", value_parser = in_range::<i32>(&settings::TOP_K))]
    pub top_k: Option<i32>,
    /// Nucleus sampling threshold; 1.0 disables [default: 0.95]
    #[arg(long, value_name = "P", value_parser = in_range::<f32>(&settings::TOP_P))]
    pub top_p: Option<f32>,
    /// Minimum probability relative to the top token; 0 disables [default: 0.05]
    #[arg(long, value_name = "P", value_parser = in_range::<f32>(&settings::MIN_P))]
    pub min_p: Option<f32>,
    /// Penalty for repeating recent tokens; 1.0 disables [default: 1.0]
    #[arg(long, value_name = "X", value_parser = in_range::<f32>(&settings::REPEAT_PENALTY))]
    pub repeat_penalty: Option<f32>,
    /// Random seed [default: a fresh one per run]
    #[arg(long, value_name = "N")]
    pub seed: Option<u32>,
}

#[derive(Debug, Args)]
pub struct ChatArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// Line mode even on a terminal.
    #[arg(long)]
    pub plain: bool,
    /// Resume or create a named session; its KV cache is saved after every turn (without
    /// it, the chat is an unnamed session, kept too and collected first under the cold budget).
    /// A server's client key names a family of conversations: NAME is its latest, NAME/N
    /// its Nth.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// A system prompt for the conversation.
    #[arg(long, value_name = "TEXT")]
    pub system: Option<String>,
    /// Largest reply in tokens, so a model that never stops cannot run on [default: 1024]
    #[arg(short = 'n', long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// What to do when the conversation outgrows the context: drop the oldest turns, or stop
    /// with an error [default: truncate]
    #[arg(long, value_enum, value_name = "MODE")]
    pub context_overflow: Option<ContextOverflow>,
    #[command(flatten)]
    pub llama: LlamaArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[command(flatten)]
    pub tiers: TierArgs,
}

/// Memory tiers of a chat process: hot (the context), warm (RAM), cold (disk).
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Memory tiers")]
pub struct TierArgs {
    /// Sessions kept resident in the context at once (switching to one is instant)
    /// [default: 4]
    #[arg(long, value_name = "N")]
    pub hot_sessions: Option<u32>,
    /// RAM for pages of sessions that left the context, e.g. 2GiB [default: 2GiB]
    #[arg(long, value_name = "SIZE")]
    pub warm_budget: Option<String>,
    /// Disk for the page store; past it, pages no session uses go first [default: none]
    #[arg(long, value_name = "SIZE")]
    pub cold_budget: Option<String>,
    /// A session idle this long leaves the context, e.g. 10m; then an elastic context
    /// (kvrun serve --ctx-size auto) shrinks [default: 5m for kvrun serve --ctx-size auto,
    /// else never]
    #[arg(long, value_name = "DURATION")]
    pub hot_idle: Option<String>,
    /// Pages unused this long leave RAM, e.g. 1h [default: never]
    #[arg(long, value_name = "DURATION")]
    pub warm_idle: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// The prompt text (otherwise --prompt-file, otherwise stdin).
    #[arg(short = 'p', long, value_name = "TEXT", conflicts_with = "prompt_file")]
    pub prompt: Option<String>,
    /// Read the prompt from a file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// Feed the text as-is (plain completion, no chat template).
    #[arg(long)]
    pub raw: bool,
    /// A system prompt (chat mode only).
    #[arg(long, value_name = "TEXT", conflicts_with = "raw")]
    pub system: Option<String>,
    /// Largest number of tokens to generate; 0 only prefills [default: 256]
    #[arg(short = 'n', long, value_name = "N")]
    pub max_tokens: Option<u32>,
    /// Print one JSON object (text, tokens and timings) instead of the text.
    #[arg(long)]
    pub json: bool,
    /// Resume or create a named session: restore its KV, append this turn, generate, save.
    /// A server's client key names a family of conversations: NAME is its latest, NAME/N
    /// its Nth.
    #[arg(long, value_name = "NAME")]
    pub session: Option<String>,
    /// Add no input: generate on from where the session stands.
    #[arg(long = "continue", requires = "session", conflicts_with_all = ["prompt", "prompt_file"])]
    pub continue_: bool,
    /// Add each generated token's log-probability (with --json), and the N most likely
    /// alternatives.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "0")]
    pub logprobs: Option<usize>,
    /// Tools the model may call: a JSON list of OpenAI tool definitions. Calls are parsed
    /// from the reply (`tool_calls` in --json).
    #[arg(long, value_name = "FILE", conflicts_with = "raw")]
    pub tools: Option<PathBuf>,
    /// auto (the model decides), none, required (a call is forced), or a tool's name (that
    /// call is forced) [default: auto]
    #[arg(long, value_name = "CHOICE", requires = "tools")]
    pub tool_choice: Option<String>,
    /// Force the reply to be JSON valid under this JSON schema (a file).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["tools", "raw"])]
    pub json_schema: Option<PathBuf>,
    #[command(flatten)]
    pub llama: LlamaArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Prefill a document or transcript into a new or existing session and persist it.
    Save(SessionSaveArgs),
    /// Load a session into a context and check it (with --check), printing the timing.
    Restore(SessionRestoreArgs),
    /// List sessions (with --connect, those of a running `kvrun serve` and their tiers).
    #[command(alias = "list")]
    Ls(SessionLsArgs),
    /// Show one session: model, settings, tokens, pages and what they share.
    Show(SessionShowArgs),
    /// Delete a session (pages shared with other sessions stay).
    Rm(SessionNameArg),
    /// Copy a session under a new name; instant, copies no page.
    Fork(SessionForkArgs),
    /// Write a session and its pages to one self-contained file.
    Export(SessionExportArgs),
    /// Read a session from an exported file, validating everything first.
    Import(SessionImportArgs),
}

#[derive(Debug, Args)]
pub struct SessionSaveArgs {
    /// Session name (letters, digits, '.', '_' and '-').
    pub name: String,
    #[command(flatten)]
    pub model: ModelArg,
    /// The document to prefill; `-` reads stdin.
    #[arg(long, short = 'f', value_name = "FILE")]
    pub file: PathBuf,
    /// Feed the text as-is instead of as a user message in the chat template.
    #[arg(long)]
    pub raw: bool,
    /// Print one JSON object with the counts and timings.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub llama: LlamaArgs,
}

#[derive(Debug, Args)]
pub struct SessionRestoreArgs {
    pub name: String,
    #[command(flatten)]
    pub model: ModelArg,
    /// Load the session, verify it, print the timing and exit.
    #[arg(long)]
    pub check: bool,
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub llama: LlamaArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

#[derive(Debug, Args)]
pub struct SessionLsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
}

/// Asks a running `kvrun serve` instead of reading the home folder.
#[derive(Debug, Args, Clone, Default)]
pub struct ConnectArgs {
    /// The server's URL, e.g. http://127.0.0.1:8080
    #[arg(long, value_name = "URL")]
    pub connect: Option<String>,
    /// The server's API key (sent as a bearer token)
    #[arg(
        long,
        value_name = "KEY",
        env = "KVRUN_API_KEY",
        hide_env_values = true,
        requires = "connect"
    )]
    pub api_key: Option<String>,
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// The server's URL, e.g. http://127.0.0.1:8080
    #[arg(value_name = "URL")]
    pub url: String,
    /// The server's API key (sent as a bearer token)
    #[arg(
        long,
        value_name = "KEY",
        env = "KVRUN_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
}

/// `kvrun serve`: the HTTP front end. Every option can also be set in the config file under
/// the same name (except the API key, which belongs in the environment, not a file).
#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub model: ModelArg,
    /// Address to listen on; anything but a loopback address needs --api-key
    /// [default: 127.0.0.1]
    #[arg(long, value_name = "ADDR")]
    pub host: Option<String>,
    /// Port to listen on; 0 picks a free one (the real one is printed) [default: 8080]
    #[arg(long, value_name = "PORT")]
    pub port: Option<u16>,
    /// Require this key on every endpoint but /health (`Authorization: Bearer KEY` or
    /// `x-api-key: KEY`)
    #[arg(
        long,
        value_name = "KEY",
        env = "KVRUN_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// Sequences decoded together in one batch [default: 4]
    #[arg(long, value_name = "N", value_parser = in_range::<u32>(&settings::PARALLEL))]
    pub parallel: Option<u32>,
    /// The model name responses carry [default: the model's own name]
    #[arg(long, value_name = "NAME")]
    pub alias: Option<String>,
    /// Largest reply in tokens: a request that asks for more, or sets no limit, gets N, so a
    /// model that never stops cannot hold a sequence until the context fills [default: the
    /// room the context leaves]
    #[arg(short = 'n', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tokens: Option<u32>,
    /// Largest context --ctx-size auto grows to, in tokens [default: the model's training
    /// context]
    #[arg(long, value_name = "N", value_parser = in_range::<u32>(&settings::CTX_SIZE))]
    pub max_ctx_size: Option<u32>,
    /// Requests that may wait for a free sequence; past it, 503 with Retry-After [default: 64]
    #[arg(long, value_name = "N")]
    pub max_queue: Option<u32>,
    /// Largest request body, e.g. 32MiB; past it, 413 [default: 32MiB]
    #[arg(long, value_name = "SIZE")]
    pub max_body_bytes: Option<String>,
    /// Longest time to the start of a response (a stream, once started, runs on), e.g. 10m;
    /// 0 turns it off [default: 10m]
    #[arg(long, value_name = "DURATION")]
    pub request_timeout: Option<String>,
    /// Longest time a client may take to send a request's headers, and the longest a
    /// keep-alive connection may idle, e.g. 30s [default: 30s]
    #[arg(long, value_name = "DURATION")]
    pub header_timeout: Option<String>,
    /// Longest time a client may take to send a request's whole body once its headers are
    /// in; past it, 408, e.g. 60s [default: 60s]
    #[arg(long, value_name = "DURATION")]
    pub body_timeout: Option<String>,
    /// Allow browser requests from this origin (repeatable; `*` for any) [default: none,
    /// CORS off]
    #[arg(long, value_name = "ORIGIN")]
    pub cors_origin: Vec<String>,
    /// When a finished reply's save is on disk: `before` its final event (`[DONE]`,
    /// `message_stop`, `response.completed`) or body is sent, so a reply the client has
    /// read survives a crash (no exit path loses a turn); or `after`, tens of ms sooner and
    /// lost to a crash in between. Tokens stream as they come either way [default: before]
    #[arg(long, value_enum, value_name = "WHEN")]
    pub durability: Option<Durability>,
    #[command(flatten)]
    pub models: ServeModelsArgs,
    #[command(flatten)]
    pub llama: LlamaArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    #[command(flatten)]
    pub tiers: TierArgs,
}

/// Without MODEL, `kvrun serve` serves every model in the models folder; these pick the
/// one unknown names get, name others, and share out memory.
#[derive(Debug, Args, Clone, Default)]
#[command(next_help_heading = "Models (kvrun serve without MODEL)")]
pub struct ServeModelsArgs {
    /// The model a request gets when its `model` names none of the server's models or
    /// aliases; `none` answers those with 404 [default: the config file's `default-model`,
    /// then KVRUN_MODEL, the config file's `model`, then gemma3 when it is pulled]
    #[arg(long, value_name = "MODEL|none")]
    pub default_model: Option<String>,
    /// Another name for a model, or a pattern of names (`claude-haiku-*=smollm2`);
    /// repeatable [default: the config file's `[model-aliases]` table]
    #[arg(long, value_name = "NAME=MODEL")]
    pub model_alias: Vec<String>,
    /// Memory every loaded model's weights, context and compute buffers share, e.g. 8GiB;
    /// past it, idle models are unloaded [default: 90% of the RAM available at start, less
    /// the warm tier's budget and 256 MiB of restore buffers]
    #[arg(long, value_name = "SIZE")]
    pub memory_budget: Option<String>,
    /// How long a model stays loaded after its last request, e.g. 5m; 0 unloads at once,
    /// -1 never; a request's `keep_alive` overrides it [default: 5m; -1 with MODEL]
    #[arg(long, value_name = "DURATION", allow_hyphen_values = true)]
    pub keep_alive: Option<String>,
    /// How long a request waits for busy models that hold the memory its model needs;
    /// then they stop admitting requests, finish their replies, save and unload, and the
    /// models take turns [default: 3s]
    #[arg(long, value_name = "DURATION")]
    pub swap_wait: Option<String>,
}

#[derive(Debug, Args)]
pub struct SessionShowArgs {
    pub name: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SessionNameArg {
    pub name: String,
}

#[derive(Debug, Args)]
pub struct SessionForkArgs {
    /// The session to copy.
    pub src: String,
    /// The new session's name.
    pub dst: String,
}

#[derive(Debug, Args)]
pub struct SessionExportArgs {
    pub name: String,
    /// The file to write.
    pub file: PathBuf,
}

#[derive(Debug, Args)]
pub struct SessionImportArgs {
    /// The exported file.
    pub file: PathBuf,
    /// Import under this name instead of the exported one.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The session's model (a path, or a name in the models folder), checked against the
    /// session's fingerprint [default: the model of that fingerprint in the models folder]
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
}

#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(flatten)]
    pub tiers: TierArgs,
}

#[derive(Debug, Args)]
pub struct GcArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PullArgs {
    /// What to download: omitted (or `default`) for both default models, `smollm2` (chat and
    /// run's default) or `gemma3` (serve's default) for one, an http(s):// URL, or
    /// hf:OWNER/REPO[@REVISION]/FILE.gguf.
    #[arg(value_name = "SOURCE")]
    pub source: Option<String>,
    /// Expected SHA-256 of the file (hex); a mismatch fails the pull and installs nothing.
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
    /// File name to save as in the models folder [default: the URL's last path segment]
    #[arg(long, value_name = "NAME")]
    pub output: Option<String>,
}

#[derive(Debug, Args)]
pub struct ModelsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to generate completions for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write kvrun.1 and one page per subcommand into this folder instead of printing.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The settings enums as clap values, spelled as their `as_str()` (the config file and the
/// session manifests use the same names). Implemented here so that `settings` needs no clap.
macro_rules! value_enum {
    ($ty:ident: $($variant:ident),+) => {
        impl clap::ValueEnum for $ty {
            fn value_variants<'a>() -> &'a [Self] {
                &[$($ty::$variant),+]
            }

            fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
                Some(clap::builder::PossibleValue::new(self.as_str()))
            }
        }
    };
}

value_enum!(KvType: F16, Q8_0, Q4_0);
value_enum!(FlashAttn: On, Off, Auto);
value_enum!(ContextOverflow: Truncate, Error);
value_enum!(Durability: Before, After);

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn settings_values_are_spelled_as_in_the_config_file() {
        use clap::ValueEnum;
        for kv in KvType::value_variants() {
            assert_eq!(KvType::from_str(kv.as_str(), false), Ok(*kv));
        }
        assert_eq!(KvType::from_str("q4_0", false), Ok(KvType::Q4_0));
        assert_eq!(FlashAttn::from_str("auto", false), Ok(FlashAttn::Auto));
        assert_eq!(
            ContextOverflow::from_str("error", false),
            Ok(ContextOverflow::Error)
        );
        assert!(KvType::from_str("q5_1", false).is_err());
    }

    #[test]
    fn chat_help_names_the_default_reply_limit() {
        let mut cli = Cli::command();
        let chat = cli.find_subcommand_mut("chat").unwrap();
        let n = chat
            .get_arguments()
            .find(|a| a.get_id() == "max_tokens")
            .unwrap();
        let help = n.get_help().unwrap().to_string();
        let limit = crate::chat::DEFAULT_CHAT_MAX_TOKENS;
        assert!(help.contains(&format!("[default: {limit}]")), "{help}");
    }
}
