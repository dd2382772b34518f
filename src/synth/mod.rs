//! Synthetic GGUF models, written in pure Rust: the tests' tiny random-weight models and the
//! benchmarks' shaped ones. Nothing here is on a user's path through kvrun; it sits apart
//! from [`crate::gguf`] (the product's reader and checks) so that the readers stay small.
//!
//! - [`GgufWriter`] writes GGUF v3 files from metadata and tensors, streamed or in memory.
//! - [`write_tiny_llama`] makes a small random-weight llama (f32, f16 or Q4_0 weights) that
//!   llama.cpp loads and runs; [`TinyLlamaSpec`] scales it up to a real model's shape.
//! - [`write_tiny_recurrent`] makes the recurrent and hybrid architectures
//!   ([`TinyRecurrentArch`]) from llama.cpp's tensor lists, with state that carries;
//!   [`qwen35_writer`] and [`granite_writer`] write hybrids with a released model's cache.

mod granite_shape;
mod q4_0;
mod recurrent_parts;
mod rng;
mod tiny;
mod tiny_qwen35;
mod tiny_recurrent;
mod writer;

#[cfg(test)]
mod tests;

pub use granite_shape::{granite_writer, GraniteSpec};
pub use tiny::{tiny_llama_writer, write_tiny_llama, TinyLlamaSpec, WeightFormat, CHATML_TEMPLATE};
pub use tiny_qwen35::Qwen35Spec;
pub use tiny_recurrent::{tiny_recurrent_writer, write_tiny_recurrent, TinyRecurrentArch};

/// A qwen35 model of `spec`'s sizes, random weights from `seed`.
pub fn qwen35_writer(spec: &Qwen35Spec, seed: u64) -> GgufWriter {
    tiny_qwen35::qwen35_writer(spec, seed)
}
pub use writer::{GgufWriter, TensorSource};
