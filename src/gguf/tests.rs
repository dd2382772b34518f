//! Reader/writer tests: round trips, and hostile inputs (truncation at every offset, bit
//! flips, huge counts, bad layouts) that must give an error, never a panic or a huge
//! allocation.

use std::path::{Path, PathBuf};

use super::*;
use crate::synth::*;

/// `check_loadable`, apart: its table of defects is long.
mod loadable;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn write_bytes(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write test file");
    p
}

fn read_bytes(bytes: &[u8]) -> Result<GgufFile, GgufError> {
    super::reader::read_header_bytes(bytes)
}

/// Hand-assembled GGUF bytes, for layouts the writer refuses to produce.
struct Raw(Vec<u8>);

impl Raw {
    fn new(version: u32, n_tensors: u64, n_kv: u64) -> Self {
        let mut r = Raw(b"GGUF".to_vec());
        r.u32(version).u64(n_tensors).u64(n_kv);
        r
    }
    fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    fn str(&mut self, s: &str) -> &mut Self {
        self.u64(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
        self
    }
    fn kv_str(&mut self, k: &str, v: &str) -> &mut Self {
        self.str(k).u32(8).str(v)
    }
    fn kv_u32(&mut self, k: &str, v: u32) -> &mut Self {
        self.str(k).u32(4).u32(v)
    }
    fn arch(&mut self) -> &mut Self {
        self.kv_str("general.architecture", "llama")
    }
    fn tensor(&mut self, name: &str, dims: &[u64], ty: u32, offset: u64) -> &mut Self {
        self.str(name).u32(dims.len() as u32);
        for &d in dims {
            self.u64(d);
        }
        self.u32(ty).u64(offset)
    }
    fn pad(&mut self) -> &mut Self {
        while !self.0.len().is_multiple_of(32) {
            self.0.push(0);
        }
        self
    }
    fn zeros(&mut self, n: usize) -> &mut Self {
        self.0.resize(self.0.len() + n, 0);
        self
    }
}

fn nested() -> GgufValue {
    GgufValue::Array(GgufArray::Array(vec![
        GgufArray::U64(vec![1, 2]),
        GgufArray::String(["x", "yz"].iter().collect()),
        GgufArray::I16(vec![]),
    ]))
}

/// A small file exercising every value type, nested arrays and both tensor types.
fn sample_writer() -> GgufWriter {
    let mut w = GgufWriter::new();
    w.add_str("general.architecture", "llama")
        .add_str("general.name", "sample ünïcode")
        .add_u32("general.file_type", 15)
        .add_i32("llama.context_length", 2048) // i32 on purpose: get_u64 must coerce
        .add_u64("llama.attention.sliding_window", 512)
        .add_f32("llama.rope.freq_base", 10000.0)
        .add_bool("tokenizer.ggml.add_bos_token", true)
        .add_str_array("tokenizer.ggml.tokens", &["<unk>", "a", "▁b", ""])
        .add_f32_array("tokenizer.ggml.scores", &[0.0, -1.0, -2.5, 3.0])
        .add_i32_array("tokenizer.ggml.token_type", &[2, 1, 1, 1])
        .add_str("tokenizer.chat_template", "{{ x }}")
        .add_value("t.u8", GgufValue::U8(7))
        .add_value("t.i8", GgufValue::I8(-7))
        .add_value("t.u16", GgufValue::U16(65535))
        .add_value("t.i16", GgufValue::I16(-300))
        .add_value("t.i64", GgufValue::I64(-5))
        .add_value("t.f64", GgufValue::F64(0.25))
        .add_value(
            "t.bools",
            GgufValue::Array(GgufArray::Bool(vec![true, false])),
        )
        .add_value("t.u8s", GgufValue::Array(GgufArray::U8(vec![1, 2, 3])))
        .add_value("t.nested", nested());
    w.add_tensor_f16("token_embd.weight", &[8, 4], &[0.5; 32])
        .add_tensor_f32("output_norm.weight", &[8], &[1.0; 8])
        .add_tensor_f16("odd.weight", &[3, 1, 1, 1], &[1.0, 2.0, 3.0]);
    w
}

fn sample_bytes() -> Vec<u8> {
    let mut out = Vec::new();
    sample_writer().write_to(&mut out).expect("write sample");
    out
}

#[test]
fn round_trip_all_value_types() {
    let bytes = sample_bytes();
    let f = read_bytes(&bytes).expect("valid file");
    assert_eq!(f.version(), 3);
    assert_eq!(f.architecture(), "llama");
    assert_eq!(f.get_str("general.name"), Some("sample ünïcode"));
    assert_eq!(f.get_u64("llama.context_length"), Some(2048));
    assert_eq!(f.get_u32("t.u16"), Some(65535));
    assert_eq!(f.get_u64("t.i64"), None, "negative values do not coerce");
    assert_eq!(f.get("t.i8"), Some(&GgufValue::I8(-7)));
    assert_eq!(f.get("t.i16"), Some(&GgufValue::I16(-300)));
    assert_eq!(f.get("t.f64"), Some(&GgufValue::F64(0.25)));
    assert_eq!(f.get_f64("llama.rope.freq_base"), Some(10000.0));
    assert_eq!(f.get_bool("tokenizer.ggml.add_bos_token"), Some(true));
    assert_eq!(f.get_array_len("tokenizer.ggml.tokens"), Some(4));
    let toks = f
        .get_array("tokenizer.ggml.tokens")
        .and_then(GgufArray::as_strings);
    let toks: Vec<&str> = toks.expect("string array").iter().collect();
    assert_eq!(toks, ["<unk>", "a", "▁b", ""]);
    assert_eq!(f.get("t.nested"), Some(&nested()));
    assert_eq!(f.metadata().count(), 20);

    let t = f.tensors();
    assert_eq!(t.len(), 3);
    assert_eq!(t[0].dims, [8, 4]);
    assert_eq!(
        (t[0].ggml_type, t[0].n_bytes, t[0].offset),
        (GgmlType::F16, 64, 0)
    );
    assert_eq!(
        (t[1].ggml_type, t[1].n_bytes, t[1].offset),
        (GgmlType::F32, 32, 64)
    );
    assert_eq!((t[2].n_bytes, t[2].offset, t[2].n_elements()), (6, 96, 3));
    assert_eq!(f.tensor("output_norm.weight"), Some(&t[1]));
    assert_eq!(f.data_offset() % 32, 0);
    assert_eq!(f.header_len(), f.data_offset());
    assert!(f.tensor_table_end() <= f.data_offset());
    assert_eq!(f.file_size(), bytes.len() as u64);
    assert_eq!(f.data_offset() + 128, f.file_size());

    let info = f.info();
    assert_eq!(info.name.as_deref(), Some("sample ünïcode"));
    assert_eq!(info.quantization, "Q4_K_M");
    assert_eq!(info.context_length, Some(2048));
    assert_eq!(info.sliding_window, Some(512));
    assert_eq!(info.n_params, 32 + 8 + 3);
    assert!(info.has_chat_template);
}

#[test]
fn fingerprint_covers_header_and_size_only() {
    let dir = tmp();
    let bytes = sample_bytes();
    let p = write_bytes(dir.path(), "a.gguf", &bytes);
    let f = read_header(&p).expect("valid");
    let fp = fingerprint(&p).expect("fingerprint");
    assert_eq!(fp, f.fingerprint());
    assert_eq!(fp.len(), 64);

    // Independent recomputation.
    let mut h = blake3::Hasher::new();
    h.update(&bytes[..f.tensor_table_end() as usize]);
    h.update(&(bytes.len() as u64).to_le_bytes());
    assert_eq!(fp, h.finalize().to_hex().to_string());

    // Tensor data is not covered...
    let mut data_changed = bytes.clone();
    data_changed[f.data_offset() as usize] ^= 0xff;
    let p2 = write_bytes(dir.path(), "b.gguf", &data_changed);
    assert_eq!(fingerprint(&p2).expect("fingerprint"), fp);
    // ...but the size and the metadata are.
    let mut longer = bytes.clone();
    longer.extend_from_slice(&[0; 32]);
    let p3 = write_bytes(dir.path(), "c.gguf", &longer);
    assert_ne!(fingerprint(&p3).expect("fingerprint"), fp);
    let mut w = sample_writer();
    w.add_u32("extra.key", 1);
    let p4 = dir.path().join("d.gguf");
    w.write_file(&p4).expect("write");
    assert_ne!(fingerprint(&p4).expect("fingerprint"), fp);
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = sample_bytes();
    let f = read_bytes(&bytes).expect("valid");
    let last = f
        .tensors()
        .iter()
        .map(|t| t.offset + t.n_bytes)
        .max()
        .unwrap_or(0);
    let data_end = (f.data_offset() + last) as usize;
    for len in 0..bytes.len() {
        let r = read_bytes(&bytes[..len]);
        // Trailing padding after the last tensor is optional, as in llama.cpp.
        assert_eq!(r.is_ok(), len >= data_end, "len {len}: {r:?}");
    }
    // Through the file path too, for a few lengths.
    let dir = tmp();
    for len in [0, 3, 4, 20, data_end - 1] {
        let p = write_bytes(dir.path(), "t.gguf", &bytes[..len]);
        assert!(read_header(&p).is_err());
    }
}

#[test]
fn bit_flips_never_panic() {
    let bytes = sample_bytes();
    let header = read_bytes(&bytes).expect("valid").data_offset() as usize;
    for bit in 0..header * 8 {
        let mut b = bytes.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        let _ = read_bytes(&b); // must return, either way
    }
}

#[test]
fn random_word_overwrites_never_panic() {
    // Counts and lengths set to random or extreme values, e.g. near u64::MAX.
    let bytes = sample_bytes();
    let header = read_bytes(&bytes).expect("valid").data_offset() as usize;
    let mut x: u64 = 0x1234_5678;
    for i in 0..3000u64 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let pos = (x >> 33) as usize % (header - 8);
        let val = match i % 4 {
            0 => u64::MAX - (x & 0xff),
            1 => x >> 1,
            2 => x & 0xffff_ffff,
            _ => 1 << (x % 64),
        };
        let mut b = bytes.clone();
        b[pos..pos + 8].copy_from_slice(&val.to_le_bytes());
        let _ = read_bytes(&b);
    }
}

