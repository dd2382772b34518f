//! A tiny random-weight llama-architecture model for tests: small enough to write in
//! milliseconds, complete enough that the pinned llama.cpp loads, tokenizes, chats and
//! generates with it (nonsense text, but through every real code path incl. the KV cache).
//!
//! Names, shapes and key types follow src/models/llama.cpp (`load_arch_hparams`,
//! `load_arch_tensors`), llama-model.cpp `load_hparams` and llama-vocab.cpp `load` for
//! an SPM ("llama") vocabulary.

use std::collections::HashSet;
use std::io;
use std::path::Path;

use super::q4_0;
pub(crate) use super::rng::SplitMix64;
use super::writer::GgufWriter;

/// Shape of the tiny model. Defaults: 4 layers, 256 wide, 8 query heads sharing 2 KV
/// heads (grouped-query attention, so GQA paths are exercised), FFN 512, context 4096.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TinyLlamaSpec {
    pub n_layer: u32,
    pub n_embd: u32,
    pub n_head: u32,
    pub n_head_kv: u32,
    pub n_ff: u32,
    pub context_length: u32,
    /// `tokenizer.ggml.add_space_prefix`. SPM's default (true, Llama 2 style) inserts a
    /// "▁" at the start of the text and after every special token, so a ChatML prompt
    /// does not detokenize back to itself. The default here is false (as Gemma's SPM
    /// vocabulary does), which makes tokenize/detokenize round trips exact.
    pub add_space_prefix: bool,
    /// Seeds the weight generator; the same spec always gives a byte-identical file.
    pub seed: u64,
    /// `tokenizer.chat_template` (ChatML by default; tests give others, such as one that
    /// inserts a default system prompt).
    pub chat_template: String,
    /// User-defined tokens appended to the vocabulary (a family's tool-call markup, such
    /// as `<tool_call>`, which its real models hold as one token each).
    pub extra_tokens: Vec<String>,
    /// How the 2-D weights are stored.
    pub weights: WeightFormat,
    /// `general.name`.
    pub name: String,
    /// Take the whole tokenizer (every `tokenizer.*` key: vocabulary, merges, special ids,
    /// chat template) from this GGUF instead of the tiny byte vocabulary: a tiny model that
    /// tokenizes like a real one, so a long real prompt is as many tokens as there.
    pub tokenizer_from: Option<std::path::PathBuf>,
}

/// Storage of a model's 2-D weights (norm weights are always F32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WeightFormat {
    /// F16, built in memory: for small test models.
    #[default]
    F16,
    /// Q4_0, streamed to the file block by block: for benchmark models of real size.
    Q4_0,
}

impl TinyLlamaSpec {
    /// The shape of an 8B llama (Llama 3 8B: 32 layers, 4096 wide, 32 query heads sharing
    /// 8 KV heads of 128, FFN 14336) with Q4_0 random weights and the tiny vocabulary:
    /// about 3.9 GB, 128 KiB of f16 KV per token.
    pub fn llama_8b_shape() -> Self {
        Self {
            n_layer: 32,
            n_embd: 4096,
            n_head: 32,
            n_head_kv: 8,
            n_ff: 14336,
            // Room for the 32k-token synthetic sessions of `bench restore --synthetic`.
            context_length: 65536,
            weights: WeightFormat::Q4_0,
            name: "kvrun-bench-llama-8b".to_string(),
            ..Self::default()
        }
    }

    /// [`Self::llama_8b_shape`] with a 512-wide FFN: the same KV per token from about a
    /// fifth of the weights, which separates weight-size costs from KV-size costs.
    pub fn llama_8b_narrow_ffn() -> Self {
        Self {
            n_ff: 512,
            name: "kvrun-bench-llama-8b-narrow-ffn".to_string(),
            ..Self::llama_8b_shape()
        }
    }
}

