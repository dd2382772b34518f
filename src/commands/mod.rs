//! One module per subcommand. Each takes its parsed arguments and the shared [`Env`], does
//! its work, and returns the exit code; errors bubble up as `anyhow` with context.

mod bench;
mod bench_batch;
mod bench_ctx;
mod bench_kv_types;
mod bench_restore;
mod bench_serve;
mod bench_switch;
mod bench_synthetic;
mod chat;
mod chat_line;
mod completions;
mod gc;
mod man;
mod models;
mod pull;
mod remote;
mod run;
mod run_session;
mod run_tools;
mod serve;
mod session;
mod session_setup;
mod stats;
mod top;

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::cli::{Cli, Command};
use crate::config::FileConfig;
use crate::exit::usage;
use crate::llama::Model;
use crate::models::ModelChoice;
use crate::paths::Paths;
use crate::ui::Ui;

pub use man::generated_files;

/// What every command may need: folders, the config file, and how to talk to the user.
pub struct Env {
    pub paths: Paths,
    pub config: FileConfig,
    pub ui: Ui,
}

impl Env {
    fn load(quiet: bool) -> Result<Self> {
        let paths = Paths::resolve()?;
        let config = FileConfig::load(&paths.config_file).map_err(|e| usage(e.to_string()))?;
        Ok(Self {
            paths,
            config,
            ui: Ui::new(quiet),
        })
    }
}

pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    let env = Env::load(cli.quiet)?;
    match cli.command {
        Command::Chat(args) => chat::run(&env, args),
        Command::Run(args) => run::run(&env, args),
        Command::Serve(args) => serve::run(&env, args),
        Command::Top(args) => top::run(&env, args),
        Command::Pull(args) => pull::run(&env, args),
        Command::Models(args) => models::run(&env, args),
        Command::Session(command) => session::run(&env, command),
        Command::Gc(args) => gc::run(&env, args),
        Command::Stats(args) => stats::run(&env, args),
        Command::Bench(crate::cli::BenchCommand::Speed(args)) => bench::run(&env, args),
        Command::Bench(crate::cli::BenchCommand::Restore(args)) => bench_restore::run(&env, args),
        Command::Bench(crate::cli::BenchCommand::Switch(args)) => bench_switch::run(&env, args),
        Command::Bench(crate::cli::BenchCommand::Serve(args)) => bench_serve::run(&env, args),
        Command::Bench(crate::cli::BenchCommand::Batch(args)) => bench_batch::run(&env, args),
        Command::Bench(crate::cli::BenchCommand::Ctx(args)) => bench_ctx::run(&env, args),
        Command::Bench(crate::cli::BenchCommand::KvTypes(args)) => bench_kv_types::run(&env, args),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
    }
}

/// Validates the chosen model file and loads it, returning the load time in ms.
/// The chat template to use instead of the model's own: the flag, else the config file's.
fn chat_template_override<'a>(arg: &'a crate::cli::ModelArg, env: &'a Env) -> Option<&'a str> {
    arg.chat_template
        .as_deref()
        .or(env.config.chat_template.as_deref())
}

/// Applies `--chat-template` (or the config key) to a loaded model.
fn apply_chat_template(model: &mut Model, arg: &crate::cli::ModelArg, env: &Env) -> Result<()> {
    if let Some(spec) = chat_template_override(arg, env) {
        model.set_chat_template(spec)?;
    }
    Ok(())
}

fn load_model(choice: &ModelChoice, gpu_layers: u32) -> Result<(Model, f64)> {
    crate::models::validate(choice)?;
    let started = Instant::now();
    let model = Model::load(&choice.path, gpu_layers)
        .with_context(|| format!("loading {}", choice.path.display()))?;
    Ok((model, started.elapsed().as_secs_f64() * 1e3))
}
