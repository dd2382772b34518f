//! The messages between the chat thread ([`crate::chat::client`]: a worker thread that keeps
//! the active conversation and is itself a client of the service engine) and any front end:
//! the TUI or the line-mode REPL.
//!
//! The chat thread never blocks on the UI: it sends [`ChatEvent`]s over a channel, and the
//! UI sends [`UserCommand`]s back. Nothing here names ratatui or llama.cpp.

use serde::Serialize;

use crate::llama::GpuDevice;
// The sessions list's rows and the tiers they name are the server's and `kvrun sessions
// --remote`'s too: one type each, below every front end.
pub use crate::session::SessionRow;
pub use crate::tiers::Tier;

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UserCommand {
    /// A message to the model.
    Send(String),
    /// Stop the reply being generated (Ctrl-C).
    Stop,
    /// Save the active session now.
    Save,
    /// Copy the active session under a new name and continue in the copy.
    Fork(String),
    /// Switch to (or create) a session, restoring it through the tiers.
    Switch(String),
    /// Refresh the sessions list.
    ListSessions,
    /// Forget the active conversation.
    Reset,
    /// Continue the conversation with another model (a .gguf path, a name in the models
    /// folder, or smollm2/gemma3), in a new session: a fork, since KV belongs to one model.
    Model(String),
    /// Save and leave (front ends also raise the chat thread's quit flag, which stops a reply
    /// being generated; the command itself is only read between turns).
    Quit,
}

/// Which long operation a progress event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgressKind {
    /// Loading the model (bytes).
    LoadModel,
    /// Prefilling a prompt (tokens).
    Prefill,
    /// Restoring a session from a tier (bytes).
    Restore,
}

/// Use of one tier: bytes against its budget, pages, and which sessions are in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TierUsage {
    pub used_bytes: u64,
    /// None when the tier has no budget of its own.
    pub budget_bytes: Option<u64>,
    pub pages: u64,
    pub sessions: Vec<String>,
    /// Tokens served from this tier since start (hits).
    pub hit_tokens: u64,
}

/// Everything the memory panel shows; sent at least once a second and after every move.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemorySnapshot {
    /// GPUs; empty on a machine without one (the hot tier then lives in RAM).
    pub gpus: Vec<GpuDevice>,
    pub hot: TierUsage,
    /// The hot tier's budget: the context's cells, shared by the hot sessions...
    pub hot_cells: u64,
    /// ...and how many of them hold tokens.
    pub hot_cells_used: u64,
    /// What the context may grow to (`--ctx-size auto`; equal to `hot_cells` when fixed).
    pub hot_cells_ceiling: u64,
    pub warm: TierUsage,
    pub cold: TierUsage,
    /// Tokens recomputed by prefill since start.
    pub prefill_tokens: u64,
    /// This process's resident memory.
    pub process_rss_bytes: u64,
    pub ram_total_bytes: u64,
    pub ram_available_bytes: u64,
    /// The filesystem holding the cold store.
    pub disk_total_bytes: u64,
    pub disk_free_bytes: u64,
    /// The last move between tiers, e.g. "refactor-agent: 18,432 tokens promoted cold→hot
    /// in 412 ms".
    pub last_move: Option<String>,
    /// A server's models and the memory budget they share (`kvrun top`; empty in a chat).
    pub models: Vec<ModelRow>,
    pub model_budget_bytes: u64,
}

/// One model of a server, as the memory panel shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelRow {
    pub id: String,
    /// "loaded", "loading", "unloading" or "unloaded".
    pub state: String,
    /// What it holds while loaded (weights, context and compute), else 0.
    pub bytes: u64,
    /// Seconds since its last request ended, while loaded and idle.
    pub idle_secs: Option<u64>,
}

impl MemorySnapshot {
    /// The tiers' totals in one line, e.g. for the TUI's /stats.
    pub fn summary(&self) -> String {
        use crate::format::{human_bytes, thousands};
        format!(
            "hot {} ({} of {} cells) · warm {} · cold {} · served {} hot, {} warm, {} cold, {} \
             prefilled",
            human_bytes(self.hot.used_bytes),
            thousands(self.hot_cells_used),
            thousands(self.hot_cells),
            human_bytes(self.warm.used_bytes),
            human_bytes(self.cold.used_bytes),
            thousands(self.hot.hit_tokens),
            thousands(self.warm.hit_tokens),
            thousands(self.cold.hit_tokens),
            thousands(self.prefill_tokens)
        )
    }
}

/// A chat message shown in the conversation pane.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShownMessage {
    /// "user", "assistant" or "system".
    pub role: String,
    pub content: String,
}

/// What the chat thread reports.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatEvent {
    /// The model is loaded and the context ready.
    Ready {
        model: String,
        n_ctx: u32,
        /// Whether layers run on a GPU (else the hot tier lives in RAM).
        gpu: bool,
    },
    /// A long operation advanced: `done` of `total` units (tokens or bytes) at `rate`
    /// units per second.
    Progress {
        kind: ProgressKind,
        done: u64,
        total: u64,
        rate: f64,
    },
    /// A piece of the reply, as it is generated.
    Token(String),
    /// The reply is complete (or was stopped).
    TurnDone {
        prefilled: usize,
        prefill_tokens_per_s: f64,
        generated: usize,
        decode_tokens_per_s: f64,
        stopped: bool,
    },
    /// Live figures while a turn decodes (about twice a second): the active session's
    /// tokens in the context, and the hot tier's cells, bytes and pages.
    Live {
        used: usize,
        hot_cells: u64,
        hot_bytes: u64,
        hot_pages: u64,
    },
    /// Context use after a turn or switch.
    Context {
        used: usize,
        n_ctx: u32,
    },
    Saved {
        session: String,
        ms: f64,
        bytes: u64,
    },
    Restored {
        session: String,
        tokens: usize,
        ms: f64,
        from: Tier,
    },
    /// The active session changed; its conversation so far.
    Switched {
        session: String,
        history: Vec<ShownMessage>,
    },
    /// Boxed: by far the largest event, and one a second.
    Memory(Box<MemorySnapshot>),
    Sessions(Vec<SessionRow>),
    /// Something failed; the session stays usable.
    Error(String),
    /// A note for the status line.
    Info(String),
    /// The chat thread has stopped (after Quit, or a fatal error).
    Exited,
}
