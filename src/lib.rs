//! kvrun: local single-user agent inference on GGUF models, with a persistent, paged KV
//! cache. The binary (`main.rs`) is a thin shell around this library; the integration tests
//! and benchmarks use the library directly where they need to.
//!
//! Map of the crate:
//! - [`cli`]: clap definitions; [`commands`]: one module per subcommand.
//! - [`engine`]: the llama.cpp adapter, the only place with FFI and `unsafe`.
//! - [`sequence`]: the token log and the canonical decode schedule.
//! - [`gguf`]: GGUF validation (before llama.cpp sees a file) and a writer for test models.
//! - [`pull`]: model downloads.
//! - [`settings`], [`config`], [`paths`], [`models`]: what to run with, and where things live.
//! - [`service`]: the engine as a service (one thread owns the context, batches every
//!   conversation's decode, and serves any number of front ends over its protocol).
//! - [`ui`]: progress bars and terminal output for the CLI; [`tui`]: the full-screen chat.

#![deny(unsafe_code)]

pub mod chat;
pub mod cli;
pub mod commands;
pub mod config;
pub mod conversation;
// The FFI boundary: the only module allowed `unsafe` (the compiler refuses it elsewhere).
#[allow(unsafe_code)]
pub mod engine;
pub mod exit;
pub mod format;
pub mod gguf;
pub mod interrupt;
pub mod kv;
pub mod logging;
pub mod models;
pub mod paths;
pub mod pull;
pub mod resolve;
pub mod sequence;
pub mod server;
pub mod service;
pub mod session;
pub mod settings;
pub mod store;
pub mod template;
pub mod tiers;
pub mod token;
pub mod tools;
pub mod tui;
pub mod ui;
