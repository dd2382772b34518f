//! Hyperparameter checks: the metadata values llama.cpp's loader asserts on (an assert
//! aborts the whole process) or that make the first decode abort, checked against the
//! ranges the pinned llama.cpp accepts (src/llama-model.cpp `load_hparams`, src/models/*).

use super::error::GgufError;
use super::file::GgufFile;
use super::types::{GgufArray, GgufValue};

/// llama-hparams.h `LLAMA_MAX_LAYERS`.
pub const MAX_LAYERS: u64 = 512;
/// llama-hparams.h `LLAMA_MAX_EXPERTS`.
pub const MAX_EXPERTS: u64 = 1024;
/// `n_ctx_train` is an `int32_t` in llama.h.
pub const MAX_CONTEXT_LENGTH: u64 = i32::MAX as u64;
/// Far above any real model (the widest are ~16k); bounds the sizes llama.cpp allocates.
const MAX_EMBEDDING_LENGTH: u64 = 1 << 20;
const MAX_FEED_FORWARD_LENGTH: u64 = 1 << 22;
const MAX_HEADS: u64 = 1 << 16;

/// How a family normalizes; decides which epsilon key its loader requires.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Norm {
    Rms,
    Layer,
}

/// A family llama.cpp loads as a plain attention transformer: every layer has heads, and
/// these keys are required.
struct Family {
    arches: &'static [&'static str],
    norm: Norm,
    /// llama.cpp refuses (or mis-sizes) a rope dimension other than the head size.
    rope_is_head_dim: bool,
}

const FAMILIES: &[Family] = &[
    Family {
        arches: &["llama", "llama-embed"],
        norm: Norm::Rms,
        rope_is_head_dim: true,
    },
    Family {
        arches: &[
            "gemma",
            "gemma2",
            "gemma3",
            "qwen2",
            "qwen3",
            "qwen2moe",
            "qwen3moe",
            "phi3",
            "granite",
            "olmo2",
            "smollm3",
            "mistral3",
            "internlm2",
            "exaone",
        ],
        norm: Norm::Rms,
        rope_is_head_dim: false,
    },
    Family {
        arches: &["falcon"],
        norm: Norm::Layer,
        rope_is_head_dim: true,
    },
    Family {
        arches: &[
            "gpt2",
            "starcoder",
            "starcoder2",
            "stablelm",
            "phi2",
            "gptneox",
            "bloom",
            "mpt",
        ],
        norm: Norm::Layer,
        rope_is_head_dim: false,
    },
];

const RMS_EPS: &str = "attention.layer_norm_rms_epsilon";
const LAYER_EPS: &str = "attention.layer_norm_epsilon";

/// Checks `{arch}.*` hyperparameters. Keys every architecture needs are checked for all;
/// the per-family table adds the keys and relations its loader relies on.
pub(super) fn check(file: &GgufFile) -> Result<(), GgufError> {
    let arch = file.architecture();
    let keys = Keys { file, arch };
    let family = FAMILIES.iter().find(|f| f.arches.contains(&arch));

    keys.required_int("context_length", 1, MAX_CONTEXT_LENGTH)?;
    keys.required_int("embedding_length", 1, MAX_EMBEDDING_LENGTH)?;
    let n_layer = keys.required_int("block_count", 1, MAX_LAYERS)?;
    keys.per_layer("feed_forward_length", 0, MAX_FEED_FORWARD_LENGTH, n_layer)?;
    let heads = keys.per_layer("attention.head_count", 0, MAX_HEADS, n_layer)?;
    let kv_heads = keys.per_layer("attention.head_count_kv", 0, MAX_HEADS, n_layer)?;
    for eps in [RMS_EPS, LAYER_EPS] {
        keys.float(eps, |v| v > 0.0 && v < 1.0, "a number in (0, 1)")?;
    }
    keys.float("rope.freq_base", |v| v > 0.0, "a positive number")?;
    keys.float("rope.freq_base_swa", |v| v > 0.0, "a positive number")?;
    keys.float("rope.scaling.factor", |v| v >= 0.0, "a number >= 0")?;
    for cap in ["final_logit_softcapping", "attn_logit_softcapping"] {
        keys.float(cap, |v| v >= 0.0, "a number >= 0")?;
    }
    if let Some(t) = keys.get("rope.scaling.type") {
        // llama_rope_scaling_type_from_string; anything else trips a GGML_ASSERT.
        if !matches!(t.as_str(), Some("none" | "linear" | "yarn" | "longrope")) {
            return Err(keys.bad(
                "rope.scaling.type",
                "must be one of none, linear, yarn, longrope",
            ));
        }
    }
    check_experts(&keys, n_layer)?;

    let Some(family) = family else {
        return Ok(());
    };
    let eps = if family.norm == Norm::Rms {
        RMS_EPS
    } else {
        LAYER_EPS
    };
    if keys.get(eps).is_none() {
        return Err(keys.bad(eps, "is missing"));
    }
    let Some(heads) = heads else {
        return Err(keys.bad("attention.head_count", "is missing"));
    };
    let n_embd = keys.required_int("embedding_length", 1, MAX_EMBEDDING_LENGTH)?;
    let kv_heads = kv_heads.unwrap_or_else(|| heads.clone());
    for (layer, (&h, &kv)) in heads.iter().zip(&kv_heads).enumerate() {
        if h == 0 || kv == 0 || h % kv != 0 {
            return Err(keys.bad(
                "attention.head_count_kv",
                &format!(
                    "layer {layer} has {h} query heads and {kv} KV heads; both must be at \
                     least 1 and the KV heads must divide the query heads"
                ),
            ));
        }
    }
    let max_heads = heads.iter().copied().max().unwrap_or(1);
    let head_dim = match keys.optional_int("attention.key_length", 1, MAX_EMBEDDING_LENGTH)? {
        Some(d) => d,
        None if n_embd % max_heads == 0 => n_embd / max_heads,
        None => {
            return Err(keys.bad(
                "attention.head_count",
                &format!("{max_heads} heads do not divide embedding_length {n_embd}"),
            ))
        }
    };
    keys.optional_int("attention.value_length", 1, MAX_EMBEDDING_LENGTH)?;
    if let Some(rot) = keys.optional_int("rope.dimension_count", 0, head_dim)? {
        if family.rope_is_head_dim && rot != head_dim {
            return Err(keys.bad(
                "rope.dimension_count",
                &format!("is {rot}, but this architecture needs the head size {head_dim}"),
            ));
        }
    }
    Ok(())
}

