//! llama.cpp's real KV blobs survive blob → pages → blob byte for byte, on both cache kinds.
//! A llama.cpp upgrade that changes the format fails here instead of corrupting sessions.

use crate::common::*;
use kvrun::kv::blob::{self, SectionParts};
use kvrun::kv::KvLayout;
use kvrun::llama::{Context, KvCapture, Model};
use kvrun::sequence::{NoObserver, Sequence};
use kvrun::settings::{FlashAttn, KvType, LlamaSettings};

fn round_trip(model_path: &std::path::Path, flash_attn: FlashAttn, kv_type: KvType) {
    let model = Model::load(model_path, 0).unwrap();
    let llama = LlamaSettings {
        ctx_size: 2048,
        threads: 2,
        gpu_layers: 0,
        batch_size: kvrun::settings::DEFAULT_BATCH_SIZE,
        kv_type,
        flash_attn,
    };
    let mut ctx = Context::new(&model, &llama, 256, 1).unwrap();
    let mut seq = Sequence::new();
    seq.append(&model.tokenize_prompt(&long_text(3))[..1000]);
    seq.sync(&mut ctx, true, &mut NoObserver).unwrap();
    let n_swa = model.facts().n_swa;
    for what in [KvCapture::Full, KvCapture::SlidingWindowOnly] {
        let bytes = ctx.state_get(0, what).unwrap();
        let mut shape = KvLayout::shape_for(n_swa, kvrun::kv::CellExt::None);
        if what == KvCapture::SlidingWindowOnly && n_swa > 0 {
            shape.sections = 1;
        }
        let state = blob::parse(&bytes, &shape).unwrap();
        // Cut every section into 256-cell pages in blob (cache-slot) order and reassemble.
        let pages: Vec<Vec<Vec<u8>>> = state
            .sections
            .iter()
            .map(|s| {
                (0..s.cells.len())
                    .step_by(256)
                    .map(|start| {
                        s.rows_for_cells(start..(start + 256).min(s.cells.len()))
                            .unwrap()
                    })
                    .collect()
            })
            .collect();
        let chunks: Vec<Vec<&[u8]>> = pages
            .iter()
            .map(|p| p.iter().map(Vec::as_slice).collect())
            .collect();
        let parts: Vec<SectionParts<'_>> = state
            .sections
            .iter()
            .zip(&chunks)
            .map(|(s, c)| SectionParts {
                layout: s.layout.as_ref(),
                n_stream: s.n_stream,
                stream: s.stream,
                cells: &s.cells,
                row_chunks: c,
            })
            .collect();
        let rebuilt = blob::assemble_blob(state.seq_id, &parts).unwrap();
        assert!(
            rebuilt == bytes,
            "{} {what:?}: reassembled blob differs",
            model_path.display()
        );
    }
    // The iSWA cache writes two sections, the unified one a single section.
    let bytes = ctx.state_get(0, KvCapture::Full).unwrap();
    let state = blob::parse(
        &bytes,
        &KvLayout::shape_for(n_swa, kvrun::kv::CellExt::None),
    )
    .unwrap();
    assert_eq!(state.sections.len(), if n_swa > 0 { 2 } else { 1 });
}

#[test]
fn default_model_blob_round_trips() {
    round_trip(&default_model(), FlashAttn::Auto, KvType::F16);
}

#[test]
fn default_model_blob_round_trips_with_transposed_v() {
    // Without flash attention llama.cpp stores V transposed.
    round_trip(&default_model(), FlashAttn::Off, KvType::F16);
}

#[test]
fn tiny_model_blob_round_trips() {
    round_trip(&tiny_model(), FlashAttn::Auto, KvType::F16);
    round_trip(&tiny_model(), FlashAttn::Off, KvType::F16);
    round_trip(&tiny_model(), FlashAttn::On, KvType::Q8_0);
}

/// `Context::state_set` is a safe function, so no bytes may crash llama.cpp: a truncated
/// blob, a blob whose counts lie, garbage and a sequence id outside the context are each an
/// error, and the context still takes the good blob afterwards.
#[test]
fn state_set_refuses_bad_bytes_and_sequences_without_crashing() {
    use kvrun::llama::LlamaError;
    for model_path in [tiny_model(), default_model()] {
        let model = Model::load(&model_path, 0).unwrap();
        let llama = LlamaSettings {
            ctx_size: 1024,
            threads: 2,
            gpu_layers: 0,
            batch_size: kvrun::settings::DEFAULT_BATCH_SIZE,
            kv_type: KvType::F16,
            flash_attn: FlashAttn::Auto,
        };
        let mut ctx = Context::new(&model, &llama, 256, 2).unwrap();
        let mut seq = Sequence::new();
        seq.append(&model.tokenize_prompt(&long_text(1))[..300]);
        seq.sync(&mut ctx, true, &mut NoObserver).unwrap();
        let good = ctx.state_get(0, KvCapture::Full).unwrap();

        let mut bad: Vec<Vec<u8>> = vec![Vec::new(), vec![0xAB; 4096]];
        for cut in [1, 4, 8, 12, 16, 64, good.len() / 2, good.len() - 1] {
            bad.push(good[..cut].to_vec());
        }
        // The cell count of the first stream (after magic, seq id and stream count) made huge.
        let mut lying = good.clone();
        lying[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        bad.push(lying);
        for (i, bytes) in bad.iter().enumerate() {
            let result = ctx.state_set(1, bytes, KvCapture::Full);
            assert!(
                matches!(result, Err(LlamaError::StateSet { .. })),
                "{}: bad blob {i} ({} bytes) was accepted: {result:?}",
                model_path.display(),
                bytes.len()
            );
            assert_eq!(ctx.seq_len(1), 0, "a refused blob left cells behind");
        }
        for seq_id in [-1, 2, i32::MAX] {
            assert!(matches!(
                ctx.state_set(seq_id, &good, KvCapture::Full),
                Err(LlamaError::NoSuchSequence { .. })
            ));
            assert!(matches!(
                ctx.state_get(seq_id, KvCapture::Full),
                Err(LlamaError::NoSuchSequence { .. })
            ));
        }
        ctx.state_set(1, &good, KvCapture::Full).unwrap();
        assert_eq!(ctx.seq_len(1), 300);
    }
}
