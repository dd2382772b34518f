//! A loaded GGUF model: vocabulary, chat template and the facts the KV manager needs.

use std::path::Path;

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::{backend, LlamaError, TokenId};
use crate::template::{self, ChatTemplate, Message, RenderInput, Rendered, SpecialFinder};
use crate::tools::ToolFormat;

/// One chat message, in the roles the model's template understands.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChatMessage {
    pub role: String,
    pub content: String,
}

/// Facts about the loaded model that callers plan with.
#[derive(Debug, Clone)]
pub struct ModelFacts {
    pub n_ctx_train: u32,
    pub n_vocab: i32,
    pub n_layer: u32,
    /// Sliding-window size of the SWA layers; 0 when every layer attends to everything.
    pub n_swa: u32,
    /// What a sequence's state is made of, and so whether kvrun pages, cuts and shares it.
    pub memory: crate::kv::MemoryKind,
    pub has_chat_template: bool,
    /// The model's name from its metadata, or its architecture.
    pub description: String,
    /// The most input bytes one token can stand for, where the tokenizer bounds it: the
    /// longest token text in an SPM or byte-level BPE vocabulary (a token's text is never
    /// shorter than the input it covers: "▁" is 3 bytes for a space, "<0x0A>" 6 for a byte).
    /// `None` for tokenizers that normalize (they may drop input).
    pub max_token_bytes: Option<usize>,
    /// The K and V values one cell holds over all layers, where the metadata says it
    /// plainly: a unified attention cache with one head count for every layer. `None`
    /// for sliding windows, recurrent state and per-layer head counts.
    pub kv_values_per_cell: Option<u64>,
    /// [`Self::kv_values_per_cell`] as if every layer of an attention or hybrid model kept
    /// a full cache: an upper bound where the exact figure is `None` (a sliding window's
    /// layers keep fewer cells, a hybrid's recurrent layers none). `None` for recurrent
    /// models and where the head counts are per layer.
    pub kv_values_per_cell_bound: Option<u64>,
}

pub struct Model {
    inner: LlamaModel,
    facts: ModelFacts,
    template: Option<ChatTemplate>,
    /// The GGUF's `tokenizer.chat_template.tool_use`, used when tools are given.
    tool_template: Option<ChatTemplate>,
    /// llguidance's tables, built on first use.
    guidance: std::sync::OnceLock<Result<super::Guidance, String>>,
}

