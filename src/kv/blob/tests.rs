//! Round-trip and robustness tests of the blob codec against [`super::fake_cache`].

use super::fake_cache::*;
use super::*;

#[test]
fn round_trip_random_caches() {
    let mut rng = Rng(1);
    let (mut transposed, mut ext, mut multi, mut empty, mut no_v) = (0, 0, 0, 0, 0);
    for round in 0..600 {
        let n_sections = 1 + round % 2;
        let fx = fixture(&mut rng, n_sections);
        let state = parse(&fx.blob, &fx.shape).unwrap();
        assert_eq!(state.sections.len(), n_sections);
        for (si, sec) in state.sections.iter().enumerate() {
            let cache = &fx.caches[si];
            assert_eq!(sec.cells.len(), fx.written[si].len());
            empty += usize::from(sec.cells.is_empty());
            multi += usize::from(sec.n_stream > 1 && !sec.cells.is_empty());
            transposed += usize::from(cache.v_trans && !sec.cells.is_empty());
            ext += usize::from(cache.has_ext && !sec.cells.is_empty());
            no_v +=
                usize::from(cache.v_layers() < cache.layers.len() as u32 && !sec.cells.is_empty());
            // Each cell's page row equals the tensors' data for its cache slot: correct un-transpose,
            // independent of the other cells in the blob.
            for (c, &(s, i)) in fx.written[si].iter().enumerate() {
                assert_eq!(sec.stream, Some(s));
                assert_eq!(
                    sec.rows_for_cells(c..c + 1).unwrap(),
                    cache.expected_row(s as usize, i)
                );
            }
            if let Some(layout) = &sec.layout {
                assert_eq!(sec.k_data().len(), layout.k.len());
                assert_eq!(sec.v_data().len(), layout.v.len());
                let v_types = cache.layers.iter().filter_map(|l| l.v.map(|v| v.0));
                assert!(layout.v.iter().map(VLayer::type_id).eq(v_types));
                let all = sec.rows_for_cells(0..sec.cells.len()).unwrap();
                assert_eq!(
                    all.len() as u64,
                    sec.cells.len() as u64 * layout.bytes_per_cell()
                );
                assert_eq!(
                    SectionLayout::from_bytes(&layout.to_bytes()).unwrap(),
                    *layout
                );
            }
        }
        for _ in 0..3 {
            assert_eq!(reassemble(&mut rng, &state), fx.blob, "round {round}");
        }
        // Tampering with the public fields is reported, not a panic.
        let mut more_cells = state.sections[0].clone();
        more_cells.cells.push(CellMeta {
            pos: 0,
            seq_id: 0,
            ext: None,
        });
        let n = more_cells.cells.len();
        assert_eq!(more_cells.rows_for_cells(0..n), Err(BlobError::Tampered));
        let mut wider = state.sections[0].clone();
        if let Some(l) = &mut wider.layout {
            l.k[0].row_size += 1;
            let n = wider.cells.len();
            assert_eq!(wider.rows_for_cells(0..n), Err(BlobError::Tampered));
        }
    }
    assert!(transposed > 50 && ext > 50 && multi > 20 && empty > 20 && no_v > 50);
}

#[test]
fn partial_only_blob_is_the_swa_section_alone() {
    let mut rng = Rng(7);
    let fx = fixture(&mut rng, 2);
    let seq = i32::from_le_bytes(fx.blob[4..8].try_into().unwrap());
    let mut partial = Vec::new();
    write_blob_header(seq, &mut partial);
    fx.caches[1].write(seq, &mut partial, &mut Vec::new());
    let mut shape = fx.shape.clone();
    shape.sections = 1;
    shape.v_layers_per_section = shape.v_layers_per_section.map(|v| vec![v[1]]);
    let full = parse(&fx.blob, &fx.shape).unwrap();
    let part = parse(&partial, &shape).unwrap();
    assert_eq!(part.sections[0].cells, full.sections[1].cells);
    assert_eq!(part.sections[0].layout, full.sections[1].layout);
    assert_eq!(reassemble(&mut rng, &part), partial);
}

