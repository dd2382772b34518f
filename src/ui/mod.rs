//! Terminal output for the CLI: progress bars (indicatif) and notes on stderr. Library code
//! reports through small traits (`pull::PullReporter`, `sequence::SyncObserver`); this
//! module draws them. stdout is reserved for results.

mod progress;

use std::io::IsTerminal;

pub use progress::{BytesBar, PrefillBar};

/// How chatty the CLI is on stderr.
#[derive(Debug, Clone, Copy)]
pub struct Ui {
    pub quiet: bool,
    /// Draw progress bars (stderr is a terminal and not quiet).
    pub bars: bool,
}

impl Ui {
    pub fn new(quiet: bool) -> Self {
        Self {
            quiet,
            bars: !quiet && std::io::stderr().is_terminal(),
        }
    }

    /// A note for the user on stderr (suppressed by --quiet).
    pub fn note(&self, message: impl std::fmt::Display) {
        if !self.quiet {
            eprintln!("{message}");
        }
    }

    /// A warning on stderr (always shown).
    pub fn warn(&self, message: impl std::fmt::Display) {
        eprintln!("warning: {message}");
    }
}
