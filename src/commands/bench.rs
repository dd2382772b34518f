//! `kvrun bench`: hands each subcommand's arguments to its program in [`crate::bench`].

use std::process::ExitCode;

use anyhow::Result;

use crate::bench;
use crate::cli::BenchCommand;
use crate::env::Env;

pub fn run(env: &Env, command: BenchCommand) -> Result<ExitCode> {
    match command {
        BenchCommand::Speed(args) => bench::speed::run(env, args),
        BenchCommand::Restore(args) => bench::restore::run(env, args),
        BenchCommand::Switch(args) => bench::switch::run(env, args),
        BenchCommand::Serve(args) => bench::serve::run(env, args),
        BenchCommand::Batch(args) => bench::batch::run(env, args),
        BenchCommand::Ctx(args) => bench::ctx::run(env, args),
        BenchCommand::KvTypes(args) => bench::kv_types::run(env, args),
        BenchCommand::Swap(args) => bench::swap::run(env, args),
        BenchCommand::Checkpoints(args) => bench::checkpoints::run(env, args),
        BenchCommand::Grammar(args) => bench::grammar::run(env, args),
    }
}
