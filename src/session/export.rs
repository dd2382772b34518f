//! One self-contained file per session, for backup or moving to another machine.
//!
//! # Format (version 01)
//!
//! ```text
//! magic           8  b"KVREXP01"
//! manifest len    8  u64 little-endian
//! manifest        …  the manifest file's bytes exactly as stored (header line + JSON)
//! object count    4  u32 little-endian
//! per object:
//!   id           32
//!   kind          1  store::ObjectKind byte
//!   payload len   8  u64 little-endian
//!   payload       …
//!   checksum     32  blake3 of the payload
//! file checksum  32  blake3 of every byte before it
//! ```
//!
//! Import validates the whole file before it writes anything: lengths are checked against
//! the file's size before anything is read or allocated, every checksum is verified, and
//! the objects must be exactly those the manifest references. Payloads are streamed on both
//! sides, so a session larger than memory exports and imports; import therefore reads the
//! file twice (verify, then copy), and re-checks each payload's checksum on the second pass.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::catalog::{distinct_objects, SessionCatalog};
use super::error::SessionError;
use super::identity::{bind_snapshot, find_model, model_identity};
use super::manifest::SessionManifest;
use super::manifest_file::{decode_manifest, ManifestFileError, MAX_MANIFEST_BYTES};
use super::name::validate_name;
use crate::store::fsutil::open_given_regular;
use crate::store::{write_atomic_with, ObjectId, ObjectKind};

pub const EXPORT_MAGIC: [u8; 8] = *b"KVREXP01";
const SUM_LEN: u64 = 32;
/// Smallest encoding of one object: id, kind, payload length, checksum.
const MIN_OBJECT_LEN: u64 = 32 + 1 + 8 + SUM_LEN;

type Result<T, E = SessionError> = std::result::Result<T, E>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExportReport {
    pub objects: u64,
    /// Size of the export file.
    pub bytes: u64,
}

/// Writes session `name` and every object it references to `file`, atomically (a failed
/// export leaves no partial file). Each object is verified by the store as it is read.
pub fn export(catalog: &SessionCatalog, name: &str, file: &Path) -> Result<ExportReport> {
    // Shared store lock: even if the session's owner saves meanwhile, gc cannot delete the
    // objects of the manifest read here before they are copied.
    let _shared = catalog.store().lock_shared()?;
    let (manifest, raw) = catalog.read_manifest_raw(name)?;
    let ids = distinct_objects(&manifest);
    let count = u32::try_from(ids.len()).map_err(|_| SessionError::Corrupt {
        name: name.into(),
        detail: format!("{} objects is more than an export holds", ids.len()),
    })?;

    // The writer callback can only return io::Error; a store error is parked here.
    let mut failure: Option<SessionError> = None;
    let mut bytes = 0u64;
    let written = write_atomic_with(file, |w| {
        let mut out = HashingWriter {
            inner: w,
            hasher: blake3::Hasher::new(),
            count: 0,
        };
        out.write_all(&EXPORT_MAGIC)?;
        out.write_all(&(raw.len() as u64).to_le_bytes())?;
        out.write_all(&raw)?;
        out.write_all(&count.to_le_bytes())?;
        let mut payload = Vec::new();
        for id in &ids {
            let kind = match catalog.store().read_into(id, &mut payload) {
                Ok(kind) => kind,
                Err(error) => {
                    failure = Some(SessionError::Object {
                        name: name.into(),
                        error,
                    });
                    return Err(io::Error::other("object unreadable"));
                }
            };
            out.write_all(id.as_bytes())?;
            out.write_all(&[kind as u8])?;
            out.write_all(&(payload.len() as u64).to_le_bytes())?;
            out.write_all(&payload)?;
            out.write_all(blake3::hash(&payload).as_bytes())?;
        }
        let digest = out.hasher.finalize();
        out.inner.write_all(digest.as_bytes())?;
        bytes = out.count + SUM_LEN;
        Ok(())
    });
    if let Some(e) = failure {
        return Err(e);
    }
    written?;
    Ok(ExportReport {
        objects: u64::from(count),
        bytes,
    })
}

