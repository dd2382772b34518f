//! Who a KV snapshot belongs to: the model (fingerprinted without reading the whole file)
//! and the context settings that shape KV bytes.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use anyhow::{Context as _, Result};

use super::manifest::{KvIdentity, ModelIdentity};
use crate::engine::ContextInfo;

/// Blocks of tensor data sampled into the fingerprint, and their size. The GGUF header and
/// tensor table alone can be identical for two fine-tunes of one base model; a few spread
/// samples of the weights tell them apart while reading only a megabyte of a 40 GB file.
const SAMPLES: u64 = 16;
const SAMPLE_BYTES: u64 = 64 * 1024;

/// Fingerprints a model: its GGUF header, tensor table and size, plus sampled weights.
pub fn model_identity(path: &Path, name: &str) -> Result<ModelIdentity> {
    let file =
        crate::gguf::read_header(path).with_context(|| format!("reading {}", path.display()))?;
    let mut hasher = blake3::Hasher::new();
    hasher.update(b"kvrun model fingerprint v1");
    hasher.update(file.fingerprint().as_bytes());
    let data_start = file.data_offset();
    let data_len = file.file_size().saturating_sub(data_start);
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut buf = Vec::with_capacity(SAMPLE_BYTES as usize);
    for i in 0..SAMPLES {
        let offset = data_start + data_len.saturating_sub(SAMPLE_BYTES) * i / (SAMPLES - 1);
        f.seek(SeekFrom::Start(offset))?;
        buf.clear();
        (&mut f).take(SAMPLE_BYTES).read_to_end(&mut buf)?;
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
        crate::engine::LLAMA_CPP_SYS_VERSION
    )
}
