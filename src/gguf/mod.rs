//! GGUF model files, in pure Rust (no llama.cpp).
//!
//! - [`read_header`] parses and validates a GGUF v2/v3 header against the real file size
//!   without touching tensor data, so a corrupt or truncated download is reported as a clear
//!   [`GgufError`] instead of llama.cpp aborting the process.
//! - [`GgufFile::check_loadable`] checks what llama.cpp's loader asserts on instead of
//!   returning an error: per-architecture hyperparameter ranges and vocabulary invariants.
//! - [`GgufFile::info`] summarizes a model ([`ModelInfo`]); [`fingerprint`] identifies one
//!   by its header (used to key persisted KV caches to the exact model file).
//!
//! Writing GGUF files is not the product's job: the writer and the synthetic models the
//! tests and benchmarks make live in [`crate::synth`].

mod error;
mod file;
mod hparams;
mod info;
mod input;
mod kv_size;
mod loadable;
mod reader;
mod types;
mod vocab;

#[cfg(test)]
mod tests;

pub use error::GgufError;
pub use file::{GgufFile, TensorInfo};
pub use info::{file_type_name, ModelInfo};
pub use input::MAX_HEADER_BYTES;
pub use kv_size::{kv_values_per_cell, MemoryEstimate};
pub use reader::{
    fingerprint, read_header, DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_DIMS, MAX_TENSOR_NAME,
};
pub use types::{GgmlType, GgufArray, GgufValue, GgufValueType, StringArray};
