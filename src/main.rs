//! kvrun's entry point: parse, set up logging, dispatch, map the error to an exit code.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    kvrun::llama::keep_abort_reports_off_stdout();
    let cli = kvrun::cli::Cli::parse();
    kvrun::logging::init(cli.verbose, cli.quiet);
    match kvrun::commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => kvrun::exit::report(&err),
    }
}