#[test]
fn every_truncation_fails_cleanly() {
    let mut rng = Rng(3);
    for round in 0..40 {
        let fx = fixture(&mut rng, 1 + round % 2);
        for cut in 0..fx.blob.len() {
            let e = parse(&fx.blob[..cut], &fx.shape).unwrap_err();
            assert!(!e.to_string().contains('\n'));
        }
        let mut long = fx.blob.clone();
        long.push(0);
        assert!(matches!(
            parse(&long, &fx.shape),
            Err(BlobError::TrailingBytes { .. })
        ));
    }
}

/// Overwrites header fields with hostile values and random bytes anywhere; whatever `parse`
/// accepts must still round-trip byte for byte.
#[test]
fn corrupted_headers_never_panic() {
    let mut rng = Rng(11);
    let nasty: [u64; 9] = [
        0,
        1,
        2,
        3,
        0x7fff_ffff,
        0x8000_0000,
        0xffff_ffff,
        u64::MAX,
        u64::MAX / 3,
    ];
    let (mut ok, mut err) = (0, 0);
    for round in 0..300 {
        let fx = fixture(&mut rng, 1 + round % 2);
        for _ in 0..40 {
            let mut b = fx.blob.clone();
            for _ in 0..1 + rng.below(3) {
                if rng.chance(80) {
                    let (at, w) = fx.marks[rng.below(fx.marks.len() as u64) as usize];
                    let x = match rng.below(3) {
                        0 => nasty[rng.below(9) as usize],
                        1 => rng.next(),
                        _ => {
                            let mut a = [0u8; 8];
                            a[..w].copy_from_slice(&b[at..at + w]);
                            u64::from_le_bytes(a)
                                .wrapping_add(rng.below(5))
                                .wrapping_sub(2)
                        }
                    };
                    b[at..at + w].copy_from_slice(&x.to_le_bytes()[..w]);
                } else {
                    let at = rng.below(b.len() as u64) as usize;
                    b[at] ^= 1 << rng.below(8);
                }
            }
            match parse(&b, &fx.shape) {
                Ok(state) => {
                    ok += 1;
                    assert_eq!(reassemble(&mut rng, &state), b);
                }
                Err(e) => {
                    err += 1;
                    assert!(!e.to_string().contains('\n'));
                }
            }
        }
    }
    assert!(ok > 100 && err > 1000, "ok {ok} err {err}");
}

#[test]
fn rejects_oddities() {
    let mut rng = Rng(5);
    let cache = loop {
        let c = Cache::random(&mut rng, false, true);
        if c.n_stream == 1 && c.cells[0].iter().flatten().any(|c| c.seqs.contains(&0)) {
            break c;
        }
    };
    let shape = BlobShape {
        v_layers_per_section: Some(vec![cache.v_layers()]),
        ..BlobShape::unified(false)
    };
    let mut blob = Vec::new();
    write_blob_header(0, &mut blob);
    cache.write(0, &mut blob, &mut Vec::new());
    assert!(parse(&blob, &shape).is_ok());
    let mut bad_magic = blob.clone();
    bad_magic[0] ^= 1;
    assert!(matches!(
        parse(&bad_magic, &shape),
        Err(BlobError::BadMagic { .. })
    ));
    // n_seq_id sits right after the first cell's pos: byte 8 + 4 (n_stream) + 4 (cell_count) + 4.
    let mut two_seqs = blob.clone();
    two_seqs[20] = 2;
    let e = parse(&two_seqs, &shape).unwrap_err().to_string();
    assert!(e.contains("n_seq_id") && e.contains("byte 20"), "{e}");
    let mut other_seq = blob.clone();
    other_seq[4] = 1;
    assert!(parse(&other_seq, &shape)
        .unwrap_err()
        .to_string()
        .contains("cell seq_id"));
    // Wrong model facts: too many V layers, or an ext that is not there.
    let more_v = BlobShape {
        v_layers_per_section: Some(vec![cache.layers.len() as u32 + 1]),
        ..shape.clone()
    };
    assert!(parse(&blob, &more_v).is_err());
    assert!(parse(&blob, &BlobShape::unified(true)).is_err());
    assert!(parse(
        &blob,
        &BlobShape {
            cell_ext_bytes: 4,
            ..shape.clone()
        }
    )
    .is_err());
    assert!(parse(
        &blob,
        &BlobShape {
            sections: 2,
            ..shape
        }
    )
    .is_err());
}

