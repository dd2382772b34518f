//! The writers and the tiny models they make: what they refuse, and that what they write
//! reads back as llama.cpp expects.

use super::*;
use crate::gguf::*;

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

#[test]
fn writer_rejects_bad_input() {
    let mut w = GgufWriter::new();
    w.add_u32("k", 1).add_u32("k", 2);
    assert!(w.write_to(Vec::new()).is_err());
    let mut w = GgufWriter::new();
    w.add_tensor_f32("t", &[3, 2], &[0.0; 5]);
    assert!(w.write_to(Vec::new()).is_err());
    let mut w = GgufWriter::new();
    w.add_tensor_f32("n".repeat(64), &[1], &[0.0]);
    assert!(w.write_to(Vec::new()).is_err());
}

#[test]
fn tiny_llama_is_valid_and_deterministic() {
    let dir = tmp();
    let spec = TinyLlamaSpec::default();
    let p = dir.path().join("tiny.gguf");
    write_tiny_llama(&p, &spec).expect("write tiny");
    let f = read_header(&p).expect("tiny model is valid");
    let info = f.info();
    assert_eq!(info.architecture, "llama");
    assert_eq!(info.name.as_deref(), Some("kvrun-tiny-llama"));
    assert_eq!(info.quantization, "F16");
    assert_eq!(info.context_length, Some(4096));
    assert!(info.has_chat_template);
    assert_eq!(info.sliding_window, None);
    assert!(
        (2 << 20..8 << 20).contains(&info.file_size),
        "{}",
        info.file_size
    );
    assert_eq!(f.tensors().len(), 2 + 9 * 4 + 1);

    let n_vocab = f.get_array_len("tokenizer.ggml.tokens").expect("tokens");
    assert_eq!(f.get_u64("llama.vocab_size"), Some(n_vocab as u64));
    assert_eq!(f.get_array_len("tokenizer.ggml.scores"), Some(n_vocab));
    assert_eq!(f.get_array_len("tokenizer.ggml.token_type"), Some(n_vocab));
    assert_eq!(
        f.tensor("token_embd.weight").map(|t| t.dims.clone()),
        Some(vec![256, n_vocab as u64])
    );
    assert_eq!(
        f.tensor("blk.3.attn_k.weight").map(|t| t.dims.clone()),
        Some(vec![256, 64])
    );
    assert_eq!(
        f.tensor("blk.0.ffn_down.weight").map(|t| t.dims.clone()),
        Some(vec![512, 256])
    );
    assert_eq!(
        f.tensor("blk.0.ffn_norm.weight").map(|t| t.ggml_type),
        Some(GgmlType::F32)
    );
    let params: u64 = 2 * 256 * n_vocab as u64
        + 256
        + 4 * (2 * 256 + 2 * 256 * 256 + 2 * 256 * 64 + 3 * 256 * 512);
    assert_eq!(info.n_params, params);

    let toks = f
        .get_array("tokenizer.ggml.tokens")
        .and_then(GgufArray::as_strings)
        .expect("strings");
    let all: Vec<&str> = toks.iter().collect();
    let unique: std::collections::HashSet<&str> = all.iter().copied().collect();
    assert_eq!(unique.len(), all.len(), "token texts must be unique");
    assert_eq!(&all[..3], ["<unk>", "<s>", "</s>"]);
    assert_eq!(all[3 + 0x0A], "<0x0A>");
    assert_eq!(all[3 + 0xFF], "<0xFF>");
    let eos = f.get_u64("tokenizer.ggml.eos_token_id").expect("eos") as usize;
    assert_eq!(all[eos], "<|im_end|>");
    // Every normal token must be reachable by pairwise merges: all its prefixes are tokens.
    let Some(GgufArray::I32(types)) = f.get_array("tokenizer.ggml.token_type") else {
        panic!("token types must be an i32 array");
    };
    assert_eq!(types[..4], [2, 3, 3, 6]);
    assert_eq!(types[eos], 3);
    let normal = all.iter().zip(types).filter(|(_, &ty)| ty == 1);
    for (t, _) in normal {
        let chars: Vec<char> = t.chars().collect();
        for n in 1..chars.len() {
            let prefix: String = chars[..n].iter().collect();
            assert!(
                unique.contains(prefix.as_str()),
                "prefix '{prefix}' of '{t}'"
            );
        }
    }
    for t in ["▁the", "a", "▁", "system", "assistant"] {
        assert!(all.contains(&t), "{t}");
    }

    // Same seed, same bytes; another seed, other weights but the same header shape.
    let p2 = dir.path().join("tiny2.gguf");
    write_tiny_llama(&p2, &spec).expect("write tiny");
    assert_eq!(std::fs::read(&p).ok(), std::fs::read(&p2).ok());
    let p3 = dir.path().join("tiny3.gguf");
    write_tiny_llama(
        &p3,
        &TinyLlamaSpec {
            seed: 7,
            ..spec.clone()
        },
    )
    .expect("write tiny");
    assert_ne!(std::fs::read(&p).ok(), std::fs::read(&p3).ok());
    assert_eq!(fingerprint(&p3).ok(), fingerprint(&p).ok());

    let bad = TinyLlamaSpec { n_head: 3, ..spec };
    assert!(write_tiny_llama(&dir.path().join("bad.gguf"), &bad).is_err());
}

