//! Exit codes and the one-line error report.
//!
//! 0 success (also when stdout was closed early, as `kvrun run ... | head` does),
//! 1 a runtime failure, 2 a usage error (clap's own errors exit 2 as well; so does a saved
//! session that does not fit the model or settings given), 75 a session or the store held
//! by another kvrun process (sysexits' EX_TEMPFAIL: retry later). The code comes from the
//! error's variant ([`code_for`]), never from its text.

use std::process::ExitCode;

/// An error in how kvrun was invoked (bad input, not a failure of the work itself).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Work that another kvrun process holds up (a session or the store in use): retry later.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BusyError(pub String);

/// Shorthand for a [`BusyError`] inside `anyhow`.
pub fn busy(message: impl Into<String>) -> anyhow::Error {
    BusyError(message.into()).into()
}

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
    ExitCode::from(code_for(err))
}

/// A usage error: bad flags or input, or a session the given settings cannot load.
pub const USAGE: u8 = 2;
/// Another kvrun process holds the session or the store; the same command can succeed later.
pub const BUSY: u8 = 75;

/// The exit code for an error, from the first cause in its chain that has one.
pub fn code_for(err: &anyhow::Error) -> u8 {
    use crate::service::protocol::ServiceError;
    use crate::session::{LiveError, SessionError};
    use crate::store::StoreError;
    err.chain()
        .find_map(|e| {
            if e.downcast_ref::<UsageError>().is_some() {
                return Some(USAGE);
            }
            if e.downcast_ref::<BusyError>().is_some() {
                return Some(BUSY);
            }
            let live = e.downcast_ref::<LiveError>();
            if let Some(s) = e
                .downcast_ref::<SessionError>()
                .or_else(|| live.and_then(LiveError::session_error))
            {
                return match s {
                    SessionError::InUse { .. }
                    | SessionError::Store(StoreError::InUse { .. })
                    | SessionError::Object {
                        error: StoreError::InUse { .. },
                        ..
                    } => Some(BUSY),
                    _ if s.is_usage() => Some(USAGE),
                    _ => None,
                };
            }
            match e.downcast_ref::<ServiceError>() {
                Some(ServiceError::SessionInUse { .. }) => return Some(BUSY),
                Some(ServiceError::Incompatible { .. } | ServiceError::InvalidSetting(_)) => {
                    return Some(USAGE)
                }
                _ => {}
            }
            match e
                .downcast_ref::<StoreError>()
                .or_else(|| live.and_then(LiveError::store_error))
            {
                Some(StoreError::InUse { .. }) => Some(BUSY),
                _ => None,
            }
        })
        .unwrap_or(1)
}

/// The error chain on one line, skipping causes whose text the message already carries
/// (several error types include their source's text in their own message).
pub fn one_line(err: &anyhow::Error) -> String {
    crate::format::one_line_of(err.as_ref())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::protocol::ServiceError;
    use crate::session::error::{Incompatibility, SessionError};
    use crate::session::LiveError;
    use crate::store::StoreError;

    #[test]
    fn exit_codes_come_from_the_variants() {
        let incompatible = SessionError::Incompatible {
            name: "s".into(),
            why: Incompatibility::KvType {
                saved: "f16",
                now: "q8_0",
            },
        };
        let in_use = SessionError::InUse {
            name: "s".into(),
            pid: Some(1),
            command: None,
        };
        let store_busy = StoreError::InUse {
            what: "the store".into(),
        };
        let corrupt = SessionError::Corrupt {
            name: "s".into(),
            detail: "bad checksum".into(),
        };
        let cases: Vec<(anyhow::Error, u8)> = vec![
            (usage("bad flag"), USAGE),
            (incompatible.into(), USAGE),
            (in_use.into(), BUSY),
            (store_busy.into(), BUSY),
            (corrupt.into(), 1),
            (anyhow::anyhow!("anything else"), 1),
            // Context added on top keeps the variant's code.
            (usage("bad flag").context("running"), USAGE),
            (busy("held").context("session 's'"), BUSY),
            // Inside the live session's error and the engine's.
            (
                LiveError::Session(SessionError::InUse {
                    name: "s".into(),
                    pid: None,
                    command: None,
                })
                .into(),
                BUSY,
            ),
            (
                LiveError::Store(StoreError::InUse { what: "x".into() }).into(),
                BUSY,
            ),
            (LiveError::internal("a bug").into(), 1),
            (
                ServiceError::SessionInUse {
                    name: "s".into(),
                    detail: "decoding".into(),
                }
                .into(),
                BUSY,
            ),
            (
                ServiceError::Incompatible {
                    name: "s".into(),
                    detail: "kv type".into(),
                }
                .into(),
                USAGE,
            ),
            (ServiceError::QueueFull(3).into(), 1),
        ];
        for (err, code) in cases {
            assert_eq!(code_for(&err), code, "{err:#}");
        }
    }

    #[test]
    fn an_incompatibility_names_the_setting_and_the_fix() {
        let err = SessionError::Incompatible {
            name: "s".into(),
            why: Incompatibility::ContextTooSmall {
                tokens: 900,
                n_ctx: 512,
                needed: 1024,
            },
        };
        assert_eq!(
            err.to_string(),
            "session 's' holds 900 tokens but the context has room for 512; pass --ctx-size \
             1024 or more"
        );
    }
}
