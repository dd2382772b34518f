//! Who a KV snapshot belongs to: the model (fingerprinted without reading the whole file)
//! and the context settings that shape KV bytes.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::manifest::{KvIdentity, KvSnapshot, ModelIdentity, SessionManifest};
use crate::kv::PageKey;
use crate::llama::ContextInfo;
use crate::store::ObjectId;

/// Blocks of tensor data sampled into the fingerprint, and their size. The GGUF header and
/// tensor table alone can be identical for two fine-tunes of one base model; a few spread
/// samples of the weights tell them apart while reading only a megabyte of a 40 GB file.
const SAMPLES: u64 = 16;
const SAMPLE_BYTES: u64 = 64 * 1024;

/// A model file that could not be fingerprinted.
#[derive(Debug, thiserror::Error)]
pub enum FingerprintError {
    #[error("fingerprinting the model {}: {source}", path.display())]
    Header {
        path: std::path::PathBuf,
        #[source]
        source: crate::gguf::GgufError,
    },
    #[error("fingerprinting the model {}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Fingerprints a model: its GGUF header, tensor table and size, plus sampled weights.
pub fn model_identity(path: &Path, name: &str) -> Result<ModelIdentity, FingerprintError> {
    let io = |source| FingerprintError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = crate::gguf::read_header(path).map_err(|source| FingerprintError::Header {
        path: path.to_path_buf(),
        source,
    })?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"kvrun model fingerprint v1");
    hasher.update(file.fingerprint().as_bytes());
    let data_start = file.data_offset();
    let data_len = file.file_size().saturating_sub(data_start);
    let mut f = std::fs::File::open(path).map_err(io)?;
    let mut buf = Vec::with_capacity(SAMPLE_BYTES as usize);
    for i in 0..SAMPLES {
        let offset = data_start + data_len.saturating_sub(SAMPLE_BYTES) * i / (SAMPLES - 1);
        f.seek(SeekFrom::Start(offset)).map_err(io)?;
        buf.clear();
        (&mut f)
            .take(SAMPLE_BYTES)
            .read_to_end(&mut buf)
            .map_err(io)?;
        hasher.update(&buf);
    }
    Ok(ModelIdentity {
        path: path
            .canonicalize()
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
            .to_string(),
        name: name.to_string(),
        fingerprint: hasher.finalize().to_hex()[..32].to_string(),
    })
}

/// The model in `models_dir` whose fingerprint is `fingerprint`, if any. An imported
/// session names its model by fingerprint only: a path inside an export file is never
/// opened (it could name any file on this machine).
pub fn find_model(models_dir: &Path, fingerprint: &str) -> Option<std::path::PathBuf> {
    let mut candidates: Vec<_> = std::fs::read_dir(models_dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "gguf") && p.is_file())
        .collect();
    candidates.sort();
    candidates
        .into_iter()
        .find(|path| model_identity(path, "").is_ok_and(|m| m.fingerprint == fingerprint))
}

/// The KV identity of a context (the layout is filled in once a blob has been seen).
pub fn kv_identity(info: &ContextInfo) -> KvIdentity {
    KvIdentity {
        kv_type: info.kv_type,
        flash_attn: info.flash_attn,
        n_ctx: info.n_ctx,
        n_seq_max: info.n_seq_max,
        page_tokens: info.page_tokens,
        layout: None,
    }
}

/// What goes into every page id besides the tokens: the settings that change KV bytes.
pub fn page_key_settings(kv: &KvIdentity) -> String {
    format!(
        "kv={} fa={} page={} llama={}",
        kv.kv_type.as_str(),
        kv.flash_attn.as_str(),
        kv.page_tokens,
        crate::llama::LLAMA_CPP_SYS_VERSION
    )
}

/// The key every page id of a session's snapshot is chained from.
pub fn page_key(model: &ModelIdentity, kv: &KvIdentity) -> PageKey {
    PageKey::new(&model.fingerprint, &page_key_settings(kv))
}

/// A snapshot whose every id was recomputed from the token log, and what in the manifest's
/// own list disagreed with it.
pub struct BoundSnapshot {
    pub snapshot: KvSnapshot,
    /// One line per disagreement (page index and both ids), empty when the manifest agrees.
    pub mismatches: Vec<String>,
}

/// Recomputes the ids `manifest`'s snapshot must name from its tokens, model and KV
/// settings. The manifest's id lists are never trusted on their own: an edited token, a
/// swapped id or a planted export would otherwise restore KV of some other text. `None` when
/// there is no snapshot, or when its shape does not fit the log (that is a mismatch too).
pub fn bind_snapshot(manifest: &SessionManifest) -> Option<Result<BoundSnapshot, String>> {
    let snap = manifest.snapshot.as_ref()?;
    let p = manifest.kv.page_tokens as usize;
    if p == 0 || snap.kv_len > manifest.tokens.len() || snap.pages.len() != snap.kv_len / p {
        return Some(Err(format!(
            "the snapshot ({} tokens, {} pages) does not fit its token log of {} tokens",
            snap.kv_len,
            snap.pages.len(),
            manifest.tokens.len()
        )));
    }
    let key = page_key(&manifest.model, &manifest.kv);
    let covered = &manifest.tokens[..snap.kv_len];
    let mut pages = Vec::with_capacity(snap.pages.len());
    key.extend_ids(covered, p, &mut pages);
    let mut mismatches = Vec::new();
    let note = |out: &mut Vec<String>, what: String, stored: &ObjectId, computed: &ObjectId| {
        if stored != computed {
            out.push(format!(
                "{what}: the manifest names {stored}, its token log {computed}"
            ));
        }
    };
    for (i, (stored, computed)) in snap.pages.iter().zip(&pages).enumerate() {
        note(&mut mismatches, format!("page {i}"), stored, computed);
    }
    let mut swa_pages = Vec::with_capacity(snap.swa_pages.len());
    for (k, stored) in &snap.swa_pages {
        match pages.get(*k) {
            Some(page) => {
                let computed = PageKey::swa_id(page);
                let what = format!("sliding-window rows of page {k}");
                note(&mut mismatches, what, stored, &computed);
                swa_pages.push((*k, computed));
            }
            None => mismatches.push(format!(
                "sliding-window rows of page {k}: the snapshot has only {} pages",
                pages.len()
            )),
        }
    }
    let boundary = pages.len() * p;
    let tail = (snap.kv_len > boundary).then(|| key.tail_id(&pages, &covered[boundary..]));
    match (&snap.tail, &tail) {
        (Some(stored), Some(computed)) => {
            note(&mut mismatches, "the tail".into(), stored, computed)
        }
        (None, None) | (None, Some(_)) => {}
        (Some(stored), None) => mismatches.push(format!(
            "the tail: the manifest names {stored}, but the snapshot ends on a page boundary"
        )),
    }
    // Only prefix reuse reads these, by the ids the log gives.
    let prefix_swa_pages = snap
        .prefix_swa_pages
        .iter()
        .filter_map(|(k, _)| pages.get(*k).map(|page| (*k, PageKey::swa_id(page))))
        .collect();
    Some(Ok(BoundSnapshot {
        snapshot: KvSnapshot {
            kv_len: snap.kv_len,
            pages,
            swa_pages,
            prefix_swa_pages,
            // A snapshot saved without its tail stays without one (recomputed by prefill).
            tail: snap.tail.and(tail),
            batch_starts: snap.batch_starts.clone(),
        },
        mismatches,
    }))
}
