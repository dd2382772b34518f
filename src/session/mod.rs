//! Persistent sessions: a manifest (token log, chat messages, settings, and the KV pages that
//! cache them) per named session, over the shared content-addressed object store.
//!
//! - [`manifest`]: what a session records; [`catalog`]: the sessions folder (locks, list,
//!   fork, rm, gc); [`export`]: one-file export and validated import.
//! - [`live`]: a session bound to a live context (capture, save, restore, prefix reuse);
//!   [`capture`]: reading page rows out of llama.cpp and putting them back.
//! - [`identity`]: model fingerprints and the KV settings that shape page bytes;
//!   [`binding`]: what a process's sessions share, and the one way front ends open them.

pub mod binding;
mod cache_miss;
pub mod capture;
pub mod catalog;
pub mod error;
pub mod export;
pub mod family;
pub mod identity;
pub mod kv_error;
pub mod live;
pub mod manifest;
mod manifest_file;
pub mod name;
mod row;
pub mod saved_logs;
#[cfg(test)]
mod test_support;

pub use binding::SessionBinding;
pub use cache_miss::{CacheMiss, MissReason};
pub use catalog::{RemoveReport, SessionCatalog, SessionSummary};
pub use error::SessionError;
pub use export::{export, import, ExportReport};
pub use kv_error::LiveError;
pub use manifest::{KvIdentity, KvSnapshot, ModelIdentity, SessionManifest, MANIFEST_FORMAT};
pub use name::validate_name;
pub use row::SessionRow;