/// Imports an export file as session `name` (or the name inside the file). Nothing is
/// written unless the whole file is valid and the name is free. Returns the session's name.
///
/// The model path recorded in the file is dropped: the session's model is `model` when
/// given (its fingerprint must match), else looked up in `models_dir` by fingerprint (or
/// left to MODEL on first use), so a crafted file cannot make kvrun open a file of its
/// choosing.
pub fn import(
    catalog: &SessionCatalog,
    file: &Path,
    name: Option<&str>,
    models_dir: &Path,
    model: Option<&Path>,
) -> Result<String> {
    if let Some(name) = name {
        // Checked again under the lock below; this only saves reading a large file in vain.
        if catalog.exists(name)? {
            return Err(SessionError::Exists { name: name.into() });
        }
    }
    let scanned = scan(file)?;
    let recorded = &scanned.manifest;
    recorded
        .llama
        .validate()
        .and(recorded.sampling.validate())
        .map_err(|error| SessionError::BadSetting {
            file: file.to_path_buf(),
            error,
        })?;
    let model_path = match model {
        Some(path) => {
            let given = model_identity(path, "").map_err(|e| bad(file, format!("--model: {e}")))?;
            if given.fingerprint != recorded.model.fingerprint {
                return Err(bad(
                    file,
                    format!(
                        "--model {} is not the model the session was saved with ('{}')",
                        path.display(),
                        recorded.model.name.escape_debug()
                    ),
                ));
            }
            Some(path.display().to_string())
        }
        None => None,
    };
    let target = match name {
        Some(n) => n.to_string(),
        None => {
            let n = scanned.manifest.name.clone();
            if validate_name(&n).is_err() {
                return Err(bad(
                    file,
                    format!(
                        "the session name {n:?} in the file is not valid; import it under \
                         another name"
                    ),
                ));
            }
            n
        }
    };
    if catalog.exists(&target)? {
        return Err(SessionError::Exists { name: target });
    }
    let _lock = catalog.lock(&target)?;
    if catalog.exists(&target)? {
        return Err(SessionError::Exists { name: target });
    }

    // Objects first, then the manifest, under the shared lock: a save like any other.
    let _shared = catalog.store().lock_shared()?;
    let (mut reader, _) = open_export(file)?;
    let mut payload = Vec::new();
    for object in &scanned.objects {
        payload.clear();
        // Bounded: the length was checked against the file's size in `scan`.
        let len = usize::try_from(object.len)
            .map_err(|_| bad(file, format!("object {} is too large", object.id)))?;
        payload.try_reserve_exact(len).map_err(|_| {
            bad(
                file,
                format!("cannot allocate {len} bytes for object {}", object.id),
            )
        })?;
        reader
            .seek(SeekFrom::Start(object.offset))
            .and_then(|_| (&mut reader).take(object.len).read_to_end(&mut payload))
            .map_err(|e| SessionError::io(file, e))?;
        if payload.len() != len || blake3::hash(&payload).as_bytes() != &object.checksum {
            // Objects already put are unreferenced and go with the next gc.
            return Err(bad(
                file,
                format!("object {} changed while it was being imported", object.id),
            ));
        }
        catalog.store().put(&object.id, object.kind, &payload)?;
    }
    let mut manifest = scanned.manifest;
    manifest.name = target.clone();
    manifest.model.path = model_path
        .or_else(|| {
            find_model(models_dir, &manifest.model.fingerprint).map(|p| p.display().to_string())
        })
        .unwrap_or_default();
    #[cfg(test)]
    race_point::reached(&target);
    catalog.write_manifest(&manifest)?;
    Ok(target)
}

/// A fault-injection point for the tests: the window between an import's objects and its
/// manifest, where nothing names the objects yet and only the shared store lock keeps gc
/// from taking them.
#[cfg(test)]
pub(super) mod race_point {
    type Hook = Box<dyn FnOnce() + Send>;

    static HOOK: std::sync::Mutex<Option<(String, Hook)>> = std::sync::Mutex::new(None);

    /// Runs `hook` inside the window of the next import of session `name`.
    pub fn set(name: &str, hook: Hook) {
        *HOOK.lock().unwrap() = Some((name.to_string(), hook));
    }

