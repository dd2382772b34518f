//! GGUF model files, in pure Rust (no llama.cpp).
//!
//! - [`read_header`] parses and validates a GGUF v2/v3 header against the real file size
//!   without touching tensor data, so a corrupt or truncated download is reported as a clear
//!   [`GgufError`] instead of llama.cpp aborting the process.
//! - [`GgufFile::check_loadable`] checks what llama.cpp's loader asserts on instead of
//!   returning an error: per-architecture hyperparameter ranges and vocabulary invariants.
//! - [`GgufFile::info`] summarizes a model ([`ModelInfo`]); [`fingerprint`] identifies one
//!   by its header (used to key persisted KV caches to the exact model file).
//! - [`GgufWriter`] writes GGUF v3 files; [`write_tiny_llama`] uses it to produce a small
//!   random-weight llama model that llama.cpp can load and run, for tests.

mod error;
mod file;
mod hparams;
mod info;
mod input;
mod q4_0;
mod reader;
mod tiny;
mod tiny_recurrent;
mod types;
mod vocab;
mod writer;

#[cfg(test)]
mod loadable_tests;
#[cfg(test)]
mod tests;

pub use error::GgufError;
pub use file::{GgufFile, TensorInfo};
pub use info::{file_type_name, ModelInfo};
pub use input::MAX_HEADER_BYTES;
pub use reader::{fingerprint, read_header, DEFAULT_ALIGNMENT};
pub use tiny::{tiny_llama_writer, write_tiny_llama, TinyLlamaSpec, WeightFormat, CHATML_TEMPLATE};
pub use tiny_recurrent::{tiny_recurrent_writer, write_tiny_recurrent, TinyRecurrentArch};
pub use types::{GgmlType, GgufArray, GgufValue, GgufValueType, StringArray};
pub use writer::{GgufWriter, TensorSource};
