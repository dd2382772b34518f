//! The manifest file: `kvrun-session <format> <blake3 hex of the JSON>\n`, then the JSON.
//!
//! The header line is checked before the JSON is trusted. The format number comes first so
//! that a newer kvrun can change everything after it; the checksum catches a bit flip or a
//! file cut short by something other than kvrun (kvrun itself only replaces it atomically).
//! The JSON is compact: a long session's token log is most of it, and pretty-printing puts
//! every token on its own indented line, doubling the bytes rewritten on each save.

use serde::Deserialize;

use super::error::SessionError;
use super::manifest::{SessionManifest, MANIFEST_FORMAT};

/// First word of the header line.
const HEADER_WORD: &str = "kvrun-session";
/// Largest manifest file read (and embedded in an export): far above any real one (a
/// million-token log is ~7 MB of JSON), so a sparse or planted file cannot make a read
/// unbounded.
pub(crate) const MAX_MANIFEST_BYTES: u64 = 256 << 20;

type Result<T, E = SessionError> = std::result::Result<T, E>;

/// What is wrong with a manifest file's bytes, before a session name is attached.
#[derive(Debug)]
pub(crate) enum ManifestFileError {
    Corrupt(String),
    TooNew(u32),
}

impl ManifestFileError {
    pub(crate) fn for_session(self, name: &str) -> SessionError {
        match self {
            Self::Corrupt(detail) => SessionError::Corrupt {
                name: name.into(),
                detail,
            },
            Self::TooNew(format) => SessionError::TooNew {
                name: name.into(),
                format,
            },
        }
    }
}

/// The bytes of a manifest file: header line, then JSON.
pub(crate) fn encode_manifest(manifest: &SessionManifest) -> Result<Vec<u8>> {
    let json = serde_json::to_vec(manifest).map_err(|e| SessionError::Corrupt {
        name: manifest.name.clone(),
        detail: format!("cannot encode the manifest: {e}"),
    })?;
    let mut out = format!(
        "{HEADER_WORD} {} {}\n",
        manifest.format,
        blake3::hash(&json).to_hex()
    )
    .into_bytes();
    out.extend_from_slice(&json);
    Ok(out)
}

/// Parses and verifies a manifest file (everything except that its name fits its folder).
pub(crate) fn decode_manifest(bytes: &[u8]) -> Result<SessionManifest, ManifestFileError> {
    use ManifestFileError::Corrupt;
    // The header line is at most ~90 bytes; a file without a newline early on is not ours.
    let newline = bytes
        .iter()
        .take(128)
        .position(|&b| b == b'\n')
        .ok_or_else(|| Corrupt("no `kvrun-session` header line".into()))?;
    let (line, json) = (&bytes[..newline], &bytes[newline + 1..]);
    let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
    let [word, format, checksum] = fields[..] else {
        return Err(Corrupt("malformed header line".into()));
    };
    if word != HEADER_WORD.as_bytes() {
        return Err(Corrupt(
            "not a kvrun session manifest (bad header line)".into(),
        ));
    }
    let format: u32 = std::str::from_utf8(format)
        .ok()
        .filter(|f| !f.is_empty() && f.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|f| f.parse().ok())
        .ok_or_else(|| Corrupt("malformed format number in the header line".into()))?;
    let valid_hex = checksum.len() == 64
        && checksum
            .iter()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !valid_hex {
        return Err(Corrupt("malformed checksum in the header line".into()));
    }
    if blake3::hash(json).to_hex().as_bytes() != checksum {
        return Err(Corrupt(
            "checksum mismatch (the file was damaged or edited)".into(),
        ));
    }
    if format != MANIFEST_FORMAT {
        // A newer format is believed only when the checksummed JSON agrees, so a flipped
        // digit in the header reads as corruption, not as "upgrade kvrun".
        #[derive(Deserialize)]
        struct FormatOnly {
            format: u32,
        }
        return match serde_json::from_slice::<FormatOnly>(json) {
            Ok(f) if f.format == format && format > MANIFEST_FORMAT => {
                Err(ManifestFileError::TooNew(format))
            }
            _ => Err(Corrupt(format!("unsupported manifest format {format}"))),
        };
    }
    let manifest: SessionManifest =
        serde_json::from_slice(json).map_err(|e| Corrupt(format!("invalid manifest: {e}")))?;
    if manifest.format != format {
        return Err(Corrupt(format!(
            "the header says format {format}, the manifest {}",
            manifest.format
        )));
    }
    Ok(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kv::blob::fake_cache::for_a_while;
    use std::time::Duration;

    #[test]
    fn random_mutations_never_panic_nor_decode_to_another_manifest() {
        let original = crate::session::test_support::manifest("m", &[], &[], None);
        let bytes = encode_manifest(&original).unwrap();
        assert_eq!(decode_manifest(&bytes).unwrap(), original);
        for_a_while(Duration::from_secs(2), |rng| {
            let mutated = rng.mutate(&bytes);
            if let Ok(m) = decode_manifest(&mutated) {
                assert_eq!(m, original, "a mutation decoded to another manifest");
            }
        });
    }
}
