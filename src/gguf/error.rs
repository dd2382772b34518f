//! Errors from reading and validating a GGUF file. Every message is one line and names
//! what was wrong and where, because it is shown to a user who picked a bad model file.

/// Why a file was rejected.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    #[error("I/O error reading GGUF file: {0}")]
    Io(#[from] std::io::Error),

    #[error("not a regular file (a FIFO, device or socket cannot be a model)")]
    NotRegularFile,

    /// The bytes found are kept for debugging but never shown: the file may be anything
    /// (a path from an untrusted source could name /etc/shadow).
    #[error("not a GGUF file (it does not start with \"GGUF\")")]
    BadMagic { found: Vec<u8> },

    #[error("unsupported GGUF version {version} (supported: 2 and 3){hint}")]
    UnsupportedVersion { version: u32, hint: &'static str },

    #[error("truncated GGUF file: end of file while reading {what} at offset {offset}")]
    Truncated { what: String, offset: u64 },

    #[error("corrupt GGUF file: {what} at offset {offset} says {count}, but only {remaining} bytes are left")]
    LengthOutOfRange {
        what: String,
        offset: u64,
        count: u64,
        remaining: u64,
    },

    #[error(
        "GGUF file rejected: {what} at offset {offset} is {count}, above the limit of {limit}"
    )]
    LimitExceeded {
        what: String,
        offset: u64,
        count: u64,
        limit: u64,
    },

    #[error(
        "GGUF header is larger than the {limit}-byte limit (reading {what} at offset {offset})"
    )]
    HeaderTooLarge {
        what: String,
        offset: u64,
        limit: u64,
    },

    #[error("corrupt GGUF file: bad value type {type_id} for {what} at offset {offset}")]
    BadValueType {
        what: String,
        type_id: u32,
        offset: u64,
    },

    #[error("corrupt GGUF file: metadata key {index} at offset {offset} is empty")]
    EmptyKey { index: u64, offset: u64 },

    #[error("corrupt GGUF file: duplicate metadata key '{0}'")]
    DuplicateKey(String),

    #[error("invalid GGUF metadata '{key}': {reason}")]
    BadMetadata { key: String, reason: String },

    #[error("corrupt GGUF file: duplicate tensor name '{0}'")]
    DuplicateTensor(String),

    #[error("corrupt GGUF file: tensor '{name}': {reason}")]
    BadTensor { name: String, reason: String },

    #[error("unsupported GGUF file: tensor '{name}' has unknown ggml type {type_id}")]
    UnknownGgmlType { name: String, type_id: u32 },

    #[error("corrupt GGUF file: tensor '{name}' offset {offset} is not a multiple of the alignment {alignment}")]
    TensorMisaligned {
        name: String,
        offset: u64,
        alignment: u64,
    },

    #[error("corrupt or incomplete GGUF file: tensor '{name}' data out of range (bytes {start}..{end}, file is {file_size} bytes)")]
    TensorOutOfRange {
        name: String,
        start: u64,
        end: u64,
        file_size: u64,
    },

    #[error("corrupt GGUF file: tensors '{first}' and '{second}' overlap")]
    TensorOverlap { first: String, second: String },

    #[error("unsupported GGUF file: tensor '{name}' is at offset {offset}, but llama.cpp requires tensors packed in table order (expected {expected})")]
    TensorNotPacked {
        name: String,
        offset: u64,
        expected: u64,
    },

    #[error("GGUF file changed while it was being read (size was {expected}, now {actual})")]
    FileChanged { expected: u64, actual: u64 },
}

impl GgufError {
    /// Prefix the `what` of a low-level read error with the item being parsed, e.g. a
    /// failed u64 read becomes "value of 'llama.block_count' (u64)". Only runs on error,
    /// so the hot path never formats strings.
    pub(crate) fn context(mut self, ctx: impl FnOnce() -> String) -> Self {
        match &mut self {
            GgufError::Truncated { what, .. }
            | GgufError::LengthOutOfRange { what, .. }
            | GgufError::LimitExceeded { what, .. }
            | GgufError::HeaderTooLarge { what, .. }
            | GgufError::BadValueType { what, .. } => {
                *what = format!("{} ({what})", ctx());
            }
            _ => {}
        }
        self
    }
}

/// A file-supplied name made safe for a one-line message: control characters escaped and
/// long names cut, since a corrupt file can put anything there.
pub(crate) fn shown(s: &str) -> String {
    const MAX_CHARS: usize = 80;
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i == MAX_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
