//! A loaded GGUF model: vocabulary, chat template and the facts the KV manager needs.

use std::path::Path;

use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;

use super::{backend, EngineError, TokenId};

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
    pub has_chat_template: bool,
    /// The model's name from its metadata, or its architecture.
    pub description: String,
    /// The most input bytes one token can stand for, where the tokenizer bounds it: the
    /// longest token text in an SPM or byte-level BPE vocabulary (a token's text is never
    /// shorter than the input it covers: "▁" is 3 bytes for a space, "<0x0A>" 6 for a byte).
    /// `None` for tokenizers that normalize (they may drop input).
    pub max_token_bytes: Option<usize>,
}

pub struct Model {
    inner: LlamaModel,
    facts: ModelFacts,
}

impl Model {
    /// Loads a model file. The caller validates the GGUF structure first: llama.cpp aborts
    /// the process on some malformed files instead of returning an error.
    pub fn load(path: &Path, gpu_layers: u32) -> Result<Self, EngineError> {
        let backend = backend()?;
        let params = LlamaModelParams::default().with_n_gpu_layers(gpu_layers);
        let inner = LlamaModel::load_from_file(backend, path, &params).map_err(|e| {
            EngineError::LoadModel {
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
        let facts = ModelFacts {
            n_ctx_train: inner.n_ctx_train(),
            n_vocab: inner.n_vocab(),
            n_layer: inner.n_layer(),
            n_swa,
            has_chat_template: inner.chat_template(None).is_ok()
                || builtin_template_for(&architecture).is_some(),
            description,
            max_token_bytes,
        };
        Ok(Self { inner, facts })
    }

    pub fn facts(&self) -> &ModelFacts {
        &self.facts
    }

    pub(super) fn llama(&self) -> &LlamaModel {
        &self.inner
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
        let add_special = add_bos && vocab.should_add_bos();
        vocab
            .tokenize(text.as_bytes(), add_special, true)
            .into_iter()
            .map(|t| t.0)
            .collect()
    }

    /// Tokenizes a whole prompt: BOS when the model wants one, but never twice (chat
    /// templates may already start with the BOS text).
    pub fn tokenize_prompt(&self, text: &str) -> Vec<TokenId> {
        let mut tokens = self.tokenize(text, true);
        let bos = self.inner.vocab().bos().0;
        if tokens.len() >= 2 && tokens[0] == bos && tokens[1] == bos {
            tokens.remove(0);
        }
        tokens
    }

    /// The raw bytes of a token's text (special tokens rendered only when `special`).
    pub fn token_bytes(&self, token: TokenId, special: bool, out: &mut Vec<u8>) {
        out.clear();
        self.inner
            .vocab()
            .token_to_piece_into(LlamaToken(token), out, special, None);
    }

    /// End of generation (EOS, end-of-turn, ...).
    pub fn is_end_of_generation(&self, token: TokenId) -> bool {
        self.inner.vocab().is_eog(LlamaToken(token))
    }

    pub fn is_valid_token(&self, token: TokenId) -> bool {
        token >= 0 && token < self.facts.n_vocab
    }

    /// Formats a conversation with the model's own chat template (from the GGUF), ending
    /// with the assistant's opening tag when `add_assistant` is set.
    pub fn apply_chat_template(
        &self,
        messages: &[ChatMessage],
        add_assistant: bool,
    ) -> Result<String, EngineError> {
        let template = match self.inner.chat_template(None) {
            Ok(template) => template,
            Err(_) => {
                let arch = self
                    .inner
                    .meta_val_str("general.architecture")
                    .unwrap_or_default();
                let name = builtin_template_for(&arch).ok_or(EngineError::NoChatTemplate)?;
                LlamaChatTemplate::new(name)
                    .map_err(|e| EngineError::ChatTemplate(e.to_string()))?
            }
        };
        let chat = messages
            .iter()
            .map(|m| LlamaChatMessage::new(m.role.clone(), m.content.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| EngineError::ChatTemplate(e.to_string()))?;
        self.inner
            .apply_chat_template(&template, &chat, add_assistant)
            .map_err(|e| {
                EngineError::ChatTemplate(format!(
                    "{e} (llama.cpp does not know this model's template; use --raw)"
                ))
            })
    }
}

/// Some GGUF conversions (the default Gemma 3 270M among them) ship without
/// `tokenizer.chat_template`. For architectures whose chat format is fixed, fall back to
/// llama.cpp's built-in template of that name.
fn builtin_template_for(architecture: &str) -> Option<&'static str> {
    match architecture {
        "gemma" | "gemma2" | "gemma3" | "gemma3n" => Some("gemma"),
        _ => None,
    }
}