#[test]
fn rejects_bad_magic_and_versions() {
    assert!(matches!(read_bytes(b""), Err(GgufError::BadMagic { .. })));
    assert!(matches!(read_bytes(b"GG"), Err(GgufError::BadMagic { .. })));
    let e = read_bytes(b"PK\x03\x04 this is a zip").unwrap_err();
    assert!(matches!(e, GgufError::BadMagic { .. }), "{e}");
    assert!(e.to_string().contains("not a GGUF file"));
    assert!(
        !e.to_string().contains("4b"),
        "echoes the file's bytes: {e}"
    );
    for (v, hint) in [(1u32, "v1"), (0x0300_0000, "big-endian"), (4, "")] {
        let mut r = Raw::new(v, 0, 1);
        r.arch();
        let e = read_bytes(&r.0).unwrap_err();
        assert!(matches!(e, GgufError::UnsupportedVersion { version, .. } if version == v));
        assert!(e.to_string().contains(hint), "{e}");
    }
    let mut v2 = Raw::new(2, 0, 1);
    v2.arch();
    assert_eq!(read_bytes(&v2.0).expect("v2 is accepted").version(), 2);
}

#[test]
fn rejects_huge_counts_and_lengths() {
    let e = read_bytes(&Raw::new(3, u64::MAX, 1).arch().0).unwrap_err();
    assert!(matches!(e, GgufError::LimitExceeded { .. }), "{e}");
    let e = read_bytes(&Raw::new(3, 1000, 1).arch().0).unwrap_err();
    assert!(matches!(e, GgufError::LengthOutOfRange { .. }), "{e}");
    let e = read_bytes(&Raw::new(3, 0, u64::MAX >> 1).arch().0).unwrap_err();
    assert!(matches!(e, GgufError::LimitExceeded { .. }), "{e}");
    // String length near u64::MAX.
    let mut r = Raw::new(3, 0, 1);
    r.u64(u64::MAX - 3).zeros(64);
    let e = read_bytes(&r.0).unwrap_err();
    assert!(matches!(e, GgufError::LengthOutOfRange { .. }), "{e}");
    assert!(e.to_string().contains("metadata entry 0"), "{e}");
    // Array of 2^61 strings.
    let mut r = Raw::new(3, 0, 2);
    r.arch()
        .str("tokenizer.ggml.tokens")
        .u32(9)
        .u32(8)
        .u64(1 << 61)
        .zeros(64);
    let e = read_bytes(&r.0).unwrap_err();
    assert!(matches!(e, GgufError::LengthOutOfRange { .. }), "{e}");
    assert!(e.to_string().contains("tokenizer.ggml.tokens"), "{e}");
    // Deep nesting.
    let mut r = Raw::new(3, 0, 2);
    r.arch().str("deep").u32(9);
    for _ in 0..10 {
        r.u32(9).u64(1);
    }
    r.u32(4).u64(0);
    let e = read_bytes(&r.0).unwrap_err();
    assert!(matches!(e, GgufError::LimitExceeded { .. }), "{e}");
}

