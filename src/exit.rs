//! Exit codes and the one-line error report.
//!
//! 0 success (also when stdout was closed early, as `kvrun run ... | head` does),
//! 1 a runtime failure, 2 a usage error (clap's own errors exit 2 as well).

use std::process::ExitCode;

/// An error in how kvrun was invoked (bad input, not a failure of the work itself).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Shorthand for a usage error inside `anyhow`.
pub fn usage(message: impl Into<String>) -> anyhow::Error {
    UsageError(message.into()).into()
}

/// Prints the error chain on one line to stderr and picks the exit code.
pub fn report(err: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(err) {
        return ExitCode::SUCCESS;
    }
    let line = format!("{err:#}").replace('\n', " ");
    eprintln!("error: {line}");
    if err
        .chain()
        .any(|e| e.downcast_ref::<UsageError>().is_some())
    {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}

/// A closed stdout (the reader went away) is not an error for a CLI.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || e.downcast_ref::<crate::sequence::GenerateError>()
                .is_some_and(|g| matches!(g, crate::sequence::GenerateError::Output(io) if io.kind() == std::io::ErrorKind::BrokenPipe))
    })
}