#[test]
fn q4_0_tiny_llama_streams_valid_blocks_and_passes_the_loadability_checks() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("q4.gguf");
    let spec = TinyLlamaSpec {
        weights: WeightFormat::Q4_0,
        ..TinyLlamaSpec::default()
    };
    write_tiny_llama(&p, &spec).expect("write q4_0 tiny");
    let f = read_header(&p).expect("header");
    f.check_loadable().expect("loadable");
    let q = f.tensor("blk.0.ffn_gate.weight").expect("ffn_gate");
    assert_eq!(q.ggml_type, GgmlType::Q4_0);
    // 256 x 512 weights in 32-weight blocks of 18 bytes.
    assert_eq!(q.n_bytes, 256 * 512 / 32 * 18);
    assert_eq!(
        f.tensor("blk.0.attn_norm.weight").unwrap().ggml_type,
        GgmlType::F32
    );
    // A shape whose rows are not whole blocks is refused, not written.
    let bad = TinyLlamaSpec { n_ff: 500, ..spec };
    assert!(write_tiny_llama(&dir.path().join("bad.gguf"), &bad).is_err());
}

/// The tiny qwen35 holds exactly the tensors qwen35.cpp's `load_arch_tensors` creates for
/// its two layer kinds (llama.cpp refuses a file with one too many or too few), in their
/// shapes, and its delta-net heads decay from fast to nearly not at all.
#[test]
fn tiny_qwen35_has_llama_cpps_tensors_and_slow_heads() {
    let dir = tmp();
    let p = dir.path().join("qwen35.gguf");
    write_tiny_recurrent(&p, TinyRecurrentArch::Qwen35, 1).expect("write qwen35");
    let f = read_header(&p).expect("valid");
    assert_eq!(f.info().architecture, "qwen35");
    // Embedding, final norm, output; 14 per delta-net layer (0, 2), 11 per attention
    // layer (1, 3).
    assert_eq!(f.tensors().len(), 3 + 2 * 14 + 2 * 11);
    let dims = |n: &str| f.tensor(n).map(|t| t.dims.clone());
    // q and k: 2 heads of 64; v: 4 heads of 64.
    assert_eq!(dims("blk.0.attn_qkv.weight"), Some(vec![64, 512]));
    assert_eq!(dims("blk.0.attn_gate.weight"), Some(vec![64, 256]));
    assert_eq!(dims("blk.2.ssm_conv1d.weight"), Some(vec![4, 512]));
    assert_eq!(dims("blk.0.ssm_beta.weight"), Some(vec![64, 4]));
    assert_eq!(dims("blk.0.ssm_norm.weight"), Some(vec![64]));
    assert_eq!(dims("blk.0.ssm_out.weight"), Some(vec![256, 64]));
    // Q and its gate in one projection.
    assert_eq!(dims("blk.1.attn_q.weight"), Some(vec![64, 128]));
    assert_eq!(dims("blk.3.attn_k.weight"), Some(vec![64, 32]));
    assert_eq!(dims("blk.1.attn_q_norm.weight"), Some(vec![16]));
    assert_eq!(dims("blk.1.post_attention_norm.weight"), Some(vec![64]));
    assert_eq!(dims("blk.0.ffn_norm.weight"), None);
    assert_eq!(dims("blk.1.attn_qkv.weight"), None);
    assert_eq!(f.get_u32("qwen35.full_attention_interval"), Some(2));

    let a = f.tensor("blk.2.ssm_a").expect("ssm_a");
    assert_eq!((a.dims.clone(), a.ggml_type), (vec![4], GgmlType::F32));
    let bytes = std::fs::read(&p).expect("read");
    let at = (f.data_offset() + a.offset) as usize;
    let ssm_a: Vec<f32> = bytes[at..at + 16]
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert!((ssm_a[0] + 1.0).abs() < 1e-6, "{ssm_a:?}");
    assert!((ssm_a[3] + 1e-4).abs() < 1e-8, "{ssm_a:?}");
    assert!(
        ssm_a.windows(2).all(|p| p[0] < p[1] && p[1] < 0.0),
        "{ssm_a:?}"
    );
}