#[test]
fn rejects_bad_metadata() {
    let cases: Vec<(Raw, &str)> = vec![
        (
            {
                let mut r = Raw::new(3, 0, 1);
                r.kv_u32("general.alignment", 32);
                r
            },
            "architecture",
        ),
        (
            {
                let mut r = Raw::new(3, 0, 1);
                r.kv_u32("general.architecture", 1);
                r
            },
            "must be a string",
        ),
        (
            {
                let mut r = Raw::new(3, 0, 2);
                r.arch().arch();
                r
            },
            "duplicate metadata key",
        ),
        (
            {
                let mut r = Raw::new(3, 0, 2);
                r.arch().kv_u32("general.alignment", 48);
                r
            },
            "power of two",
        ),
        (
            {
                let mut r = Raw::new(3, 0, 2);
                r.arch().str("general.alignment").u32(10).u64(32);
                r
            },
            "must be u32",
        ),
        (
            {
                let mut r = Raw::new(3, 0, 2);
                r.arch().str("x").u32(13).u32(0);
                r
            },
            "bad value type 13",
        ),
        (
            {
                let mut r = Raw::new(3, 0, 2);
                r.arch().str("x").u32(9).u32(77).u64(0);
                r
            },
            "bad value type 77",
        ),
        (
            {
                let mut r = Raw::new(3, 0, 2);
                r.arch().str("").u32(4).u32(0);
                r
            },
            "empty",
        ),
    ];
    for (raw, want) in cases {
        let e = read_bytes(&raw.0).unwrap_err().to_string();
        assert!(e.contains(want), "expected '{want}' in: {e}");
    }
}

