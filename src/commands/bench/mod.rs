//! `kvrun bench`: the benchmark programs. Each prints tables and asserts nothing; timings
//! belong here, never in the tests. [`harness`] holds what several of them share: prompt
//! tokens, child processes, the page cache, a prefilled session.

mod agent_prompt;
mod batch;
mod checkpoints;
mod ctx;
mod engine;
mod grammar;
mod harness;
mod kv_types;
mod llama_server;
mod restore;
mod serve;
mod serve_compare;
mod speed;
mod swap;
mod switch;
mod synthetic;

use std::process::ExitCode;

use anyhow::Result;

use super::Env;
use crate::cli::BenchCommand;

pub fn run(env: &Env, command: BenchCommand) -> Result<ExitCode> {
    match command {
        BenchCommand::Speed(args) => speed::run(env, args),
        BenchCommand::Restore(args) => restore::run(env, args),
        BenchCommand::Switch(args) => switch::run(env, args),
        BenchCommand::Serve(args) => serve::run(env, args),
        BenchCommand::Batch(args) => batch::run(env, args),
        BenchCommand::Ctx(args) => ctx::run(env, args),
        BenchCommand::KvTypes(args) => kv_types::run(env, args),
        BenchCommand::Swap(args) => swap::run(env, args),
        BenchCommand::Checkpoints(args) => checkpoints::run(env, args),
        BenchCommand::Grammar(args) => grammar::run(env, args),
    }
}