impl Model {
    /// Loads a model file. The caller validates the GGUF structure first: llama.cpp aborts
    /// the process on some malformed files instead of returning an error.
    pub fn load(path: &Path, gpu_layers: u32) -> Result<Self, LlamaError> {
        let backend = backend()?;
        let params = LlamaModelParams::default().with_n_gpu_layers(gpu_layers);
        let inner = LlamaModel::load_from_file(backend, path, &params).map_err(|e| {
            LlamaError::LoadModel {
                path: path.display().to_string(),
                detail: e.to_string(),
            }
        })?;
        let meta = |key: &str| inner.meta_val_str(key).ok();
        let architecture = meta("general.architecture").unwrap_or_default();
        // llama.cpp reads the window from this key for every sliding-window architecture.
        let n_swa = meta(&format!("{architecture}.attention.sliding_window"))
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or(0);
        let description = meta("general.name").unwrap_or_else(|| architecture.clone());
        let max_token_bytes = match meta("tokenizer.ggml.model").as_deref() {
            Some("llama" | "gpt2") => {
                let vocab = inner.vocab();
                vocab
                    .tokens()
                    .filter_map(|t| vocab.text(t).map(|text| text.to_bytes().len()))
                    .max()
                    .filter(|&n| n > 0)
            }
            _ => None,
        };
        // The cache keeps a 12-byte ext per cell for M-RoPE and for PLE heads
        // (`llama_kv_cache::has_cell_ext`); the latter is only in the metadata.
        let mrope = matches!(
            inner.rope_type(),
            Some(llama_cpp_2::model::RopeType::MRope | llama_cpp_2::model::RopeType::IMRope)
        );
        let ple =
            meta(&format!("{architecture}.ple.heads_per_ngram")).is_some_and(|v| v.trim() != "0");
        let memory = crate::kv::MemoryKind::of(crate::kv::MemoryFacts {
            recurrent: inner.is_recurrent(),
            hybrid: inner.is_hybrid(),
            n_swa,
            cell_ext: match (mrope, ple) {
                (true, _) => crate::kv::CellExt::Position2d,
                (false, true) => crate::kv::CellExt::Token,
                (false, false) => crate::kv::CellExt::None,
            },
        });
        let int = |key: &str| {
            meta(&format!("{architecture}.{key}")).and_then(|v| v.trim().parse::<u64>().ok())
        };
        let kv_values_per_cell_bound = match memory {
            crate::kv::MemoryKind::Recurrent => None,
            _ => crate::gguf::kv_values_per_cell(inner.n_layer(), int),
        };
        let kv_values_per_cell = match memory {
            crate::kv::MemoryKind::Attention {
                n_swa: 0,
                cell_ext: crate::kv::CellExt::None,
            } => kv_values_per_cell_bound,
            _ => None,
        };
        let facts = ModelFacts {
            n_ctx_train: inner.n_ctx_train(),
            n_vocab: inner.n_vocab(),
            n_layer: inner.n_layer(),
            n_swa,
            memory,
            has_chat_template: false,
            description,
            max_token_bytes,
            kv_values_per_cell,
            kv_values_per_cell_bound,
        };
        // A template that does not compile is not fatal here: --raw needs none, and
        // chat mode reports it when it renders.
        let template = gguf_template(&inner, &architecture).unwrap_or_else(|e| {
            tracing::warn!("{e}");
            None
        });
        let facts = ModelFacts {
            has_chat_template: template.is_some(),
            ..facts
        };
        let tool_template = inner
            .chat_template(Some("tool_use"))
            .ok()
            .and_then(|t| t.to_string().ok())
            .and_then(|source| {
                ChatTemplate::new("tokenizer.chat_template.tool_use", &source)
                    .map_err(|e| tracing::warn!("{e}"))
                    .ok()
            });
        Ok(Self {
            inner,
            facts,
            template,
            tool_template,
            guidance: std::sync::OnceLock::new(),
        })
    }

    pub fn facts(&self) -> &ModelFacts {
        &self.facts
    }

    /// The weights' bytes (`llama_model_size`).
    pub fn size_bytes(&self) -> u64 {
        self.inner.size()
    }

    /// At most how many K and V bytes one context cell takes with `kv_type`
    /// ([`ModelFacts::kv_values_per_cell_bound`]); 0 where unknown.
    pub fn kv_bytes_per_cell(&self, kv_type: crate::settings::KvType) -> u64 {
        self.facts
            .kv_values_per_cell_bound
            .map_or(0, |values| (values as f64 * kv_type.value_bytes()) as u64)
    }

    pub(super) fn llama(&self) -> &LlamaModel {
        &self.inner
    }

    /// llguidance's token trie and parser factory for this model, built on the first call
    /// (it walks the whole vocabulary: tens to hundreds of milliseconds).
    pub fn guidance(&self) -> Result<&super::Guidance, LlamaError> {
        self.guidance
            .get_or_init(|| super::Guidance::new(&self.inner).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| LlamaError::Unsupported(e.clone()))
    }

    /// The fewest tokens `text` can become, from its length alone, without tokenizing it
    /// (which takes a minute for megabytes). `None` when the tokenizer gives no bound.
    pub fn min_tokens(&self, text: &str) -> Option<usize> {
        self.facts
            .max_token_bytes
            .map(|max| text.len().div_ceil(max))
    }

    /// Tokenizes text. `add_bos` adds the model's BOS token when its vocabulary asks for
    /// one; special-token text such as `<start_of_turn>` is always parsed as the token.
    pub fn tokenize(&self, text: &str, add_bos: bool) -> Vec<TokenId> {
        let vocab = self.inner.vocab();
        let add_special = add_bos && self.wants_bos_before(text);
        vocab
            .tokenize(text.as_bytes(), add_special, true)
            .into_iter()
            .map(|t| t.0)
            .collect()
    }

    /// Tokenizes a whole prompt: BOS when the model wants one, but never twice (chat
    /// templates may already start with the BOS text).
    pub fn tokenize_prompt(&self, text: &str) -> Vec<TokenId> {
        self.tokenize(text, true)
    }

