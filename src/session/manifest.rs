//! A session's manifest: everything needed to resume it, and the only place that says which
//! KV objects a session uses. The token log is the truth; the page lists are a cache index.

use serde::{Deserialize, Serialize};

use super::CacheMiss;
use crate::llama::{ChatMessage, TokenId};
use crate::sequence::BatchStarts;
use crate::settings::{LlamaSettings, SamplingSettings};
use crate::store::ObjectId;
use crate::template::TemplateIdentity;

/// Bumped when the manifest's meaning changes incompatibly.
pub const MANIFEST_FORMAT: u32 = 1;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionManifest {
    pub format: u32,
    pub name: String,
    pub created_unix: u64,
    pub updated_unix: u64,
    pub model: ModelIdentity,
    pub kv: KvIdentity,
    /// llama.cpp build that wrote the KV pages.
    pub llama_build: String,
    /// llama.cpp options the session was created with; later commands reuse them unless
    /// told otherwise. (Stored under its first name, `engine`, so older manifests read.)
    #[serde(rename = "engine")]
    pub llama: LlamaSettings,
    pub sampling: SamplingSettings,
    /// The token log: the truth from which the KV can always be rebuilt by prefilling.
    pub tokens: Vec<TokenId>,
    /// Chat messages (empty for raw sessions).
    pub messages: Vec<ChatMessage>,
    /// Length of the chat template's rendering of `messages` when the last turn ended; new
    /// turns tokenize only the text after it.
    pub rendered_len: usize,
    /// Whether this is a raw (no chat template) session.
    pub raw: bool,
    /// The chat template the last turn was rendered with; `None` for raw text (`--raw`, the
    /// server's /v1/completions) and for sessions saved before kvrun recorded it (unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template: Option<TemplateIdentity>,
    /// The last turn whose prompt stopped extending the earlier rendering: where, and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_miss: Option<CacheMiss>,
    /// The last reply was cut short (Ctrl-C, quit, a signal, a lost terminal): its text and
    /// tokens so far are kept, and the next turn starts after them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// Started by the server for a conversation no client named (a generated name): such
    /// sessions are collected first under the cold budget.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unnamed: bool,
    /// Tokens of the log the last request's prompt covered (the server's sessions; 0
    /// otherwise). A prompt that extends at least this far continues the conversation.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prompt_tokens: usize,
    /// Never collected under the cold budget (the server's pin).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
    /// The KV snapshot; `None` when only the token log is kept.
    pub snapshot: Option<KvSnapshot>,
    /// For a log kept without a snapshot (a model whose memory kvrun does not page): where
    /// its decode batches started, so that a restore recomputes it in the same batches as
    /// its first run and continues exactly as that run would have.
    #[serde(default, skip_serializing_if = "BatchStarts::is_empty")]
    pub replay: BatchStarts,
    /// For such a log: llama.cpp's whole state of the sequence after its first `kv_len`
    /// tokens, which a restore loads instead of recomputing them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<StateCheckpoint>,
    /// For a recurrent or hybrid log: llama.cpp's partial state (the recurrent part) after
    /// some of its page boundaries, in increasing order ([`crate::sequence::Checkpoints`]).
    /// A prompt that parts from the log inside it starts from the last one before the
    /// parting point (a hybrid's attention cells come from `state`, cut there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<StateCheckpoint>,
}

/// A sequence's whole state, as llama.cpp serializes it, kept as one object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StateCheckpoint {
    pub kv_len: usize,
    pub object: ObjectId,
}

impl SessionManifest {
    /// The batches the log was first decoded in, up to where the next turn's decode
    /// started: what recomputing it replays to come out bit-identical.
    pub fn replay_starts(&self) -> BatchStarts {
        match &self.snapshot {
            Some(s) => s.batch_starts.for_replay(s.kv_len),
            None => self.replay.clone(),
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Which model the KV belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelIdentity {
    /// Where the model was when the session was saved (used when no model is given).
    pub path: String,
    /// Display name.
    pub name: String,
    /// Header, tensor table, file size and sampled tensor data (see `session::fingerprint`).
    pub fingerprint: String,
}

/// The context settings that shape KV bytes. A snapshot restores only into a context whose
/// identity matches (`n_ctx` must merely be large enough).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvIdentity {
    pub kv_type: crate::settings::KvType,
    pub flash_attn: crate::settings::FlashAttn,
    pub n_ctx: u32,
    pub n_seq_max: u32,
    pub page_tokens: u32,
    /// llama.cpp's per-section row layout (`kv::KvLayout::encode`), once known.
    pub layout: Option<String>,
}

/// The KV cache of `tokens[..kv_len]`, as pages in the object store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KvSnapshot {
    /// Tokens covered by the snapshot (the log's last token is decoded after a restore).
    pub kv_len: usize,
    /// Full-attention rows of each full page, in order: page `i` covers tokens
    /// `i*page_tokens .. (i+1)*page_tokens`. Ids chain over the token prefix.
    pub pages: Vec<ObjectId>,
    /// Sliding-window rows of the pages a restore point needs (the last window before the
    /// end and before the last page boundary), as (page index, object).
    pub swa_pages: Vec<(usize, ObjectId)>,
    /// Sliding-window rows of earlier pages (iSWA only), kept so that another conversation
    /// sharing a prefix of this log (an agent's system prompt and tools) can restore up to
    /// any page boundary, not only this session at its end. Only prefix reuse reads them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefix_swa_pages: Vec<(usize, ObjectId)>,
    /// Rows of the tokens after the last full page (`kv_len % page_tokens` of them).
    pub tail: Option<ObjectId>,
    /// Where the decode batches that computed these cells started, so that a recompute
    /// after a partial restore decodes the same batches (absent from older manifests).
    #[serde(default, skip_serializing_if = "BatchStarts::is_empty")]
    pub batch_starts: BatchStarts,
}

impl SessionManifest {
    /// Every object this session keeps alive: what a restore reads, and the earlier pages'
    /// window rows and the checkpoints that only prefix reuse needs.
    pub fn referenced_objects(&self) -> impl Iterator<Item = ObjectId> + '_ {
        let prefix_swa = self.snapshot.iter().flat_map(|s| &s.prefix_swa_pages);
        self.restore_objects()
            .chain(prefix_swa.map(|(_, id)| *id))
            .chain(self.checkpoints.iter().map(|c| c.object))
    }

    /// The objects a restore of this session reads (what prefetching warms): everything
    /// referenced but the earlier pages' window rows, which only prefix reuse needs.
    pub fn restore_objects(&self) -> impl Iterator<Item = ObjectId> + '_ {
        self.snapshot
            .iter()
            .flat_map(|s| {
                s.pages
                    .iter()
                    .copied()
                    .chain(s.swa_pages.iter().map(|(_, id)| *id))
                    .chain(s.tail)
            })
            .chain(self.state.iter().map(|s| s.object))
    }
}