impl Default for TinyLlamaSpec {
    fn default() -> Self {
        Self {
            n_layer: 4,
            n_embd: 256,
            n_head: 8,
            n_head_kv: 2,
            n_ff: 512,
            context_length: 4096,
            add_space_prefix: false,
            seed: 0x6b76_7275_6e00_0001,
            chat_template: CHATML_TEMPLATE.to_string(),
            extra_tokens: Vec::new(),
            weights: WeightFormat::F16,
            name: "kvrun-tiny-llama".to_string(),
            tokenizer_from: None,
        }
    }
}

/// Standard ChatML; contains "<|im_start|>", so llama.cpp's built-in template detection
/// (llm_chat_detect_template) maps it to its chatml formatter.
pub const CHATML_TEMPLATE: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// llama.h `enum llama_token_type`.
const TOKEN_NORMAL: i32 = 1;
const TOKEN_UNKNOWN: i32 = 2;
const TOKEN_CONTROL: i32 = 3;
const TOKEN_USER_DEFINED: i32 = 4;
const TOKEN_BYTE: i32 = 6;

/// SPM's word-boundary marker (U+2581), which stands for a space in token texts.
const SPM_SPACE: &str = "\u{2581}";

#[rustfmt::skip]
const WORDS: &[&str] = &[
    "the", "a", "an", "and", "or", "but", "if", "is", "are", "was", "were", "be", "been", "it",
    "in", "on", "at", "of", "to", "for", "from", "with", "by", "as", "that", "this", "these",
    "those", "not", "no", "yes", "I", "you", "he", "she", "we", "they", "me", "my", "your",
    "his", "her", "our", "their", "what", "which", "who", "how", "when", "where", "why", "can",
    "will", "would", "do", "does", "did", "have", "has", "had", "all", "some", "any", "more",
    "most", "other", "than", "then", "so", "up", "out", "over", "about", "into", "just", "like",
    "time", "good", "new", "first", "last", "one", "two", "three", "here", "there", "Hello",
    "hello", "world", "The", "model", "test", "cache", "token", "user", "assistant", "system",
    "answer", "question", "please", "thanks", "ok",
];

/// Words also present without the "▁" marker: the ChatML roles follow a newline or a
/// special token, not a space, so this keeps chat prompts short.
const BARE_WORDS: &[&str] = &["system", "user", "assistant", "Hello", "The", "What"];

/// The vocabulary: ids 0..=2 `<unk>` `<s>` `</s>`, then the 256 byte-fallback tokens
/// `<0x00>`..`<0xFF>` (uppercase hex, which is what llama_vocab::byte_to_token looks up),
/// then `<|im_start|>` `<|im_end|>`, then normal tokens.
pub(crate) struct TinyVocab {
    pub tokens: Vec<String>,
    pub scores: Vec<f32>,
    pub types: Vec<i32>,
    pub eos: u32,
}

impl TinyVocab {
    fn push(&mut self, text: String, score: f32, ty: i32) {
        self.tokens.push(text);
        self.scores.push(score);
        self.types.push(ty);
    }
}

pub(crate) fn tiny_vocab() -> TinyVocab {
    let mut v = TinyVocab {
        tokens: Vec::new(),
        scores: Vec::new(),
        types: Vec::new(),
        eos: 0,
    };
    v.push("<unk>".into(), 0.0, TOKEN_UNKNOWN);
    v.push("<s>".into(), 0.0, TOKEN_CONTROL);
    v.push("</s>".into(), 0.0, TOKEN_CONTROL);
    for b in 0..=255u8 {
        v.push(format!("<0x{b:02X}>"), 0.0, TOKEN_BYTE);
    }
    v.push("<|im_start|>".into(), 0.0, TOKEN_CONTROL);
    v.eos = v.tokens.len() as u32;
    v.push("<|im_end|>".into(), 0.0, TOKEN_CONTROL);

    // Normal tokens. The SPM tokenizer only merges adjacent pieces whose concatenation is
    // itself a token, so every "▁word" needs all its prefixes ("▁w", "▁wo", ...) present
    // to be reachable. Space is never a token of its own in SPM (it becomes "▁").
    let mut normal: Vec<String> = vec![SPM_SPACE.to_string()];
    normal.extend((b'!'..=b'~').map(|c| char::from(c).to_string()));
    let words = WORDS.iter().map(|w| format!("{SPM_SPACE}{w}"));
    for full in words.chain(BARE_WORDS.iter().map(|w| w.to_string())) {
        let chars: Vec<char> = full.chars().collect();
        normal.extend((2..=chars.len()).map(|n| chars[..n].iter().collect::<String>()));
    }
    // Token texts must be unique (llama.cpp asserts it); keep the first occurrence.
    let mut seen = HashSet::new();
    normal.retain(|t| seen.insert(t.clone()));
    // SPM scores are log-probabilities: higher merges first. Rank order is enough here.
    for (i, t) in normal.into_iter().enumerate() {
        v.push(t, -(i as f32), TOKEN_NORMAL);
    }
    v
}