#[test]
fn rejects_bad_tensors() {
    let one = |name: &str, dims: &[u64], ty: u32, offset: u64, data: usize| {
        let mut r = Raw::new(3, 1, 1);
        r.arch().tensor(name, dims, ty, offset).pad().zeros(data);
        r
    };
    let cases = [
        (one("t", &[8], 0, 0, 16), "data out of range"),
        (one("t", &[8], 0, 4, 64), "not a multiple of the alignment"),
        (one("t", &[8], 0, 32, 64), "packed"),
        (one("t", &[33], 2, 0, 64), "block size 32"),
        (one("t", &[32], 4, 0, 64), "unknown ggml type 4"),
        (one("t", &[32], 99, 0, 64), "unknown ggml type 99"),
        (one("t", &[], 0, 0, 64), "0 dimensions"),
        (one("t", &[1, 1, 1, 1, 1], 0, 0, 64), "5 dimensions"),
        (one("t", &[u64::MAX], 0, 0, 64), "overflows"),
        (one("t", &[1 << 40, 1 << 40], 0, 0, 64), "overflows"),
        (one("t", &[1 << 61], 0, 0, 64), "data out of range"),
        (one(&"n".repeat(64), &[8], 0, 0, 64), "at most 63"),
    ];
    for (raw, want) in cases {
        let e = read_bytes(&raw.0).unwrap_err().to_string();
        assert!(e.contains(want), "expected '{want}' in: {e}");
    }
    let two = |a: (u64, u64), b: (u64, u64)| {
        let mut r = Raw::new(3, 2, 1);
        r.arch()
            .tensor("a", &[a.0], 0, a.1)
            .tensor("b", &[b.0], 0, b.1)
            .pad()
            .zeros(256);
        read_bytes(&r.0).unwrap_err().to_string()
    };
    assert!(two((16, 0), (8, 32)).contains("overlap"));
    assert!(two((8, 0), (8, 0)).contains("overlap"));
    assert!(two((8, 64), (8, 0)).contains("packed"));
    let mut dup = Raw::new(3, 2, 1);
    dup.arch()
        .tensor("a", &[8], 0, 0)
        .tensor("a", &[8], 0, 32)
        .pad()
        .zeros(64);
    assert!(matches!(
        read_bytes(&dup.0),
        Err(GgufError::DuplicateTensor(_))
    ));
}