    pub(super) fn reached(name: &str) {
        let mut slot = HOOK.lock().unwrap();
        if slot.as_ref().is_some_and(|(n, _)| n == name) {
            let (_, hook) = slot.take().unwrap();
            drop(slot);
            hook();
        }
    }
}

/// Opens an export file for reading: a regular file only (a FIFO would block forever, a
/// device never end).
fn open_export(file: &Path) -> Result<(File, u64)> {
    open_given_regular(file).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidInput => bad(file, format!("the path {e}")),
        _ => SessionError::io(file, e),
    })
}

fn bad(file: &Path, detail: String) -> SessionError {
    SessionError::Export {
        file: file.to_path_buf(),
        detail,
    }
}

/// Counts and hashes everything written through it (the file checksum covers it all).
struct HashingWriter<'a> {
    inner: &'a mut dyn Write,
    hasher: blake3::Hasher,
    count: u64,
}

impl Write for HashingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.count += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// An object found (and verified) in an export file.
struct ScannedObject {
    id: ObjectId,
    kind: ObjectKind,
    /// Where its payload starts in the file.
    offset: u64,
    len: u64,
    checksum: [u8; 32],
}

struct Scanned {
    manifest: SessionManifest,
    objects: Vec<ScannedObject>,
}

/// Sequential reader over the checksummed part of an export file; refuses to read past it.
struct Scanner<'a> {
    file: &'a Path,
    reader: BufReader<File>,
    hasher: blake3::Hasher,
    pos: u64,
    /// Where the file checksum starts.
    end: u64,
}

impl Scanner<'_> {
    fn left(&self) -> u64 {
        self.end - self.pos
    }

    fn truncated(&self, what: &str) -> SessionError {
        bad(
            self.file,
            format!("truncated or damaged: {what} runs past the end of the file"),
        )
    }

    fn read(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        if buf.len() as u64 > self.left() {
            return Err(self.truncated(what));
        }
        self.reader
            .read_exact(buf)
            .map_err(|e| SessionError::io(self.file, e))?;
        self.hasher.update(buf);
        self.pos += buf.len() as u64;
        Ok(())
    }

    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let mut buf = [0u8; N];
        self.read(&mut buf, what)?;
        Ok(buf)
    }

    /// Streams `len` bytes through `hasher` (and the file hasher) without keeping them.
    fn skim(&mut self, len: u64, hasher: &mut blake3::Hasher, what: &str) -> Result<()> {
        if len > self.left() {
            return Err(self.truncated(what));
        }
        let mut chunk = vec![0u8; len.min(256 * 1024) as usize];
        let mut rest = len;
        while rest > 0 {
            let n = rest.min(chunk.len() as u64) as usize;
            self.read(&mut chunk[..n], what)?;
            hasher.update(&chunk[..n]);
            rest -= n as u64;
        }
        Ok(())
    }
}

