//! Pulling a `.gguf` from any HTTP(S) URL (Hugging Face `resolve` URLs included).

use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::fsutil;
use super::net::Http;
use super::source::output_file_name;
use super::{PullError, PullOutcome, PullReporter};

/// Every GGUF file starts with these bytes. Checking them catches servers that answer 200
/// with an HTML page (login walls, error pages) before such a file is installed as a model.
const GGUF_MAGIC: &[u8; 4] = b"GGUF";

/// Download `url` into `models_dir`, as `file_name` or else the URL's last path segment.
///
/// The download goes to `<name>.partial` and resumes from it on the next call after an
/// interruption. With `expected_sha256` the result must match it (a mismatching file is
/// deleted, never installed); without it an existing `<name>` counts as already present.
pub fn pull_url(
    url: &str,
    models_dir: &Path,
    file_name: Option<&str>,
    expected_sha256: Option<&str>,
    reporter: &dyn PullReporter,
) -> Result<PullOutcome, PullError> {
    let lower = url.to_ascii_lowercase();
    if !(lower.starts_with("http://") || lower.starts_with("https://")) {
        return Err(PullError::BadSpec(format!("not an http(s) URL: {url}")));
    }
    let expected = expected_sha256.map(str::to_ascii_lowercase);
    if let Some(sha) = &expected {
        if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(PullError::BadSpec(format!(
                "expected sha256 must be 64 hex digits, got {sha:?}"
            )));
        }
    }
    let name = output_file_name(url, file_name)?;
    fsutil::ensure_dir(models_dir)?;
    let dest = models_dir.join(&name);

    if let Some(len) = fsutil::file_len(&dest)? {
        match &expected {
            None => {
                return Ok(PullOutcome {
                    path: dest,
                    bytes: len,
                    already_present: true,
                })
            }
            Some(expected) => {
                let sha = fsutil::hash_file(&dest, reporter, Some(&format!("verifying {name}")))
                    .map_err(|e| PullError::io(&dest, e))?;
                if &sha == expected {
                    return Ok(PullOutcome {
                        path: dest,
                        bytes: len,
                        already_present: true,
                    });
                }
                reporter.note(&format!(
                    "existing {name} does not match the expected sha256; downloading it again"
                ));
            }
        }
    }

    let partial = models_dir.join(format!("{name}.partial"));
    let download = Http::new().download_resumable(url, &partial, None, &name, reporter)?;
    if let Some(expected) = expected {
        if download.sha256 != expected {
            // Delete rather than keep: resuming on top of bad bytes could never succeed.
            fsutil::remove_if_exists(&partial)?;
            return Err(PullError::ChecksumMismatch {
                what: name,
                expected,
                actual: download.sha256,
            });
        }
    }
    check_magic(url, &partial)?;
    fsutil::install(&partial, &dest)?;
    Ok(PullOutcome {
        path: dest,
        bytes: download.bytes,
        already_present: false,
    })
}

/// Reject (and delete) a download that is not a GGUF file.
fn check_magic(url: &str, partial: &Path) -> Result<(), PullError> {
    let mut magic = Vec::with_capacity(GGUF_MAGIC.len());
    File::open(partial)
        .and_then(|f| f.take(GGUF_MAGIC.len() as u64).read_to_end(&mut magic))
        .map_err(|e| PullError::io(partial, e))?;
    if magic == GGUF_MAGIC {
        return Ok(());
    }
    fsutil::remove_if_exists(partial)?;
    Err(PullError::NotGguf {
        url: url.to_string(),
        magic: String::from_utf8_lossy(&magic).into_owned(),
    })
}
