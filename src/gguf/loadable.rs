//! Whether llama.cpp can load a file without aborting: the checks of [`super::hparams`] and
//! [`super::vocab`] on a parsed header.

use super::error::GgufError;
use super::file::GgufFile;

impl GgufFile {
    /// Checks what llama.cpp asserts on (aborting the process) rather than reports: the
    /// architecture's hyperparameters and the vocabulary. [`super::read_header`] has already
    /// checked the file's structure.
    pub fn check_loadable(&self) -> Result<(), GgufError> {
        super::hparams::check(self)?;
        super::vocab::check(self)
    }
}