/// Pass one of import: validates the whole file, keeping only where each payload is.
fn scan(file: &Path) -> Result<Scanned> {
    let (handle, file_len) = open_export(file)?;
    let mut reader = BufReader::with_capacity(1 << 20, handle);

    let mut magic = Vec::with_capacity(8);
    (&mut reader)
        .take(8)
        .read_to_end(&mut magic)
        .map_err(|e| SessionError::io(file, e))?;
    if magic.len() < 8 {
        return Err(bad(
            file,
            if EXPORT_MAGIC.starts_with(&magic) {
                format!("truncated: the file is {file_len} bytes")
            } else {
                "not a kvrun session export (bad magic)".into()
            },
        ));
    }
    if magic[..6] != EXPORT_MAGIC[..6] {
        return Err(bad(file, "not a kvrun session export (bad magic)".into()));
    }
    if magic[..] != EXPORT_MAGIC {
        return Err(bad(
            file,
            format!(
                "export format {} is not supported by this kvrun",
                String::from_utf8_lossy(&magic[6..])
            ),
        ));
    }
    let min_len = 8 + 8 + 4 + SUM_LEN;
    if file_len < min_len {
        return Err(bad(
            file,
            format!("truncated: the file is {file_len} bytes"),
        ));
    }
    let mut s = Scanner {
        file,
        reader,
        hasher: blake3::Hasher::new(),
        pos: 8,
        end: file_len - SUM_LEN,
    };
    s.hasher.update(&EXPORT_MAGIC);

    let manifest_len = u64::from_le_bytes(s.array("the manifest length")?);
    if manifest_len > MAX_MANIFEST_BYTES || manifest_len > s.left().saturating_sub(4) {
        return Err(bad(
            file,
            format!("manifest length {manifest_len} does not fit in the file"),
        ));
    }
    let mut raw = vec![0u8; manifest_len as usize];
    s.read(&mut raw, "the manifest")?;
    let manifest = decode_manifest(&raw).map_err(|e| {
        bad(
            file,
            match e {
                ManifestFileError::Corrupt(detail) => format!("manifest: {detail}"),
                ManifestFileError::TooNew(format) => format!(
                    "the session was saved by a newer kvrun (manifest format {format}); \
                     upgrade kvrun to import it"
                ),
            },
        )
    })?;

    let count = u32::from_le_bytes(s.array("the object count")?);
    if u64::from(count) * MIN_OBJECT_LEN > s.left() {
        return Err(bad(
            file,
            format!("object count {count} does not fit in the file"),
        ));
    }
    let mut objects = Vec::new();
    let mut seen = HashSet::new();
    for i in 0..count {
        let id = ObjectId(s.array(&format!("object {i}"))?);
        let [kind_byte] = s.array(&format!("object {id}"))?;
        let kind = ObjectKind::from_byte(kind_byte)
            .ok_or_else(|| bad(file, format!("object {id}: unknown kind 0x{kind_byte:02x}")))?;
        let len = u64::from_le_bytes(s.array(&format!("object {id}"))?);
        if len > s.left().saturating_sub(SUM_LEN) {
            return Err(bad(
                file,
                format!("object {id}: payload length {len} runs past the end of the file"),
            ));
        }
        let offset = s.pos;
        let mut hasher = blake3::Hasher::new();
        s.skim(len, &mut hasher, &format!("object {id}"))?;
        let checksum: [u8; 32] = s.array(&format!("object {id}'s checksum"))?;
        if hasher.finalize().as_bytes() != &checksum {
            return Err(bad(file, format!("object {id}: payload checksum mismatch")));
        }
        if !seen.insert(id) {
            return Err(bad(file, format!("object {id} appears twice")));
        }
        objects.push(ScannedObject {
            id,
            kind,
            offset,
            len,
            checksum,
        });
    }
    if s.left() != 0 {
        return Err(bad(
            file,
            format!("{} unexpected bytes after the last object", s.left()),
        ));
    }
    let mut stored = [0u8; 32];
    s.reader
        .read_exact(&mut stored)
        .map_err(|e| SessionError::io(file, e))?;
    if s.hasher.finalize().as_bytes() != &stored {
        return Err(bad(
            file,
            "file checksum mismatch (the file was damaged or changed)".into(),
        ));
    }

    // The ids must be those the token log implies: otherwise the file plants the KV of
    // other text under this log (or is damaged in a way its checksums cannot see).
    match bind_snapshot(&manifest) {
        Some(Err(e)) => return Err(bad(file, format!("manifest: {e}"))),
        Some(Ok(bound)) if !bound.mismatches.is_empty() => {
            return Err(bad(
                file,
                format!(
                    "its KV objects are not those of its token log ({})",
                    bound.mismatches[0]
                ),
            ))
        }
        _ => {}
    }
    let referenced: HashSet<ObjectId> = manifest.referenced_objects().collect();
    if let Some(id) = referenced.iter().find(|id| !seen.contains(id)) {
        return Err(bad(
            file,
            format!("the manifest references object {id}, which the file does not hold"),
        ));
    }
    if let Some(object) = objects.iter().find(|o| !referenced.contains(&o.id)) {
        return Err(bad(
            file,
            format!("object {} is not referenced by the manifest", object.id),
        ));
    }
    Ok(Scanned { manifest, objects })
}

#[cfg(test)]
mod tests;