#[test]
fn two_non_empty_streams_are_rejected() {
    let mut blob = Vec::new();
    write_blob_header(0, &mut blob);
    let layout = SectionLayout {
        v_trans: false,
        n_layer: 1,
        n_rot_k: 0,
        n_rot_v: 0,
        k: vec![KLayer {
            type_id: F16,
            row_size: 4,
        }],
        v: vec![VLayer::Plain {
            type_id: F16,
            row_size: 4,
        }],
    };
    let cells = [CellMeta {
        pos: 0,
        seq_id: 0,
        ext: None,
    }];
    let rows = [0u8; 8];
    let mut one = Vec::new();
    assemble_section(&layout, 2, Some(0), &cells, &[&rows], &mut one).unwrap();
    let mut second = Vec::new();
    assemble_section(&layout, 2, Some(1), &cells, &[&rows], &mut second).unwrap();
    // Stream 0's part of `one` followed by stream 1's part of `second`.
    let stream0_end = one.len() - 4;
    blob.extend_from_slice(&one[..stream0_end]);
    blob.extend_from_slice(&second[8..]);
    let e = parse(&blob, &BlobShape::unified(false))
        .unwrap_err()
        .to_string();
    assert!(e.contains("second non-empty stream"), "{e}");
}

#[test]
fn assemble_checks_its_inputs() {
    let layout = SectionLayout {
        v_trans: true,
        n_layer: 2,
        n_rot_k: 0,
        n_rot_v: 0,
        k: vec![
            KLayer {
                type_id: Q8_0,
                row_size: 34,
            },
            KLayer {
                type_id: Q8_0,
                row_size: 34,
            },
        ],
        v: vec![VLayer::Transposed {
            type_id: F16,
            el_size: 2,
            n_embd: 3,
        }],
    };
    assert_eq!(layout.bytes_per_cell(), 74);
    let cells = [CellMeta {
        pos: 5,
        seq_id: 0,
        ext: None,
    }; 2];
    let rows = vec![7u8; 148];
    let mut out = Vec::new();
    assert!(assemble_section(&layout, 1, Some(0), &cells, &[&rows], &mut out).is_ok());
    let mut out = Vec::new();
    let err = |r: Result<(), BlobError>| r.unwrap_err().to_string();
    assert!(err(assemble_section(
        &layout,
        1,
        Some(0),
        &cells,
        &[&rows[..74]],
        &mut out
    ))
    .contains("cells in row chunks"));
    assert!(err(assemble_section(
        &layout,
        1,
        Some(0),
        &cells,
        &[&rows[..100]],
        &mut out
    ))
    .contains("multiple"));
    assert!(assemble_section(&layout, 1, Some(1), &cells, &[&rows], &mut out).is_err());
    assert!(assemble_section(&layout, 1, None, &cells, &[&rows], &mut out).is_err());
    assert!(assemble_section(&layout, 0, Some(0), &cells, &[&rows], &mut out).is_err());
    let mixed = [
        cells[0],
        CellMeta {
            ext: Some([0; 12]),
            ..cells[0]
        },
    ];
    assert!(assemble_section(&layout, 1, Some(0), &mixed, &[&rows], &mut out).is_err());
    let mut broken = layout.clone();
    broken.v[0] = VLayer::Plain {
        type_id: F16,
        row_size: 6,
    };
    assert!(assemble_section(&broken, 1, Some(0), &cells, &[&rows], &mut out).is_err());
    // An empty section is the same bytes whatever the layout.
    let mut a = Vec::new();
    let mut b = Vec::new();
    assemble_section(&layout, 4, None, &[], &[], &mut a).unwrap();
    write_empty_section(4, &mut b).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.len(), 20);
    assert!(assemble_blob(
        0,
        &[SectionParts {
            layout: None,
            n_stream: 1,
            stream: Some(0),
            cells: &cells,
            row_chunks: &[&rows]
        }]
    )
    .is_err());
}

