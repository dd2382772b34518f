//! The paged KV manager's pure parts: llama.cpp's per-sequence KV blob cut into fixed-size
//! token pages and reassembled ([`blob`]), the layout that says how to read it ([`layout`]),
//! and page identities and records ([`page`]). No model is needed to test any of it; the
//! `session` module drives it against a live context.

pub mod blob;
pub mod layout;
pub mod memory;
pub mod page;
pub mod window;

pub use layout::KvLayout;
pub use memory::{CellExt, MemoryFacts, MemoryKind};
pub use page::{PageKey, TailRecord};

#[derive(Debug, thiserror::Error)]
pub enum KvError {
    #[error(transparent)]
    Blob(#[from] blob::BlobError),
    #[error("kv layout: {0}")]
    Layout(String),
    #[error("kv record: {0}")]
    Record(String),
}
