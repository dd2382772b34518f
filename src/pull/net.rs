//! HTTP plumbing: one configured ureq agent, the index JSON fetch, and a resumable streaming
//! download that hashes as it writes.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::Duration;

use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};
use ureq::http::{header, Response};
use ureq::tls::{RootCerts, TlsConfig};
use ureq::Body;

use super::fsutil::{self, CHUNK};
use super::{PullError, PullReporter};

const USER_AGENT: &str = concat!("kvrun/", env!("CARGO_PKG_VERSION"));

/// Index documents are a few KB; the cap only guards against a misconfigured index URL
/// pointing at something huge.
const MAX_JSON_BYTES: u64 = 32 * 1024 * 1024;

/// A finished download: its total length and the sha256 of the whole file on disk.
#[derive(Debug)]
pub(super) struct Download {
    pub bytes: u64,
    pub sha256: String,
}

pub(super) struct Http {
    agent: ureq::Agent,
}

impl Http {
    pub(super) fn new() -> Self {
        // The platform verifier trusts the OS store (and SSL_CERT_FILE/SSL_CERT_DIR on
        // Linux), which is what makes kvrun work behind TLS-inspecting corporate proxies;
        // ureq's default would be the bundled Mozilla roots, which such proxies break.
        let tls = TlsConfig::builder()
            .root_certs(RootCerts::PlatformVerifier)
            .build();
        let config = ureq::Agent::config_builder()
            .tls_config(tls)
            // Statuses are handled here: 206/416 are part of the resume protocol.
            .http_status_as_error(false)
            .user_agent(USER_AGENT)
            .timeout_connect(Some(Duration::from_secs(30)))
            // No total timeout (multi-GB downloads on slow links are legitimate), but a stalled
            // connection must fail so the user can rerun and resume.
            .timeout_per_read(Some(Duration::from_secs(60)))
            .build();
        Http {
            agent: config.new_agent(),
        }
    }

    fn get(&self, url: &str, range_from: u64) -> Result<Response<Body>, PullError> {
        let mut request = self.agent.get(url);
        if range_from > 0 {
            request = request.header(header::RANGE, format!("bytes={range_from}-"));
        }
        request.call().map_err(|e| request_error(url, e))
    }

    /// GET a JSON document. Non-2xx statuses become [`PullError::Http`] so callers can react
    /// to 404 specifically.
    pub(super) fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, PullError> {
        let mut response = self.get(url, 0)?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(http_error(status, url));
        }
        response
            .body_mut()
            .with_config()
            .limit(MAX_JSON_BYTES)
            .read_json()
            .map_err(|e| match e {
                ureq::Error::Json(e) => PullError::Index(format!("invalid JSON from {url}: {e}")),
                other => request_error(url, other),
            })
    }

    /// Download `url` into `partial`, continuing from the bytes already there with a Range
    /// request. Falls back to a full download when the server ignores the range (200) or the
    /// partial file cannot be a prefix of the resource (bad Content-Range, 416 with another
    /// length). With `expected_size`, a complete partial file is not requested again, and a
    /// server announcing another length is rejected before anything is written.
    pub(super) fn download_resumable(
        &self,
        url: &str,
        partial: &Path,
        expected_size: Option<u64>,
        label: &str,
        reporter: &dyn PullReporter,
    ) -> Result<Download, PullError> {
        let mut have = fsutil::file_len(partial)?.unwrap_or(0);
        if expected_size.is_some_and(|size| have > size) {
            fsutil::remove_if_exists(partial)?;
            have = 0;
        }
        if have > 0 && expected_size == Some(have) {
            let sha256 = fsutil::hash_file(partial, reporter, Some(label))
                .map_err(|e| PullError::io(partial, e))?;
            return Ok(Download {
                bytes: have,
                sha256,
            });
        }

        // Hash the prefix before asking the server anything: for a multi-GB partial file this
        // takes seconds, which an open connection might not survive.
        let mut from = have;
        let mut prefix = Sha256::new();
        if from > 0 {
            let mut file = File::open(partial).map_err(|e| PullError::io(partial, e))?;
            let hashed =
                fsutil::hash_reader_into(&mut (&mut file).take(from), &mut prefix, reporter, false)
                    .map_err(|e| PullError::io(partial, e))?;
            if hashed != from {
                // Shrunk under us (another process?): resuming would splice garbage.
                from = 0;
                prefix = Sha256::new();
            }
        }
        // At most two requests: the ranged one, and a plain one if the range was unusable.
        loop {
            if from > 0 {
                reporter.note(&format!("{label}: resuming at byte {from}"));
            }
            let response = self.get(url, from)?;
            let status = response.status().as_u16();
            let content_range = header_str(&response, header::CONTENT_RANGE);
            match status {
                206 => match content_range.as_deref().and_then(parse_content_range) {
                    Some((start, total)) if start == from => {
                        let total = total
                            .or_else(|| response.body().content_length().map(|len| start + len));
                        return self.receive(
                            response,
                            url,
                            partial,
                            (from, prefix),
                            total,
                            expected_size,
                            label,
                            reporter,
                        );
                    }
                    _ if from > 0 => {
                        reporter.note(&format!("{label}: unusable partial response, restarting"));
                        from = 0;
                        prefix = Sha256::new();
                    }
                    _ => return Err(http_error(status, url)),
                },
                200..=299 => {
                    if from > 0 {
                        reporter.note(&format!(
                            "{label}: server does not support resuming, restarting"
                        ));
                    }
                    let total = response.body().content_length();
                    return self.receive(
                        response,
                        url,
                        partial,
                        (0, Sha256::new()),
                        total,
                        expected_size,
                        label,
                        reporter,
                    );
                }
                416 if from > 0 => {
                    // Range starts at/after the end: either the partial file is already the
                    // whole resource, or it belongs to a different (shorter) version of it.
                    let total = content_range.as_deref().and_then(parse_unsatisfied_total);
                    if total == Some(from) {
                        return Ok(Download {
                            bytes: from,
                            sha256: hex::encode(prefix.finalize()),
                        });
                    }
                    reporter.note(&format!("{label}: partial file is stale, restarting"));
                    from = 0;
                    prefix = Sha256::new();
                }
                _ => return Err(http_error(status, url)),
            }
        }
    }

    /// Stream a response body into `partial` after its first `from` bytes, whose digest state
    /// is `hasher`, so the returned digest covers the whole file without a second pass.
    #[allow(clippy::too_many_arguments)]
    fn receive(
        &self,
        response: Response<Body>,
        url: &str,
        partial: &Path,
        (from, mut hasher): (u64, Sha256),
        total: Option<u64>,
        expected_size: Option<u64>,
        label: &str,
        reporter: &dyn PullReporter,
    ) -> Result<Download, PullError> {
        if let (Some(total), Some(expected)) = (total, expected_size) {
            if total != expected {
                return Err(PullError::SizeMismatch {
                    what: url.to_string(),
                    expected,
                    actual: total,
                });
            }
        }
        let io_err = |e| PullError::io(partial, e);
        let mut file = fsutil::create_download_file(partial)?;
        // Drop anything past the resume offset (this also empties the file on a fresh start).
        file.set_len(from).map_err(io_err)?;
        file.seek(SeekFrom::Start(from)).map_err(io_err)?;
        reporter.begin(label, total);
        reporter.advance(from);

        let mut body = response.into_body().into_reader();
        let mut buf = vec![0u8; CHUNK];
        let mut got = from;
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(network_error(
                        url,
                        format!("connection lost after {got} bytes: {e}"),
                    ))
                }
            };
            file.write_all(&buf[..n]).map_err(io_err)?;
            hasher.update(&buf[..n]);
            got += n as u64;
            reporter.advance(n as u64);
            if let Some(expected) = expected_size.filter(|&e| got > e) {
                return Err(PullError::SizeMismatch {
                    what: url.to_string(),
                    expected,
                    actual: got,
                });
            }
        }
        reporter.finish();
        // ureq already fails a body shorter than Content-Length; this covers chunked bodies
        // whose total came from Content-Range.
        if let Some(total) = total.filter(|&t| t != got) {
            return Err(network_error(
                url,
                format!("connection closed after {got} of {total} bytes"),
            ));
        }
        Ok(Download {
            bytes: got,
            sha256: hex::encode(hasher.finalize()),
        })
    }
}