    /// Whether a BOS token must be added in front of `text`: the vocabulary asks for one and
    /// the text does not start with the BOS token's own text (as rendered chat templates
    /// do), which is parsed as that token. Asking llama.cpp to add one then would give two
    /// (and a warning in its log).
    fn wants_bos_before(&self, text: &str) -> bool {
        let vocab = self.inner.vocab();
        if !vocab.should_add_bos() {
            return false;
        }
        let mut bos_text = Vec::new();
        self.token_bytes(vocab.bos().0, true, &mut bos_text);
        bos_text.is_empty() || !text.as_bytes().starts_with(&bos_text)
    }

    /// The raw bytes of a token's text (special tokens rendered only when `special`).
    pub fn token_bytes(&self, token: TokenId, special: bool, out: &mut Vec<u8>) {
        out.clear();
        self.inner
            .vocab()
            .token_to_piece_into(LlamaToken(token), out, special, None);
    }

    /// The text of `tokens`, special tokens included, invalid UTF-8 replaced (for excerpts
    /// in diagnostics).
    pub fn tokens_text(&self, tokens: &[TokenId]) -> String {
        let (mut bytes, mut piece) = (Vec::new(), Vec::new());
        for &t in tokens {
            self.token_bytes(t, true, &mut piece);
            bytes.extend_from_slice(&piece);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// End of generation (EOS, end-of-turn, ...).
    pub fn is_end_of_generation(&self, token: TokenId) -> bool {
        self.inner.vocab().is_eog(LlamaToken(token))
    }

    pub fn is_valid_token(&self, token: TokenId) -> bool {
        token >= 0 && token < self.facts.n_vocab
    }

    /// The chat template in use: `--chat-template`, else the GGUF's, else the shipped
    /// default for the architecture.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.template.as_ref()
    }

    /// The template that renders a conversation with tools (or without, `tools` false).
    pub fn chat_template_for(&self, tools: bool) -> Option<&ChatTemplate> {
        match &self.tool_template {
            Some(t) if tools => Some(t),
            _ => self.template.as_ref(),
        }
    }

    /// Whether the template that serves tools renders `tools` itself (else the caller
    /// describes them in the system turn, [`crate::tools::GENERIC_TOOL_PROMPT`]).
    pub fn template_renders_tools(&self) -> bool {
        self.chat_template_for(true)
            .is_some_and(|t| ToolFormat::template_renders_tools(t.source()))
    }

    /// How the model writes tool calls under the template that renders a conversation
    /// with tools (or without, `tools` false).
    pub fn tool_format(&self, tools: bool) -> ToolFormat {
        match self.chat_template_for(tools) {
            Some(t) if self.template_renders_tools() => ToolFormat::detect(t.source()),
            _ => ToolFormat::Generic,
        }
    }

    /// Replaces the chat template by a file (a path that exists) or a shipped name.
    pub fn set_chat_template(&mut self, spec: &str) -> Result<(), LlamaError> {
        let path = Path::new(spec);
        let template = if let Some(source) = template::builtin_named(spec) {
            ChatTemplate::new(spec, source)
        } else if path.is_file() {
            let source = read_template_file(path)
                .map_err(|e| LlamaError::ChatTemplate(format!("reading {spec}: {e}")))?;
            ChatTemplate::new(&path.display().to_string(), &source)
        } else {
            return Err(LlamaError::ChatTemplate(format!(
                "'{spec}' is neither a template file nor a shipped template ({})",
                template::BUILTIN_NAMES.join(", ")
            )));
        };
        self.template = Some(template.map_err(|e| LlamaError::ChatTemplate(e.to_string()))?);
        // An explicit template serves conversations with tools too.
        self.tool_template = None;
        self.facts.has_chat_template = true;
        Ok(())
    }

    /// Renders a conversation with the chat template, ending with the assistant's opening
    /// when `add_generation_prompt` is set. Control-token text inside messages is marked
    /// so that [`Model::tokenize_rendered`] keeps it plain.
    pub fn render_chat(
        &self,
        messages: &[Message],
        tools: Option<&minijinja::Value>,
        add_generation_prompt: bool,
    ) -> Result<Rendered, LlamaError> {
        let template = self
            .chat_template_for(tools.is_some())
            .ok_or(LlamaError::NoChatTemplate)?;
        let piece = |token: LlamaToken| {
            let mut out = Vec::new();
            self.inner
                .vocab()
                .token_to_piece_into(token, &mut out, true, None);
            String::from_utf8_lossy(&out).into_owned()
        };
        let (bos, eos) = (
            piece(self.inner.vocab().bos()),
            piece(self.inner.vocab().eos()),
        );
        let input = RenderInput {
            messages,
            tools,
            add_generation_prompt,
            bos_token: &bos,
            eos_token: &eos,
            extra: Default::default(),
        };
        template
            .render_guarded(&input, self)
            .map_err(|e| LlamaError::ChatTemplate(e.to_string()))
    }

    /// Tokenizes `rendered.text[from..]`: the template's markup with special tokens parsed,
    /// the ranges [`Model::render_chat`] marked as plain text. `add_bos` as in
    /// [`Model::tokenize_prompt`].
    pub fn tokenize_rendered(
        &self,
        rendered: &Rendered,
        from: usize,
        add_bos: bool,
    ) -> Vec<TokenId> {
        let mut tokens = Vec::new();
        let mut at = from;
        let mut first = true;
        let mut push = |tokens: &mut Vec<TokenId>, text: &str, special: bool| {
            if text.is_empty() {
                return;
            }
            let bos = std::mem::take(&mut first) && add_bos;
            let vocab = self.inner.vocab();
            // Plain text never stands in for the BOS token, even if it reads `<bos>`.
            let add_special = bos
                && if special {
                    self.wants_bos_before(text)
                } else {
                    vocab.should_add_bos()
                };
            tokens.extend(
                vocab
                    .tokenize(text.as_bytes(), add_special, special)
                    .into_iter()
                    .map(|t| t.0),
            );
        };
        for range in &rendered.plain {
            if range.end <= at {
                continue;
            }
            let start = range.start.max(at);
            push(&mut tokens, &rendered.text[at..start], true);
            push(&mut tokens, &rendered.text[start..range.end], false);
            at = range.end;
        }
        push(&mut tokens, &rendered.text[at..], true);
        tokens
    }
}

impl SpecialFinder for Model {
    /// The texts of the control tokens that tokenising `text` with specials parsed yields.
    fn control_texts(&self, text: &str) -> Vec<String> {
        let vocab = self.inner.vocab();
        let mut texts: Vec<String> = vocab
            .tokenize(text.as_bytes(), false, true)
            .into_iter()
            .filter(|&t| vocab.is_control(t))
            .map(|t| {
                let mut out = Vec::new();
                vocab.token_to_piece_into(t, &mut out, true, None);
                String::from_utf8_lossy(&out).into_owned()
            })
            .filter(|t| !t.is_empty() && text.contains(t.as_str()))
            .collect();
        texts.sort();
        texts.dedup();
        texts
    }
}

/// A chat template file larger than this is refused (real ones are under 20 KB).
const MAX_TEMPLATE_BYTES: u64 = 1 << 20;

/// A template file's text: a regular file of bounded size, UTF-8.
fn read_template_file(path: &Path) -> std::io::Result<String> {
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() || meta.len() > MAX_TEMPLATE_BYTES {
        return Err(std::io::Error::other(format!(
            "not a regular file of at most {} KiB",
            MAX_TEMPLATE_BYTES >> 10
        )));
    }
    std::fs::read_to_string(path)
}

/// The template a loaded model comes with: its GGUF's, else the architecture's default.
fn gguf_template(
    inner: &LlamaModel,
    architecture: &str,
) -> Result<Option<ChatTemplate>, LlamaError> {
    let from_gguf = inner
        .chat_template(None)
        .ok()
        .and_then(|t| t.to_string().ok());
    let compiled = match from_gguf {
        Some(source) => ChatTemplate::new("tokenizer.chat_template", &source),
        None => match template::builtin_for_architecture(architecture) {
            Some((name, source)) => ChatTemplate::new(name, source),
            None => return Ok(None),
        },
    };
    compiled
        .map(Some)
        .map_err(|e| LlamaError::ChatTemplate(e.to_string()))
}
