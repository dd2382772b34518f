//! `check_loadable`: every hyperparameter and vocabulary defect that aborts llama.cpp is
//! refused with a message naming the key, and random damage never panics the checks.

use std::time::{Duration, Instant};

use crate::gguf::reader::read_header_bytes;
use crate::gguf::*;
use crate::synth::*;

/// A small tiny model (fast to write and mutate in memory).
fn small_spec() -> TinyLlamaSpec {
    TinyLlamaSpec {
        n_layer: 2,
        n_embd: 32,
        n_head: 4,
        n_head_kv: 2,
        n_ff: 64,
        ..TinyLlamaSpec::default()
    }
}

fn bytes_of(w: &GgufWriter) -> Vec<u8> {
    let mut out = Vec::new();
    w.write_to(&mut out).expect("write");
    out
}

fn check_bytes(bytes: &[u8]) -> Result<(), GgufError> {
    read_header_bytes(bytes)?.check_loadable()
}

fn tokens() -> Vec<String> {
    let f = read_header_bytes(&bytes_of(&tiny_llama_writer(&small_spec()).unwrap())).unwrap();
    let list = f
        .get_array("tokenizer.ggml.tokens")
        .unwrap()
        .as_strings()
        .unwrap();
    list.iter().map(str::to_string).collect()
}

fn patched(key: &str, value: GgufValue) -> Result<(), GgufError> {
    let mut w = tiny_llama_writer(&small_spec()).unwrap();
    w.set_value(key, value);
    check_bytes(&bytes_of(&w))
}

fn with_tokens(list: &[String]) -> Result<(), GgufError> {
    let mut w = tiny_llama_writer(&small_spec()).unwrap();
    w.set_value(
        "tokenizer.ggml.tokens",
        GgufValue::Array(GgufArray::String(list.iter().collect())),
    );
    check_bytes(&bytes_of(&w))
}

