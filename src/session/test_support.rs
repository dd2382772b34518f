//! Fixtures for the session tests: a catalog in a temp folder, fake objects, and manifests
//! built by hand (no model needed).

use super::{KvIdentity, KvSnapshot, ModelIdentity, SessionCatalog, SessionManifest};
use crate::llama::ChatMessage;
use crate::paths::Paths;
use crate::session::MANIFEST_FORMAT;
use crate::settings::{FlashAttn, KvType, LlamaSettings, SamplingSettings};
use crate::store::{ObjectId, ObjectKind};

pub(crate) fn catalog() -> (tempfile::TempDir, SessionCatalog) {
    let tmp = tempfile::tempdir().unwrap();
    let catalog = SessionCatalog::open(&Paths::under(&tmp.path().join("home"))).unwrap();
    (tmp, catalog)
}

/// Puts a fake object of `len` bytes derived from `seed` and returns its id.
pub(crate) fn put_object(catalog: &SessionCatalog, seed: u8, len: usize) -> ObjectId {
    let id = ObjectId::chain(&[b"test object", &[seed], &(len as u64).to_le_bytes()]);
    put_object_as(catalog, &id, seed, len);
    id
}

/// Puts a fake object of `len` bytes derived from `seed` under `id`.
pub(crate) fn put_object_as(catalog: &SessionCatalog, id: &ObjectId, seed: u8, len: usize) {
    let payload: Vec<u8> = (0..len)
        .map(|i| (i as u8).wrapping_mul(37).wrapping_add(seed))
        .collect();
    let kind = if seed.is_multiple_of(2) {
        ObjectKind::Page
    } else {
        ObjectKind::Tail
    };
    catalog.store().put(id, kind, &payload).unwrap();
}

/// A manifest of `pages` full pages (plus the sliding-window rows of pages `swa`, and a tail
/// if asked) whose ids are the ones its token log implies, with fake objects stored under
/// them (seeds 2, 4, … for pages and window rows, 3 for the tail).
pub(crate) fn bound_manifest(
    catalog: &SessionCatalog,
    name: &str,
    pages: usize,
    swa: &[usize],
    tail: bool,
) -> SessionManifest {
    let dummy = ObjectId([0; 32]);
    let mut m = manifest(
        name,
        &vec![dummy; pages],
        &swa.iter().map(|&k| (k, dummy)).collect::<Vec<_>>(),
        tail.then_some(dummy),
    );
    let bound = crate::session::identity::bind_snapshot(&m)
        .unwrap()
        .unwrap()
        .snapshot;
    for (i, id) in bound.pages.iter().enumerate() {
        put_object_as(catalog, id, 2 + 2 * i as u8, 300 + 100 * i);
    }
    for (k, id) in &bound.swa_pages {
        put_object_as(catalog, id, 40 + 2 * *k as u8, 200);
    }
    if let Some(id) = &bound.tail {
        put_object_as(catalog, id, 3, 50);
    }
    m.snapshot = Some(bound);
    m
}

pub(crate) fn object_count(catalog: &SessionCatalog) -> usize {
    catalog.store().iter().count()
}

/// A manifest whose snapshot names `pages`, `swa` and `tail`.
pub(crate) fn manifest(
    name: &str,
    pages: &[ObjectId],
    swa: &[(usize, ObjectId)],
    tail: Option<ObjectId>,
) -> SessionManifest {
    SessionManifest {
        format: MANIFEST_FORMAT,
        name: name.to_string(),
        created_unix: 1_700_000_000,
        updated_unix: 1_700_000_100,
        model: ModelIdentity {
            path: "/models/tiny.gguf".into(),
            name: "tiny".into(),
            fingerprint: "f00d".into(),
        },
        kv: KvIdentity {
            kv_type: KvType::F16,
            flash_attn: FlashAttn::Auto,
            n_ctx: 4096,
            n_seq_max: 1,
            page_tokens: 16,
            layout: Some("k:f16;v:f16".into()),
        },
        llama_build: "b0000-test".into(),
        llama: LlamaSettings {
            ctx_size: 4096,
            threads: 2,
            gpu_layers: 0,
            batch_size: 16,
            kv_type: KvType::F16,
            flash_attn: FlashAttn::Auto,
        },
        sampling: SamplingSettings {
            temp: 0.7,
            top_k: 40,
            top_p: 0.95,
            min_p: 0.05,
            repeat_penalty: 1.1,
            seed: 42,
            presence_penalty: 0.0,
            frequency_penalty: 0.0,
        },
        tokens: (0..(pages.len() as i32 * 16 + 5)).collect(),
        unnamed: false,
        prompt_tokens: 0,
        pinned: false,
        messages: vec![ChatMessage {
            role: "user".into(),
            content: "hello \"world\"\n".into(),
        }],
        rendered_len: 21,
        raw: false,
        chat_template: None,
        cache_miss: None,
        interrupted: false,
        snapshot: Some(KvSnapshot {
            kv_len: pages.len() * 16 + 4,
            pages: pages.to_vec(),
            swa_pages: swa.to_vec(),
            prefix_swa_pages: Vec::new(),
            tail,
            batch_starts: Default::default(),
        }),
        replay: Default::default(),
        state: None,
        checkpoints: Vec::new(),
    }
}
