//! Templates kvrun ships: a default for architectures whose GGUF conversions often carry no
//! `tokenizer.chat_template` (the default Gemma 3 270M has none), and names that
//! `--chat-template NAME` accepts.

/// Gemma 3's instruction-tuned template as published with google/gemma-3-*-it.
const GEMMA3: &str = include_str!("../../assets/templates/gemma3.jinja");
/// Plain ChatML (`<|im_start|>role ... <|im_end|>`), as Qwen 2 and many fine-tunes use.
const CHATML: &str = include_str!("../../assets/templates/chatml.jinja");

/// The names `--chat-template` accepts besides a file path.
pub const BUILTIN_NAMES: [&str; 2] = ["gemma3", "chatml"];

/// A shipped template by name.
pub fn builtin_named(name: &str) -> Option<&'static str> {
    match name {
        "gemma3" | "gemma" => Some(GEMMA3),
        "chatml" => Some(CHATML),
        _ => None,
    }
}

/// The default for a model whose GGUF has no template, by `general.architecture`. Gemma 1
/// and 2 use the same turn markup; their templates differ only in refusing a system turn,
/// which Gemma 3's folds into the first user turn.
pub fn builtin_for_architecture(architecture: &str) -> Option<(&'static str, &'static str)> {
    match architecture {
        "gemma" | "gemma2" | "gemma3" | "gemma3n" => Some(("gemma3", GEMMA3)),
        _ => None,
    }
}