/// The tiny SPM vocabulary's `tokenizer.*` keys.
pub(crate) fn add_tiny_tokenizer(
    w: &mut GgufWriter,
    vocab: &TinyVocab,
    add_space_prefix: bool,
    chat_template: &str,
) {
    w.add_str("tokenizer.ggml.model", "llama")
        .add_str_array("tokenizer.ggml.tokens", &vocab.tokens)
        .add_f32_array("tokenizer.ggml.scores", &vocab.scores)
        .add_i32_array("tokenizer.ggml.token_type", &vocab.types)
        .add_u32("tokenizer.ggml.bos_token_id", 1)
        .add_u32("tokenizer.ggml.eos_token_id", vocab.eos)
        .add_u32("tokenizer.ggml.unknown_token_id", 0)
        .add_bool("tokenizer.ggml.add_bos_token", true)
        .add_bool("tokenizer.ggml.add_eos_token", false)
        .add_bool("tokenizer.ggml.add_space_prefix", add_space_prefix)
        .add_str("tokenizer.chat_template", chat_template);
}

/// Every `tokenizer.*` key of the GGUF at `path`, and its vocabulary's size.
fn borrowed_tokenizer(path: &Path) -> io::Result<(Vec<(String, crate::gguf::GgufValue)>, u32)> {
    let file = crate::gguf::read_header(path).map_err(io::Error::other)?;
    let keys: Vec<(String, crate::gguf::GgufValue)> = file
        .metadata()
        .filter(|(key, _)| key.starts_with("tokenizer."))
        .map(|(key, value)| (key.to_string(), value.clone()))
        .collect();
    let n_vocab = file
        .get_array_len("tokenizer.ggml.tokens")
        .ok_or_else(|| io::Error::other(format!("{} has no vocabulary", path.display())))?;
    Ok((keys, n_vocab as u32))
}

fn check_spec(s: &TinyLlamaSpec) -> io::Result<()> {
    // Zero sizes or too many layers would trip GGML_ASSERTs (process aborts) in llama.cpp.
    let ok = (1..=512).contains(&s.n_layer)
        && s.n_embd > 0
        && s.n_head > 0
        && s.n_head_kv > 0
        && s.n_ff > 0
        && s.context_length > 0
        && s.n_embd.is_multiple_of(s.n_head)
        && s.n_head.is_multiple_of(s.n_head_kv)
        && (s.n_embd / s.n_head).is_multiple_of(2) // RoPE rotates pairs
        // Q4_0 rows hold whole 32-element blocks.
        && (s.weights == WeightFormat::F16 || (s.n_embd.is_multiple_of(32) && s.n_ff.is_multiple_of(32)));
    if ok {
        Ok(())
    } else {
        Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("invalid tiny llama spec: {s:?}"),
        ))
    }
}

/// Write the tiny model to `path` (a few MB with the default spec; Q4_0 specs stream their
/// weights, so even an 8B shape needs little memory).
pub fn write_tiny_llama(path: &Path, spec: &TinyLlamaSpec) -> io::Result<()> {
    tiny_llama_writer(spec)?.write_file(path)
}

