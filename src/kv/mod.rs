//! The paged KV manager: llama.cpp's per-sequence KV blob cut into fixed-size token pages
//! and reassembled. Pure Rust, testable without a model.

pub mod blob;
