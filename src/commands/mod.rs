//! The subcommands, grouped by family as the CLI groups them. Each takes its parsed
//! arguments and the shared [`Env`], does its work, and returns the exit code; errors bubble
//! up as `anyhow` with context.
//!
//! - [`run`]: `kvrun run`, one prompt (plain, or a turn of a session with `--session`).
//! - [`chat`]: `kvrun chat`, the TUI or the line REPL.
//! - [`session`]: `kvrun session …` and `kvrun gc`.
//! - [`serve`]: `kvrun serve`.
//! - [`monitor`]: `kvrun stats` and `kvrun top`, of this machine or of a running server.
//! - [`models`]: `kvrun models` and `kvrun pull`.
//! - [`bench`]: `kvrun bench …`, dispatched to the programs in [`crate::bench`].
//! - Shared by the families: [`crate::env`] (folders, config, the model load; the
//!   benchmarks share it too) and [`input`] (prompt reading and the checks that it may fit).

mod bench;
mod chat;
mod completions;
mod input;
mod man;
mod models;
mod monitor;
mod run;
mod serve;
mod session;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command};
use crate::env::Env;
pub use man::generated_files;

pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    let env = Env::load(cli.quiet)?;
    match cli.command {
        Command::Chat(args) => chat::run(&env, args),
        Command::Run(args) => run::run(&env, args),
        Command::Serve(args) => serve::run(&env, args),
        Command::Top(args) => monitor::top::run(&env, args),
        Command::Pull(args) => models::pull::run(&env, args),
        Command::Models(args) => models::run(&env, args),
        Command::Session(command) => session::run(&env, command),
        Command::Gc(args) => session::gc::run(&env, args),
        Command::Stats(args) => monitor::stats::run(&env, args),
        Command::Bench(command) => bench::run(&env, command),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
    }
}