fn assert_refused(r: Result<(), GgufError>, needle: &str) {
    let e = r.expect_err(needle).to_string();
    assert!(e.contains(needle), "expected {needle:?} in: {e}");
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn tiny_model_is_loadable() {
    check_bytes(&bytes_of(&tiny_llama_writer(&small_spec()).unwrap())).unwrap();
    check_bytes(&bytes_of(
        &tiny_llama_writer(&TinyLlamaSpec::default()).unwrap(),
    ))
    .unwrap();
}

#[test]
fn hyperparameters_out_of_range_are_refused() {
    use GgufValue::*;
    let cases = [
        ("llama.block_count", U32(0), "llama.block_count"),
        ("llama.block_count", U32(1000), "outside 1..=512"),
        ("llama.block_count", U64(1 << 31), "llama.block_count"),
        ("llama.block_count", F32(2.0), "must be an integer"),
        ("llama.context_length", U64(1 << 31), "llama.context_length"),
        ("llama.context_length", U32(0), "llama.context_length"),
        ("llama.embedding_length", U32(0), "llama.embedding_length"),
        (
            "llama.attention.layer_norm_rms_epsilon",
            F32(f32::NAN),
            "NaN",
        ),
        (
            "llama.attention.layer_norm_rms_epsilon",
            F32(f32::INFINITY),
            "inf",
        ),
        ("llama.attention.layer_norm_rms_epsilon", F32(0.0), "(0, 1)"),
        (
            "llama.attention.layer_norm_rms_epsilon",
            F32(-1e-5),
            "(0, 1)",
        ),
        ("llama.rope.freq_base", F32(f32::NAN), "rope.freq_base"),
        ("llama.attention.head_count", U32(0), "query heads"),
        ("llama.attention.head_count_kv", U32(3), "divide"),
        ("llama.attention.head_count", U32(6), "do not divide"),
        ("llama.rope.dimension_count", U32(4), "head size 8"),
        (
            "llama.rope.scaling.type",
            String("bogus".into()),
            "rope.scaling.type",
        ),
        ("llama.expert_count", U32(4), "mixture of experts"),
        ("llama.expert_used_count", U32(2), "mixture of experts"),
        ("general.alignment", U32(1), "general.alignment"),
        ("general.alignment", U32(8), "at least 32"),
    ];
    for (key, value, needle) in cases {
        assert_refused(patched(key, value.clone()), needle);
    }
    let per_layer = GgufValue::Array(GgufArray::U32(vec![4, 4, 4]));
    assert_refused(
        patched("llama.attention.head_count", per_layer),
        "3 entries for 2 layers",
    );
    let mut w = tiny_llama_writer(&small_spec()).unwrap();
    w.remove_value("llama.attention.layer_norm_rms_epsilon");
    assert_refused(check_bytes(&bytes_of(&w)), "is missing");
}

#[test]
fn per_layer_head_counts_and_larger_alignment_are_accepted() {
    let per_layer = GgufValue::Array(GgufArray::U32(vec![4, 4]));
    patched("llama.attention.head_count", per_layer).unwrap();
    // The writer pads to 32 bytes, which also satisfies 32-byte alignment keys.
    patched("general.alignment", GgufValue::U32(32)).unwrap();
}

#[test]
fn vocabulary_defects_are_refused() {
    let good = tokens();
    with_tokens(&good).unwrap();

    let mut dup = good.clone();
    dup[300] = dup[301].clone();
    assert_refused(with_tokens(&dup), "tokens 300 and 301 are both");

    let empty = vec![String::new(); good.len()];
    assert_refused(with_tokens(&empty), "every token string is empty");

    // Two empty strings are distinct to llama.cpp ("[EMPTY_<id>]"), unless one collides.
    let mut two_empty = good.clone();
    two_empty[300] = String::new();
    two_empty[301] = String::new();
    with_tokens(&two_empty).unwrap();
    two_empty[302] = "[EMPTY_300]".into();
    assert_refused(with_tokens(&two_empty), "tokens 300 and 302");

    let mut no_byte = good.clone();
    let ff = no_byte.iter().position(|t| t == "<0xFF>").unwrap();
    no_byte[ff] = "<0xFF>x".into();
    assert_refused(with_tokens(&no_byte), "no byte token <0xFF>");

    assert_refused(with_tokens(&good[..good.len() - 1]), "vocabulary has");

    assert_refused(with_tokens(&[]), "has 0 tokens");

    let short_types = GgufValue::Array(GgufArray::I32(vec![1; 10]));
    assert_refused(
        patched("tokenizer.ggml.token_type", short_types),
        "entries for",
    );
    let mut types = vec![1; good.len()];
    types[7] = 99;
    let bad_types = GgufValue::Array(GgufArray::I32(types));
    assert_refused(
        patched("tokenizer.ggml.token_type", bad_types),
        "token 7 has type 99",
    );
    let bad_scores = GgufValue::Array(GgufArray::U8(vec![0; good.len()]));
    assert_refused(patched("tokenizer.ggml.scores", bad_scores), "f32 or i32");
    assert_refused(
        patched("tokenizer.ggml.tokens", GgufValue::U32(3)),
        "array of strings",
    );
}

#[test]
fn token_bytes_llama_cpp_cannot_decode_are_refused() {
    let mut bytes = bytes_of(&tiny_llama_writer(&small_spec()).unwrap());
    let at = find(&bytes, b"<|im_end|>");
    // A lone continuation byte: llama.cpp's decoder throws on it.
    bytes[at] = 0x80;
    assert_refused(check_bytes(&bytes), "is not valid UTF-8");
    // A UTF-8-encoded surrogate is invalid for Rust but decodes in llama.cpp: accepted.
    bytes[at..at + 3].copy_from_slice(b"\xED\xA0\x80");
    check_bytes(&bytes).unwrap();
}

fn find(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle")
}

/// xorshift64*: a seeded generator, so a failure can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random values of every kind, biased towards the edges that break loaders.
fn random_value(rng: &mut Rng) -> GgufValue {
    use GgufValue::*;
    let edges = [0, 1, 2, 3, 255, 512, 513, 1 << 31, u64::MAX];
    let n = edges[rng.below(edges.len())];
    match rng.below(9) {
        0 => U32(n as u32),
        1 => I32(n as i32),
        2 => U64(n),
        3 => I64(n as i64),
        4 => F32([f32::NAN, f32::INFINITY, -1.0, 0.0, 1e-6, 1e30][rng.below(6)]),
        5 => String(["", "none", "yarn", "llama", "gpt2"][rng.below(5)].into()),
        6 => Bool(n % 2 == 0),
        7 => Array(GgufArray::U32(vec![n as u32; rng.below(5)])),
        _ => Array(GgufArray::String(
            ["", "a", "a", "<0x41>"][..rng.below(5)].iter().collect(),
        )),
    }
}

#[test]
fn random_damage_never_panics_the_reader_or_the_checks() {
    // Time-bounded so it fits any machine; the seed is printed on failure by the panic.
    let budget = Duration::from_secs(3);
    let started = Instant::now();
    let base_writer = tiny_llama_writer(&small_spec()).unwrap();
    let base = bytes_of(&base_writer);
    let header = read_header_bytes(&base).unwrap().data_offset() as usize;
    let keys: Vec<String> = read_header_bytes(&base)
        .unwrap()
        .metadata()
        .map(|(k, _)| k.to_string())
        .collect();
    let mut rng = Rng(0x6b76_7275_6e5f_677a);
    let (mut structured, mut raw) = (0u32, 0u32);
    while started.elapsed() < budget || structured + raw < 200 {
        if rng.below(2) == 0 {
            // Structured: metadata values replaced, added or removed, then re-encoded.
            let mut w = tiny_llama_writer(&small_spec()).unwrap();
            for _ in 0..1 + rng.below(3) {
                let key = &keys[rng.below(keys.len())];
                match rng.below(4) {
                    0 => w.remove_value(key),
                    _ => w.set_value(key, random_value(&mut rng)),
                };
            }
            let _ = check_bytes(&bytes_of(&w));
            structured += 1;
        } else {
            // Raw: bytes of the header overwritten at random.
            let mut b = base.clone();
            for _ in 0..1 + rng.below(8) {
                let at = rng.below(header);
                b[at] = rng.next() as u8;
            }
            let _ = check_bytes(&b);
            raw += 1;
        }
    }
    assert!(structured > 0 && raw > 0);
}
