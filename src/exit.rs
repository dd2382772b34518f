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
    eprintln!("error: {}", one_line(err));
    let usage = err.chain().any(|e| {
        e.downcast_ref::<UsageError>().is_some()
            || e.downcast_ref::<crate::session::SessionError>()
                .is_some_and(|s| s.is_usage())
    });
    if usage {
        ExitCode::from(2)
    } else {
        ExitCode::FAILURE
    }
}

/// The error chain on one line, skipping causes whose text the message already carries
/// (several error types include their source's text in their own message).
pub fn one_line(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string().replace('\n', " ");
        if line.contains(text.trim()) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text.trim());
    }
    line
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