#[test]
fn the_qwen35_27b_cache_shape_holds_that_models_cache() {
    for spec in [Qwen35Spec::tiny(), Qwen35Spec::qwen35_27b_cache()] {
        let sections: i32 = spec.rope_sections.iter().sum();
        assert_eq!(sections as u32 * 2, spec.n_rot, "{}", spec.name);
        assert!(spec.n_rot <= spec.head_dim, "{}", spec.name);
        assert_eq!(
            spec.n_layer % spec.full_attention_interval,
            0,
            "{}",
            spec.name
        );
    }
    // Qwen3.5-27B's config: 64 layers, full_attention_interval 4, 4 KV heads of 256; linear
    // attention with 16 key and 48 value heads of 128, a 4-tap convolution.
    let s = Qwen35Spec::qwen35_27b_cache();
    let attention_layers = u64::from(s.n_layer / s.full_attention_interval);
    let kv_per_token = attention_layers * 2 * u64::from(s.n_head_kv * s.head_dim) * 2;
    assert_eq!(kv_per_token, 64 << 10, "f16 K and V rows per token");
    let delta_layers = u64::from(s.n_layer) - attention_layers;
    let conv_channels = u64::from(2 * s.n_k_head * s.d_state + s.n_v_head * s.d_state);
    let ssm = u64::from(s.n_v_head) * u64::from(s.d_state).pow(2);
    let state = delta_layers * (ssm + 3 * conv_channels) * 4;
    assert_eq!(
        state,
        48 * (48 * 128 * 128 + 3 * 10_240) * 4,
        "f32 state per sequence"
    );
}

#[test]
fn the_granite_4_h_small_cache_shape_holds_that_models_cache() {
    // Granite-4.0-H-Small's config: 40 layers, 4 attending with 8 KV heads of 128; Mamba2
    // mixers of 8,192 channels (twice its 4,096-wide stream) with a 128-wide state, one
    // group, a 4-tap convolution.
    let s = GraniteSpec::granite_4_h_small_cache();
    let attention_layers = s.attention_layers.len() as u64;
    assert!(s.attention_layers.iter().all(|&i| i < s.n_layer));
    let kv_per_token = attention_layers * 2 * u64::from(s.n_head_kv * s.head_dim) * 2;
    assert_eq!(kv_per_token, 16 << 10, "f16 K and V rows per token");
    let mamba_layers = u64::from(s.n_layer) - attention_layers;
    let d_inner = 2 * u64::from(s.n_embd);
    let ssm = u64::from(s.d_state) * d_inner;
    assert_eq!(ssm, 128 * 8192, "the released model's state per layer");
    assert_eq!(d_inner % u64::from(s.n_ssm_head), 0);
    let conv = 3 * (d_inner + 2 * u64::from(s.d_state));
    let state = mamba_layers * (ssm + conv) * 4;
    let released = 36 * (128 * 8192 + 3 * (8192 + 2 * 128)) * 4;
    assert!(
        state <= released && state * 100 >= released * 98,
        "{state} vs {released}"
    );
}

#[test]
fn the_granite_shape_writer_writes_llama_cpps_tensors() {
    let mut spec = GraniteSpec::granite_4_h_small_cache();
    // The same layout, small enough to write in a test.
    spec.n_layer = 6;
    spec.attention_layers = vec![5];
    spec.d_state = 32;
    let dir = tmp();
    let path = dir.path().join("granite.gguf");
    granite_writer(&spec, 3).write_file(&path).unwrap();
    let file = read_header(&path).unwrap();
    file.check_loadable().unwrap();
    let names: Vec<&str> = file.tensors().iter().map(|t| t.name.as_str()).collect();
    for name in [
        "blk.0.ssm_in.weight",
        "blk.4.ssm_out.weight",
        "blk.5.attn_q.weight",
    ] {
        assert!(names.contains(&name), "{name}");
    }
    assert!(!names.contains(&"blk.5.ssm_in.weight"));
}
