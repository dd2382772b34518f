//! `kvrun completions SHELL`

use std::process::ExitCode;

use anyhow::Result;
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs};

pub fn run(args: CompletionsArgs) -> Result<ExitCode> {
    let mut out = std::io::stdout();
    clap_complete::generate(args.shell, &mut Cli::command(), "kvrun", &mut out);
    Ok(ExitCode::SUCCESS)
}