#[test]
fn layout_encoding_is_validated() {
    let layout = SectionLayout {
        v_trans: false,
        n_layer: 3,
        n_rot_k: 64,
        n_rot_v: 0,
        k: vec![
            KLayer {
                type_id: F16,
                row_size: 512
            };
            3
        ],
        v: vec![
            VLayer::Plain {
                type_id: Q8_0,
                row_size: 272
            };
            2
        ],
    };
    let bytes = layout.to_bytes();
    assert_eq!(SectionLayout::from_bytes(&bytes).unwrap(), layout);
    for cut in 0..bytes.len() {
        assert!(SectionLayout::from_bytes(&bytes[..cut]).is_err());
    }
    let mut rng = Rng(9);
    for _ in 0..5000 {
        let mut b = bytes.clone();
        let at = rng.below(b.len() as u64) as usize;
        b[at] = rng.next() as u8;
        if let Ok(l) = SectionLayout::from_bytes(&b) {
            assert_eq!(l.to_bytes(), b);
        }
    }
    let mut long = bytes.clone();
    long.push(0);
    assert!(SectionLayout::from_bytes(&long).is_err());
    let huge = SectionLayout {
        k: vec![
            KLayer {
                type_id: 0,
                row_size: u64::MAX / 2
            };
            3
        ],
        ..layout.clone()
    };
    assert!(huge.validate().is_err());
    assert!(SectionLayout::from_bytes(&huge.to_bytes()).is_err());
    let mismatched = SectionLayout {
        v_trans: true,
        ..layout
    };
    assert!(SectionLayout::from_bytes(&mismatched.to_bytes()).is_err());
}

/// `cargo test --release -- --ignored --nocapture throughput`: MB/s of paging a ~100 MB blob out
/// (parse + rows of 256-cell pages) and back in (assemble), for plain and transposed V.
#[test]
#[ignore]
fn throughput() {
    use std::time::Instant;
    for v_trans in [false, true] {
        // A 1.5B-class shape: 28 layers, f16 K/V of 256 wide (2 KV heads x 128): 28 KiB per cell.
        let n_layer = 28usize;
        let n_embd = 256u32;
        let row = 512u64;
        let n_cells = 3600usize;
        let mut rng = Rng(1);
        let mut blob = Vec::new();
        write_blob_header(0, &mut blob);
        let layout = SectionLayout {
            v_trans,
            n_layer: n_layer as u32,
            n_rot_k: 0,
            n_rot_v: 0,
            k: vec![
                KLayer {
                    type_id: F16,
                    row_size: row
                };
                n_layer
            ],
            v: vec![
                if v_trans {
                    VLayer::Transposed {
                        type_id: F16,
                        el_size: 2,
                        n_embd,
                    }
                } else {
                    VLayer::Plain {
                        type_id: F16,
                        row_size: row,
                    }
                };
                n_layer
            ],
        };
        let cells: Vec<CellMeta> = (0..n_cells as i32)
            .map(|p| CellMeta {
                pos: p,
                seq_id: 0,
                ext: None,
            })
            .collect();
        let rows = rng.bytes(n_cells * layout.bytes_per_cell() as usize);
        assemble_section(&layout, 1, Some(0), &cells, &[&rows], &mut blob).unwrap();
        let mb = blob.len() as f64 / 1e6;
        let shape = BlobShape::unified(false);
        let reps = 5;
        let t = Instant::now();
        let mut pages = Vec::new();
        for _ in 0..reps {
            let state = parse(&blob, &shape).unwrap();
            let sec = &state.sections[0];
            pages = (0..n_cells)
                .step_by(256)
                .map(|a| sec.rows_for_cells(a..(a + 256).min(n_cells)).unwrap())
                .collect();
        }
        let out_s = t.elapsed().as_secs_f64() / reps as f64;
        let refs: Vec<&[u8]> = pages.iter().map(Vec::as_slice).collect();
        let t = Instant::now();
        let mut back = Vec::new();
        for _ in 0..reps {
            let parts = [SectionParts {
                layout: Some(&layout),
                n_stream: 1,
                stream: Some(0),
                cells: &cells,
                row_chunks: &refs,
            }];
            back = assemble_blob(0, &parts).unwrap();
        }
        let in_s = t.elapsed().as_secs_f64() / reps as f64;
        assert_eq!(back, blob);
        // Baseline: copying the blob into a fresh buffer (memcpy plus page faults).
        let t = Instant::now();
        for _ in 0..reps {
            back = std::hint::black_box(blob.to_vec());
        }
        let copy_s = t.elapsed().as_secs_f64() / reps as f64;
        eprintln!(
            "v_trans={v_trans}: {mb:.1} MB blob; to pages {:.0} MB/s, assemble {:.0} MB/s, \
             plain copy {:.0} MB/s",
            mb / out_s,
            mb / in_s,
            mb / copy_s
        );
    }
}