#[test]
fn accepts_quantized_and_custom_alignment() {
    // Q4_K rows of 256 elements are 144 bytes; alignment 64 from metadata.
    let mut r = Raw::new(3, 2, 2);
    r.arch().kv_u32("general.alignment", 64);
    r.tensor("q", &[256, 2], 12, 0).tensor("z", &[0, 4], 0, 320);
    while !r.0.len().is_multiple_of(64) {
        r.0.push(0);
    }
    r.zeros(320);
    let f = read_bytes(&r.0).expect("valid");
    assert_eq!(f.alignment(), 64);
    assert_eq!(f.data_offset() % 64, 0);
    assert_eq!(f.tensors()[0].n_bytes, 288);
    assert_eq!(f.tensors()[1].n_bytes, 0);
    assert_eq!(f.info().quantization, "unknown");
}

#[test]
fn no_tensors_means_no_padding() {
    let mut r = Raw::new(3, 0, 1);
    r.arch();
    let f = read_bytes(&r.0).expect("valid");
    assert_eq!(f.data_offset(), r.0.len() as u64);
    assert_eq!(f.header_len(), f.file_size());
}

#[test]
fn large_vocabulary_parses() {
    // Gemma-3-sized vocabulary: 262k tokens with scores and types.
    let n = 262_144;
    let tokens: Vec<String> = (0..n).map(|i| format!("▁tok{i}")).collect();
    let mut w = GgufWriter::new();
    w.add_str("general.architecture", "gemma3")
        .add_str_array("tokenizer.ggml.tokens", &tokens)
        .add_f32_array("tokenizer.ggml.scores", &vec![0.0; n])
        .add_i32_array("tokenizer.ggml.token_type", &vec![1; n]);
    let dir = tmp();
    let p = dir.path().join("big.gguf");
    w.write_file(&p).expect("write");
    // (How fast is a benchmark's question, not a test's: timings fail on a loaded machine.)
    let f = read_header(&p).expect("valid");
    assert_eq!(f.get_array_len("tokenizer.ggml.tokens"), Some(n));
    let toks = f
        .get_array("tokenizer.ggml.tokens")
        .and_then(GgufArray::as_strings);
    assert_eq!(toks.and_then(|t| t.get(n - 1)), Some("▁tok262143"));
}