/// The mixture-of-experts counts, with the relations `load_hparams` asserts.
fn check_experts(keys: &Keys<'_>, n_layer: u64) -> Result<(), GgufError> {
    let n_expert = keys
        .optional_int("expert_count", 0, MAX_EXPERTS)?
        .unwrap_or(0);
    let used = keys
        .per_layer("expert_used_count", 0, MAX_EXPERTS, n_layer)?
        .map_or(0, |v| v.into_iter().max().unwrap_or(0));
    let groups = keys
        .optional_int("expert_group_count", 0, MAX_EXPERTS)?
        .unwrap_or(0);
    let groups_used = keys
        .optional_int("expert_group_used_count", 0, MAX_EXPERTS)?
        .unwrap_or(0);
    let ok = if n_expert == 0 {
        used == 0 && groups == 0
    } else {
        used > 0
            && used <= n_expert
            && groups < n_expert
            && (groups <= 1 || (n_expert % groups == 0 && groups_used > 0 && groups_used < groups))
    };
    if ok {
        Ok(())
    } else {
        Err(keys.bad(
            "expert_count",
            &format!(
                "{n_expert} experts with {used} used per token and {groups} groups \
                 ({groups_used} used) is not a valid mixture of experts"
            ),
        ))
    }
}

/// `{arch}.`-prefixed metadata lookup with range checks that name the key.
struct Keys<'a> {
    file: &'a GgufFile,
    arch: &'a str,
}

impl Keys<'_> {
    fn name(&self, key: &str) -> String {
        format!("{}.{key}", self.arch)
    }

    fn get(&self, key: &str) -> Option<&GgufValue> {
        self.file.get(&self.name(key))
    }

    fn bad(&self, key: &str, reason: &str) -> GgufError {
        GgufError::BadMetadata {
            key: self.name(key),
            reason: format!("{reason}; llama.cpp cannot run this model"),
        }
    }

    fn out_of_range(
        &self,
        key: &str,
        shown: &dyn std::fmt::Display,
        min: u64,
        max: u64,
    ) -> GgufError {
        self.bad(key, &format!("is {shown}, outside {min}..={max}"))
    }

    fn int(&self, key: &str, value: &GgufValue, min: u64, max: u64) -> Result<u64, GgufError> {
        match value
            .as_i64()
            .map(i128::from)
            .or(value.as_u64().map(i128::from))
        {
            Some(v) if (i128::from(min)..=i128::from(max)).contains(&v) => Ok(v as u64),
            Some(v) => Err(self.out_of_range(key, &v, min, max)),
            None => Err(self.bad(key, "must be an integer")),
        }
    }

    fn optional_int(&self, key: &str, min: u64, max: u64) -> Result<Option<u64>, GgufError> {
        self.get(key)
            .map(|v| self.int(key, v, min, max))
            .transpose()
    }

    fn required_int(&self, key: &str, min: u64, max: u64) -> Result<u64, GgufError> {
        self.optional_int(key, min, max)?
            .ok_or_else(|| self.bad(key, "is missing"))
    }

    /// A value llama.cpp reads with `get_key_or_arr`: one integer for every layer, or an
    /// array with one per layer.
    fn per_layer(
        &self,
        key: &str,
        min: u64,
        max: u64,
        n_layer: u64,
    ) -> Result<Option<Vec<u64>>, GgufError> {
        let Some(value) = self.get(key) else {
            return Ok(None);
        };
        let Some(array) = value.as_array() else {
            let v = self.int(key, value, min, max)?;
            return Ok(Some(vec![v; n_layer as usize]));
        };
        if array.len() as u64 != n_layer {
            return Err(self.bad(
                key,
                &format!("has {} entries for {n_layer} layers", array.len()),
            ));
        }
        let as_values: Vec<GgufValue> = match array {
            GgufArray::U32(v) => v.iter().map(|&x| GgufValue::U32(x)).collect(),
            GgufArray::I32(v) => v.iter().map(|&x| GgufValue::I32(x)).collect(),
            _ => return Err(self.bad(key, "must be an integer or an array of 32-bit integers")),
        };
        as_values
            .iter()
            .map(|v| self.int(key, v, min, max))
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// A float key, when present: finite and accepted by `ok`.
    fn float(&self, key: &str, ok: fn(f64) -> bool, wanted: &str) -> Result<(), GgufError> {
        let Some(value) = self.get(key) else {
            return Ok(());
        };
        match value {
            GgufValue::F32(_) | GgufValue::F64(_) => {}
            _ => return Err(self.bad(key, "must be a float")),
        }
        match value.as_f64() {
            Some(v) if v.is_finite() && ok(v) => Ok(()),
            Some(v) => Err(self.bad(key, &format!("is {v}; it must be {wanted}"))),
            None => Err(self.bad(key, "must be a float")),
        }
    }
}
