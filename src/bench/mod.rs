//! The benchmark programs behind `kvrun bench …` (`commands/bench.rs` dispatches to them).
//! Each prints tables and asserts nothing; timings belong here, never in the tests.
//! [`harness`] holds what several of them share: prompt tokens, child processes, the page
//! cache, a prefilled session.

mod agent_prompt;
pub(crate) mod batch;
pub(crate) mod checkpoints;
pub(crate) mod ctx;
pub(crate) mod grammar;
mod harness;
pub(crate) mod kv_types;
mod llama_server;
pub(crate) mod restore;
pub(crate) mod serve;
mod serve_compare;
pub(crate) mod speed;
mod streams;
pub(crate) mod swap;
mod swap_mixed;
pub(crate) mod switch;
mod synthetic;
