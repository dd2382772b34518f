//! llama.cpp's real KV blobs survive blob → pages → blob byte for byte, on both cache kinds.
//! A llama.cpp upgrade that changes the format fails here instead of corrupting sessions.

mod common;

use common::*;
use kvrun::engine::{Context, KvCapture, Model};
use kvrun::kv::blob::{self, SectionParts};
use kvrun::kv::KvLayout;
use kvrun::sequence::{NoObserver, Sequence};
use kvrun::settings::{EngineSettings, FlashAttn, KvType};

fn round_trip(model_path: &std::path::Path, flash_attn: FlashAttn, kv_type: KvType) {
    let model = Model::load(model_path, 0).unwrap();
    let engine = EngineSettings {
        ctx_size: 2048,
        threads: 2,
        gpu_layers: 0,
        batch_size: 256,
        kv_type,
        flash_attn,
    };
    let mut ctx = Context::new(&model, &engine, 256, 1).unwrap();
    let mut seq = Sequence::new();
    seq.append(&model.tokenize_prompt(&long_text(3))[..1000]);
    seq.sync(&mut ctx, true, &mut NoObserver).unwrap();
    let n_swa = model.facts().n_swa;
    for what in [KvCapture::Full, KvCapture::SlidingWindowOnly] {
        let bytes = ctx.state_get(0, what).unwrap();
        let mut shape = KvLayout::shape_for(n_swa);
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
    let state = blob::parse(&bytes, &KvLayout::shape_for(n_swa)).unwrap();
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