fn header_str(response: &Response<Body>, name: header::HeaderName) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `bytes START-END/TOTAL` → (START, TOTAL); TOTAL may be `*` (unknown).
fn parse_content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes ")?;
    let (range, total) = rest.split_once('/')?;
    let (start, _end) = range.split_once('-')?;
    let start = start.trim().parse().ok()?;
    let total = match total.trim() {
        "*" => None,
        t => Some(t.parse().ok()?),
    };
    Some((start, total))
}

/// `bytes */TOTAL` (sent with 416) → TOTAL.
fn parse_unsatisfied_total(value: &str) -> Option<u64> {
    value.trim().strip_prefix("bytes */")?.trim().parse().ok()
}

pub(super) fn http_error(status: u16, url: &str) -> PullError {
    PullError::Http {
        status,
        url: url.to_string(),
    }
}

fn network_error(url: &str, detail: String) -> PullError {
    PullError::Network {
        host: host_of(url).to_string(),
        url: url.to_string(),
        detail,
    }
}

/// Turn ureq's failure to get a response into a one-line error naming the host.
fn request_error(url: &str, error: ureq::Error) -> PullError {
    let detail = match error {
        ureq::Error::StatusCode(status) => return http_error(status, url),
        ureq::Error::BadUri(reason) => {
            return PullError::BadSpec(format!("invalid URL {url}: {reason}"))
        }
        ureq::Error::HostNotFound => "host not found (DNS lookup failed)".to_string(),
        ureq::Error::ConnectionFailed => "connection failed".to_string(),
        ureq::Error::Timeout(what) => format!("timed out ({what})"),
        ureq::Error::Tls(reason) => format!("TLS error: {reason}"),
        ureq::Error::Rustls(e) => format!("TLS error: {e}"),
        ureq::Error::Io(e) => e.to_string(),
        other => other.to_string(),
    };
    network_error(url, detail)
}

/// Host (with port) of an http(s) URL, for error messages.
pub(super) fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit('@').next().unwrap_or(authority)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_range_parsing() {
        assert_eq!(
            parse_content_range("bytes 10-99/100"),
            Some((10, Some(100)))
        );
        assert_eq!(parse_content_range("bytes 0-0/*"), Some((0, None)));
        assert_eq!(parse_content_range("items 0-1/2"), None);
        assert_eq!(parse_unsatisfied_total("bytes */42"), Some(42));
        assert_eq!(parse_unsatisfied_total("bytes 0-1/42"), None);
    }

    #[test]
    fn host_extraction() {
        assert_eq!(host_of("https://pypi.org/pypi/x/json"), "pypi.org");
        assert_eq!(host_of("http://u:p@127.0.0.1:8080?x"), "127.0.0.1:8080");
        assert_eq!(host_of("https://huggingface.co"), "huggingface.co");
    }
}
