//! Errors of the blob codec. Each renders as one line naming the byte offset and field, so a
//! rejected blob can be diagnosed from a log line alone.

use std::fmt;

/// Names a field in an error: which section and which layer (index among K layers, or among the
/// layers that have V) it belongs to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Field {
    pub name: &'static str,
    pub section: Option<u32>,
    pub layer: Option<u32>,
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)?;
        match (self.section, self.layer) {
            (Some(s), Some(l)) => write!(f, " (section {s}, layer {l})"),
            (Some(s), None) => write!(f, " (section {s})"),
            _ => Ok(()),
        }
    }
}

/// Every way decoding, encoding or assembling can fail; each renders as one line.
#[derive(Clone, PartialEq, Eq, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlobError {
    #[error("kv blob: bad magic {found:#010x} at byte 0 (expected 0xaf143cd8)")]
    BadMagic { found: u32 },
    #[error(
        "kv blob: truncated at byte {offset} reading {field}: needs {need} bytes, {left} left"
    )]
    Truncated {
        offset: usize,
        field: Field,
        need: u64,
        left: usize,
    },
    #[error("kv blob: {field} at byte {offset} is {value}: {why}")]
    BadValue {
        offset: usize,
        field: Field,
        value: i128,
        why: &'static str,
    },
    #[error("kv blob: {left} trailing bytes at byte {offset} after the last section")]
    TrailingBytes { offset: usize, left: usize },
    #[error("kv blob shape: {0}")]
    Shape(&'static str),
    #[error("kv layout: {0}")]
    InvalidLayout(&'static str),
    #[error("kv layout encoding: {field} at byte {offset}: {why}")]
    LayoutEncoding {
        offset: usize,
        field: &'static str,
        why: &'static str,
    },
    #[error("kv rows: cells {start}..{end} out of range for a section of {len} cells")]
    CellRange {
        start: usize,
        end: usize,
        len: usize,
    },
    #[error("kv rows: the section's cells or layout no longer match its data")]
    Tampered,
    #[error("kv assemble: {what}: expected {expected}, got {got}")]
    Mismatch {
        what: &'static str,
        expected: u64,
        got: u64,
    },
    #[error("kv assemble: {0}")]
    Assemble(&'static str),
}