/// The tiny model, ready to write; tests patch its metadata first to build malformed models.
pub fn tiny_llama_writer(spec: &TinyLlamaSpec) -> io::Result<GgufWriter> {
    check_spec(spec)?;
    let mut vocab = tiny_vocab();
    for token in &spec.extra_tokens {
        vocab.push(token.clone(), 0.0, TOKEN_USER_DEFINED);
    }
    let borrowed = match &spec.tokenizer_from {
        Some(path) => Some(borrowed_tokenizer(path)?),
        None => None,
    };
    let n_vocab = match &borrowed {
        Some((_, n)) => *n,
        None => vocab.tokens.len() as u32,
    };
    let head_dim = spec.n_embd / spec.n_head;
    let n_embd_kv = head_dim * spec.n_head_kv;
    let mut w = GgufWriter::new();

    w.add_str("general.architecture", "llama")
        .add_str("general.name", &spec.name)
        // LLAMA_FTYPE_MOSTLY_F16 or LLAMA_FTYPE_MOSTLY_Q4_0
        .add_u32(
            "general.file_type",
            match spec.weights {
                WeightFormat::F16 => 1,
                WeightFormat::Q4_0 => 2,
            },
        );
    // llama.cpp's get_key checks types strictly: counts are u32, eps/base f32.
    w.add_u32("llama.context_length", spec.context_length)
        .add_u32("llama.embedding_length", spec.n_embd)
        .add_u32("llama.block_count", spec.n_layer)
        .add_u32("llama.feed_forward_length", spec.n_ff)
        .add_u32("llama.attention.head_count", spec.n_head)
        .add_u32("llama.attention.head_count_kv", spec.n_head_kv)
        .add_u32("llama.rope.dimension_count", head_dim) // llama requires n_rot == head dim
        .add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5)
        .add_f32("llama.rope.freq_base", 10000.0)
        .add_u32("llama.vocab_size", n_vocab);
    match borrowed {
        Some((keys, _)) => {
            for (key, value) in keys {
                w.add_value(key, value);
            }
        }
        None => add_tiny_tokenizer(&mut w, &vocab, spec.add_space_prefix, &spec.chat_template),
    }

    // Tensors, dims in ggml order [ne0, ne1]: 2-D weights F16, norm weights F32 (as
    // convert_hf_to_gguf writes them). All are required by the llama loader except
    // `output`, which is included so the LM head is untied.
    let mut rng = SplitMix64(spec.seed);
    let format = spec.weights;
    let mut matrix = |w: &mut GgufWriter, name: String, ne0: u32, ne1: u32| match format {
        WeightFormat::F16 => {
            w.add_tensor_f16(name, &[ne0.into(), ne1.into()], &rng.matrix(ne0, ne1));
        }
        WeightFormat::Q4_0 => q4_0::add_random_matrix(w, name, ne0, ne1, rng.next_u64()),
    };
    let (e, f, v, kv) = (spec.n_embd, spec.n_ff, n_vocab, n_embd_kv);
    let ones = vec![1.0f32; e as usize];
    matrix(&mut w, "token_embd.weight".into(), e, v);
    for i in 0..spec.n_layer {
        let name = |t: &str| format!("blk.{i}.{t}.weight");
        w.add_tensor_f32(name("attn_norm"), &[e.into()], &ones);
        matrix(&mut w, name("attn_q"), e, e);
        matrix(&mut w, name("attn_k"), e, kv);
        matrix(&mut w, name("attn_v"), e, kv);
        matrix(&mut w, name("attn_output"), e, e);
        w.add_tensor_f32(name("ffn_norm"), &[e.into()], &ones);
        matrix(&mut w, name("ffn_gate"), e, f);
        matrix(&mut w, name("ffn_up"), e, f);
        matrix(&mut w, name("ffn_down"), f, e);
    }
    w.add_tensor_f32("output_norm.weight", &[e.into()], &ones);
    matrix(&mut w, "output.weight".into(), e, v);
    Ok(w)
}
