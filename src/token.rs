//! The token id, kvrun's one word for a position in a model's vocabulary. It lives apart
//! from `llama` so that the pure layers (the paged KV in `kv`, the token log) can name it
//! without depending on the llama.cpp adapter; `llama` re-exports it.

/// A token id in the model's vocabulary (llama.cpp's `llama_token`).
pub type TokenId = i32;
