//! Vocabulary checks: the invariants llama.cpp's `llama_vocab::load` asserts on, and the
//! ones whose violation makes it throw a C++ exception later, mid-tokenization, through the
//! C API (which aborts the process instead of returning an error).

use std::collections::HashMap;

use super::error::{shown, GgufError};
use super::file::GgufFile;
use super::types::GgufArray;

const TOKENS: &str = "tokenizer.ggml.tokens";
const SCORES: &str = "tokenizer.ggml.scores";
const TOKEN_TYPES: &str = "tokenizer.ggml.token_type";
/// llama.h `enum llama_token_type`: UNDEFINED (0) through BYTE (6).
const MAX_TOKEN_TYPE: i32 = 6;

fn bad(key: &str, reason: String) -> GgufError {
    GgufError::BadMetadata {
        key: key.to_string(),
        reason,
    }
}

pub(super) fn check(file: &GgufFile) -> Result<(), GgufError> {
    let model = file.get_str("tokenizer.ggml.model");
    if model == Some("none") {
        return Ok(());
    }
    let tokens = match file
        .get(TOKENS)
        .map(|v| v.as_array().and_then(GgufArray::as_strings))
    {
        Some(Some(t)) => t,
        Some(None) => return Err(bad(TOKENS, "must be an array of strings".into())),
        None => {
            return Err(bad(
                TOKENS,
                "is missing: the model has no vocabulary".into(),
            ))
        }
    };
    let n = tokens.len();
    if n == 0 || n > i32::MAX as usize {
        return Err(bad(
            TOKENS,
            format!("has {n} tokens; a vocabulary needs 1..=2^31-1"),
        ));
    }
    if let Some(i) = tokens.first_invalid_utf8() {
        return Err(bad(TOKENS, format!("token {i} is not valid UTF-8")));
    }
    if tokens.iter().all(str::is_empty) {
        return Err(bad(TOKENS, "every token string is empty".into()));
    }
    // llama.cpp stores an empty token as "[EMPTY_<id>]" and asserts that the text -> id
    // map ends up as large as the list, so compare the texts it would store.
    let mut seen: HashMap<std::borrow::Cow<'_, str>, usize> = HashMap::with_capacity(n);
    for (i, text) in tokens.iter().enumerate() {
        let stored = if text.is_empty() {
            format!("[EMPTY_{i}]").into()
        } else {
            text.into()
        };
        if let Some(first) = seen.insert(stored, i) {
            return Err(bad(
                TOKENS,
                format!("tokens {first} and {i} are both '{}'", shown(text)),
            ));
        }
    }
    check_parallel_arrays(file, n)?;
    if model == Some("llama") {
        check_spm_bytes(&seen)?;
    }
    check_embedding_rows(file, n)
}

/// Scores and token types, when present, cover every token with the types llama.cpp reads.
fn check_parallel_arrays(file: &GgufFile, n: usize) -> Result<(), GgufError> {
    match file.get_array(SCORES) {
        None => {}
        Some(a @ (GgufArray::F32(_) | GgufArray::I32(_))) if a.len() >= n => {}
        Some(a @ (GgufArray::F32(_) | GgufArray::I32(_))) => {
            return Err(bad(
                SCORES,
                format!("has {} entries for {n} tokens", a.len()),
            ))
        }
        Some(_) => return Err(bad(SCORES, "must be an array of f32 or i32".into())),
    }
    match file.get_array(TOKEN_TYPES) {
        None => Ok(()),
        Some(GgufArray::I32(types)) if types.len() < n => Err(bad(
            TOKEN_TYPES,
            format!("has {} entries for {n} tokens", types.len()),
        )),
        Some(GgufArray::I32(types)) => {
            match types.iter().position(|t| !(0..=MAX_TOKEN_TYPE).contains(t)) {
                Some(i) => Err(bad(
                    TOKEN_TYPES,
                    format!(
                        "token {i} has type {}, outside 0..={MAX_TOKEN_TYPE}",
                        types[i]
                    ),
                )),
                None => Ok(()),
            }
        }
        Some(_) => Err(bad(TOKEN_TYPES, "must be an array of i32".into())),
    }
}

/// An SPM ("llama") vocabulary falls back to byte tokens for any text its pieces do not
/// cover; llama.cpp looks each one up with `std::map::at` and throws when it is missing.
fn check_spm_bytes(seen: &HashMap<std::borrow::Cow<'_, str>, usize>) -> Result<(), GgufError> {
    for byte in 0..=255u8 {
        let hex = format!("<0x{byte:02X}>");
        let raw = char::from(byte).to_string();
        let found =
            seen.contains_key(hex.as_str()) || (byte.is_ascii() && seen.contains_key(raw.as_str()));
        if !found {
            return Err(bad(
                TOKENS,
                format!("the SPM vocabulary has no byte token {hex}, which llama.cpp needs"),
            ));
        }
    }
    Ok(())
}

/// The embedding matrix has one row per token (llama.cpp sizes its vocabulary by the list).
fn check_embedding_rows(file: &GgufFile, n: usize) -> Result<(), GgufError> {
    let Some(t) = file.tensor("token_embd.weight") else {
        return Ok(());
    };
    if t.dims.get(1).copied().unwrap_or(1) != n as u64 {
        return Err(GgufError::BadTensor {
            name: t.name.clone(),
            reason: format!("has shape {:?}, but the vocabulary has {n} tokens", t.dims),
        });
    }
    Ok(())
}
