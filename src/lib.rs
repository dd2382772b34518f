//! kvrun: local single-user agent inference on GGUF models, with a persistent, paged KV
//! cache. The binary (`main.rs`) is a thin shell around this library; the integration tests
//! and benchmarks use the library directly where they need to.
//!
//! Map of the crate, from the front ends down to the llama.cpp adapter:
//! - Front ends: [`cli`] (clap definitions only) and [`commands`] (one folder per command
//!   family), with [`env`] (folders, config, the model load), which the benchmarks share;
//!   [`tui`] (the full-screen chat) and [`ui`] (progress bars and notes on stderr);
//!   [`server`] (`kvrun serve`: OpenAI and Anthropic HTTP).
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
//! - Small shared pieces: [`token`] (the token id), [`clock`], [`format`](mod@format)
//!   (number formats, one-line errors), [`interrupt`] (Ctrl-C and quit), [`logging`],
//!   [`exit`] (exit codes).
//!
//! Data flows one way: `layering_tests.rs` puts every top-level module on a floor and fails
//! on an arrow back up or across one, and `file_graph_tests.rs` on any loop between two
//! files.
//!
//! **One request, from HTTP to llama.cpp and back** (`POST /v1/messages`, streamed):
//!
//! 1. `server/mod.rs` `app()` puts `router()` behind `guard.rs`'s layers; the route calls
//!    `server/anthropic/mod.rs` `messages()`.
//! 2. `messages_inner()` parses the body into `anthropic/parse.rs` `MessagesRequest` (its
//!    `conversation()` drops the billing block); `server/render.rs` `render_off_thread()` runs
//!    `Model::render_chat()` and `tokenize_rendered()` on a blocking thread;
//!    `server/naming.rs` `conversation_key()` names the conversation.
//! 3. `server/generation.rs` `start()` builds a `service::protocol::Request` (tokens, sampling,
//!    grammar, a `CancelToken`, a reply channel); `ServiceHandle::submit()` (`service/handle.rs`)
//!    refuses it past `--parallel` + `--max-queue` or sends `Command::Generate` to the engine.
//! 4. On the `kvrun-service` thread, `service/engine/mod.rs` `run()` passes it to
//!    `Engine::command()`, which queues it, then calls `step()` (`generate.rs`): `take_built()`
//!    (a larger context, if ready), `admit()`, `decode_step()`, `finish_ended()`.
//! 5. `admit.rs`: `target()` (`routing.rs`) picks the family member the prompt extends;
//!    `begin()` makes room (`tiers/evict.rs` `coolest()`) and builds the `Sampler`; `prefix.rs`
//!    `plan()` picks the own cells, another sequence's (`Context::share_range`), a recurrent or
//!    hybrid sequence's checkpoint (`sequence/checkpoints.rs`, loaded by `load_checkpoint()`)
//!    or pages (`session/live/reuse.rs` `reuse_prefix()`; unpaged memory:
//!    `session/live/checkpoints.rs`).
//! 6. `decode_step()`: `batch_plan.rs` `plan_step()` packs the batch; `llama/context.rs`
//!    `Context::decode_many()` fills a `LlamaBatch` and calls llama.cpp's decode;
//!    `Context::sample_at()` samples; `accept()` appends the token, holds back possible stop
//!    strings (`stop.rs`) and sends `Reply::Token`. A filled page goes to
//!    `LiveSession::capture_filled_page()` and the session's writer thread; on recurrent and
//!    hybrid models `checkpoint()` keeps the state at the page boundary.
//! 7. `finish()` sends `Reply::Done`; `saving.rs` `save_reply()` →
//!    `LiveSession::save_in_background()` queues the commit (`session/live/writer.rs`,
//!    `commit.rs`); `retention.rs` `enforce_cold_budget()` follows.
//! 8. Meanwhile `server/sse.rs` `respond()` streams what `anthropic/stream.rs` `produce()` makes
//!    of each `Generation::next()`. A client that leaves drops it, which cancels the request.

#![deny(unsafe_code)]

pub mod bench;
pub mod chat;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod dialogue;
pub mod env;
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
#[cfg(test)]
mod limits_tests;
