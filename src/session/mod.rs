//! Persistent sessions: a manifest (token log, chat messages, settings, and the KV pages that
//! cache them) per named session, over the shared content-addressed object store.

pub mod manifest;

pub use manifest::{KvIdentity, KvSnapshot, ModelIdentity, SessionManifest, MANIFEST_FORMAT};
