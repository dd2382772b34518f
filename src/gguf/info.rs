//! Human-facing summary of a model file, for `kvrun` listings and `info` output.

use super::file::GgufFile;

/// What kvrun shows about a model, derived from the header alone.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ModelInfo {
    /// `general.name`.
    pub name: Option<String>,
    /// `general.architecture`, e.g. "llama", "gemma3".
    pub architecture: String,
    /// `{arch}.context_length`: the training context.
    pub context_length: Option<u64>,
    /// From `general.file_type`: "Q4_K_M", "F16", ... or "unknown".
    pub quantization: String,
    pub file_size: u64,
    /// Sum of all tensor element counts.
    pub n_params: u64,
    pub has_chat_template: bool,
    /// `{arch}.attention.sliding_window`, if the model uses sliding-window attention.
    pub sliding_window: Option<u64>,
}

/// llama.cpp's `enum llama_ftype` (include/llama.h) as the names its tools print.
pub fn file_type_name(file_type: u32) -> Option<&'static str> {
    Some(match file_type {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        4 => "Q4_1_SOME_F16",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        39 => "NVFP4",
        40 => "Q1_0",
        41 => "Q2_0",
        _ => return None,
    })
}

impl GgufFile {
    pub fn info(&self) -> ModelInfo {
        let arch = self.architecture();
        let quantization = self
            .get_u32("general.file_type")
            .and_then(file_type_name)
            .unwrap_or("unknown");
        ModelInfo {
            name: self.get_str("general.name").map(str::to_string),
            architecture: arch.to_string(),
            context_length: self.get_u64(&format!("{arch}.context_length")),
            quantization: quantization.to_string(),
            file_size: self.file_size(),
            n_params: self
                .tensors()
                .iter()
                .fold(0u64, |acc, t| acc.saturating_add(t.n_elements())),
            has_chat_template: self
                .get_str("tokenizer.chat_template")
                .is_some_and(|t| !t.is_empty()),
            // Some converters write 0 for "no sliding window".
            sliding_window: self
                .get_u64(&format!("{arch}.attention.sliding_window"))
                .filter(|&w| w > 0),
        }
    }
}
