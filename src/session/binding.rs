//! What every session of one process shares, so that each front end opens sessions the
//! same way: the catalog, the model's identity (fingerprinted once per process, not per
//! session), the context's KV identity, the engine settings, the model's memory kind and the warm
//! pool.
//!
//! A session's life is then: [`SessionCatalog::lock_and_read`] → [`SessionBinding::open`] →
//! [`LiveSession::check_compatible`] → restore → turns and saves → drop (which releases
//! the lock).

use std::path::Path;
use std::sync::Arc;

use super::catalog::SessionCatalog;
use super::identity::{kv_identity, model_identity, FingerprintError};
use super::live::LiveSession;
use super::manifest::{KvIdentity, ModelIdentity, SessionManifest};
use super::saved_logs::SavedLogs;
use crate::kv::MemoryKind;
use crate::llama::{Context, Model};
use crate::settings::{LlamaSettings, SamplingSettings};
use crate::store::SessionLock;
use crate::tiers::WarmPool;

pub struct SessionBinding<'c> {
    catalog: &'c SessionCatalog,
    model: ModelIdentity,
    kv: KvIdentity,
    llama: LlamaSettings,
    memory: MemoryKind,
    warm: Option<Arc<WarmPool>>,
    /// The saved logs of this model, by content (reuse to the token across sessions).
    saved_logs: Arc<SavedLogs>,
}

impl<'c> SessionBinding<'c> {
    /// Binds sessions to `model` (read from `model_path`) in `ctx`. Fingerprints the model:
    /// a few small reads of its file.
    pub fn new(
        catalog: &'c SessionCatalog,
        model_path: &Path,
        model: &Model,
        ctx: &Context<'_>,
        llama: LlamaSettings,
    ) -> Result<Self, FingerprintError> {
        let identity = model_identity(model_path, &model.facts().description)?;
        let memory = model.facts().memory;
        if let Some(why) = memory.unpaged_reason() {
            tracing::warn!(
                "{} has {} memory; {why}",
                model.facts().description,
                memory.name()
            );
        }
        Ok(Self {
            catalog,
            saved_logs: Arc::new(SavedLogs::new(&identity.fingerprint)),
            model: identity,
            kv: kv_identity(ctx.info()),
            llama,
            memory,
            warm: None,
        })
    }

    /// Sessions opened from now on read and write pages through `warm` (the RAM tier).
    pub fn with_warm_pool(mut self, warm: Arc<WarmPool>) -> Self {
        self.warm = Some(warm);
        self
    }

    pub fn model(&self) -> &ModelIdentity {
        &self.model
    }

    /// The live session `name`, held by `lock`; `saved` is its manifest when it has one
    /// (from [`SessionCatalog::lock_and_read`]).
    pub fn open(
        &self,
        name: &str,
        lock: SessionLock,
        saved: Option<SessionManifest>,
        sampling: SamplingSettings,
    ) -> LiveSession<'c> {
        let mut live = LiveSession::new(
            self.catalog,
            name,
            lock,
            saved,
            self.model.clone(),
            self.kv.clone(),
            self.llama.clone(),
            sampling,
            self.memory,
        );
        if let Some(warm) = &self.warm {
            live.set_warm_pool(warm.clone());
        }
        live.set_saved_logs(self.saved_logs.clone());
        live
    }
}
