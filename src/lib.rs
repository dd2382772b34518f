//! kvrun: local single-user agent inference on GGUF models, with a persistent, paged KV
//! cache. The binary (`main.rs`) is a thin shell around this library; the integration tests
//! and benchmarks use the library directly where they need to.
//!
//! Map of the crate, from the front ends down to the llama.cpp adapter:
//! - Front ends: [`cli`] (clap definitions only) and [`commands`] (one folder per command
//!   family); [`tui`] (the full-screen chat) and [`ui`] (progress bars and notes on
//!   stderr); [`server`] (`kvrun serve`: OpenAI and Anthropic HTTP).
//! - The engine: [`service`], one thread owning the context, the sessions and the tiers,
//!   reached through a `ServiceHandle` by every front end: requests with their own reply
//!   channels and cancel tokens, continuous batching, a prefix index across tiers, and the
//!   session commands (open, save, reset, fork). [`chat`] is the chat front ends' client of
//!   it: the active conversation, and the [`chat::protocol`] the TUI and the REPL speak;
//!   `kvrun run --session` is another client (`commands/run/session.rs`).
//! - Dialogues: [`dialogue`] (messages and their token log), [`template`] (chat
//!   templates), [`tools`] (tool calls and reasoning in replies), [`sequence`] (the token
//!   log and the canonical decode schedule).
//! - Persistence: [`session`] (manifests, save and restore through the pages), [`tiers`]
//!   (what each tier drops, the warm RAM pool, budgets, system memory), [`kv`] (pages and blob parsing, no model
//!   needed), [`store`] (the content-addressed object store, atomic writes, locks).
//! - The llama.cpp adapter: [`llama`], the only module with FFI and `unsafe` (the compiler
//!   refuses `unsafe` anywhere else).
//! - Setup: [`settings`] (domain types and defaults, no clap), [`config`] (the config file),
//!   [`resolve`] (flag over config over default), [`paths`], [`models`] (which model),
//!   [`gguf`] (GGUF validation before llama.cpp sees a file), [`pull`] (model downloads).
//! - Test models: [`synth`] (the GGUF writer and the random-weight models the tests and
//!   benchmarks write).
//! - Benchmarks: [`bench`], the programs behind `kvrun bench …` (one module per benchmark,
//!   with their shared harness); `commands/bench.rs` only dispatches to them.
//!
//! Data flows one way: `layering_tests.rs` fails on an arrow back up, and
//! `file_graph_tests.rs` on any loop between two files.
//! - Small shared pieces: [`token`] (the token id), [`clock`], [`format`](mod@format)
//!   (number formats, one-line errors),
//!   [`interrupt`] (Ctrl-C and quit), [`logging`], [`exit`] (exit codes).

#![deny(unsafe_code)]

pub mod bench;
pub mod chat;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod dialogue;
// The FFI boundary: the only module allowed `unsafe` (the compiler refuses it elsewhere).
pub mod exit;
pub mod format;
pub mod gguf;
pub mod interrupt;
pub mod kv;
#[allow(unsafe_code)]
pub mod llama;
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
pub mod synth;
pub mod template;
pub mod tiers;
pub mod token;
pub mod tools;
pub mod tui;
pub mod ui;

#[cfg(test)]
mod file_graph_tests;
#[cfg(test)]
mod layering_tests;
