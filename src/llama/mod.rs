//! The llama.cpp adapter: the only module that names `llama_cpp_2` or holds `unsafe`.
//!
//! Everything above it speaks in kvrun's own terms: [`TokenId`]s, [`LlamaSettings`](crate::settings::LlamaSettings),
//! byte blobs of KV state. That keeps the token log, the paged KV manager and the UI free of
//! FFI details, and gives one place to audit when the pinned llama.cpp changes.

mod context;
mod device;
mod guidance;
mod memory;
mod model;
mod sampler;
mod utf8;

use std::sync::OnceLock;

/// Re-exported so that code talking to the adapter names one token type.
pub use crate::token::TokenId;
pub use context::{batch_span, schedule_batch, BatchEntry, Context, ContextInfo, KvCapture};
pub use device::{gpu_devices, gpu_offload_supported, GpuDevice};
pub use guidance::Guidance;
pub use memory::prefault;
pub use model::{ChatMessage, Model, ModelFacts};
pub use sampler::{Grammar, Sampler, TokenLogprob};
pub use utf8::Utf8Stream;

#[derive(Debug, thiserror::Error)]
pub enum LlamaError {
    #[error("llama.cpp backend failed to start: {0}")]
    Backend(String),
    #[error("llama.cpp could not load model {path}: {detail}")]
    LoadModel { path: String, detail: String },
    #[error("llama.cpp could not create a context ({detail}); try a smaller --ctx-size")]
    CreateContext { detail: String },
    #[error("the model has no chat template; use --raw for plain completion")]
    NoChatTemplate,
    #[error("applying the chat template failed: {0}")]
    ChatTemplate(String),
    #[error(
        "a context of {cells} tokens needs {} of KV in device memory, and {devices} has {} \
         free: give a smaller --ctx-size, or fewer --gpu-layers (0 keeps the KV in RAM)",
        crate::format::human_bytes(*needed),
        crate::format::human_bytes(*free)
    )]
    DeviceMemory {
        cells: u32,
        needed: u64,
        free: u64,
        devices: String,
    },
    #[error("decode failed at position {pos}: {detail}")]
    Decode { pos: usize, detail: String },
    #[error("the context is full: {needed} tokens needed, {n_ctx} available (raise --ctx-size)")]
    ContextFull { needed: usize, n_ctx: usize },
    #[error("token id {0} is outside the model's vocabulary")]
    BadToken(TokenId),
    #[error("reading the KV state from llama.cpp failed: {0}")]
    StateGet(String),
    #[error("llama.cpp refused the KV state (size {size} bytes); the sequence was cleared")]
    StateSet { size: usize },
    #[error("sequence {seq} is not one of this context's {n_seq_max} sequences")]
    NoSuchSequence { seq: i32, n_seq_max: u32 },
    #[error("{0}")]
    Unsupported(String),
}

/// Keeps llama.cpp's abort report to its one message line on stderr. On an assert, ggml
/// attaches gdb to print a backtrace, and gdb writes it to *stdout*, where it would corrupt
/// `--json` and piped output. ggml skips that when `GGML_NO_BACKTRACE` is set (ggml.c
/// `ggml_print_backtrace`). Call first thing in `main`, while the process has one thread.
pub fn keep_abort_reports_off_stdout() {
    if std::env::var_os("GGML_NO_BACKTRACE").is_none() {
        std::env::set_var("GGML_NO_BACKTRACE", "1");
    }
}

static BACKEND: OnceLock<Result<llama_cpp_2::llama_backend::LlamaBackend, String>> =
    OnceLock::new();

/// Starts llama.cpp once per process and routes its log into `tracing` (silent unless
/// `-v` or `KVRUN_LOG` enables the `llama_cpp_2` target).
fn backend() -> Result<&'static llama_cpp_2::llama_backend::LlamaBackend, LlamaError> {
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            llama_cpp_2::llama_backend::LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| LlamaError::Backend(e.clone()))
}

/// A short identification of the llama.cpp build, recorded in session manifests.
pub fn llama_build_info() -> String {
    format!("llama-cpp-sys-2 {}", LLAMA_CPP_SYS_VERSION)
}

/// The pinned llama-cpp-sys-2 version (see Cargo.toml); its KV blob format is kvrun's
/// on-disk contract.
pub const LLAMA_CPP_SYS_VERSION: &str = "0.1.161";
