//! What a model's context costs in memory, from its metadata alone: the K and V values a
//! cell holds, the vocabulary (a batch's logits), and the weights, so that a server can
//! budget a model before it loads it.

use super::file::GgufFile;

/// The memory facts of a model file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryEstimate {
    /// The tensors' bytes.
    pub weights: u64,
    /// [`kv_values_per_cell`] for the file's architecture.
    pub kv_values_per_cell: Option<u64>,
    pub n_vocab: u64,
    pub n_ctx_train: u64,
    /// Whether prompt batches may span pages ([`crate::kv::MemoryKind::wide_batches`]),
    /// as far as the metadata says: not with a sliding window or a recurrent layer's
    /// keys (Mamba's `ssm.*`, LFM2's `shortconv.*`, RWKV's `wkv.*`).
    pub wide_batches: bool,
}

impl MemoryEstimate {
    pub fn of(file: &GgufFile) -> Self {
        let arch = file.architecture().to_string();
        let int = |key: &str| file.get_u64(&format!("{arch}.{key}"));
        let n_layer = int("block_count").unwrap_or(0).min(u64::from(u32::MAX)) as u32;
        Self {
            weights: file.file_size().saturating_sub(file.data_offset()),
            kv_values_per_cell: kv_values_per_cell(n_layer, int),
            n_vocab: file.get_array_len("tokenizer.ggml.tokens").unwrap_or(0) as u64,
            n_ctx_train: int("context_length").unwrap_or(0),
            wide_batches: !has_window_or_state(file, &arch),
        }
    }
}

/// A sliding window (a size above 0, or a per-layer array) or recurrent state keys.
fn has_window_or_state(file: &GgufFile, arch: &str) -> bool {
    let key = |k: &str| file.get(&format!("{arch}.{k}")).is_some();
    let window = match file.get_u64(&format!("{arch}.attention.sliding_window")) {
        Some(n) => n > 0,
        None => key("attention.sliding_window"),
    };
    window || key("ssm.state_size") || key("shortconv.l_cache") || key("wkv.head_size")
}

/// The K and V values one context cell holds over all layers, if every layer kept a full
/// cache, from `{arch}.*` integer keys (`int` is `None` for a missing key and for an
/// array, as a per-layer head count is). `None` where there are no attention heads.
pub fn kv_values_per_cell(n_layer: u32, int: impl Fn(&str) -> Option<u64>) -> Option<u64> {
    let heads = int("attention.head_count").filter(|&h| h > 0)?;
    let kv_heads = int("attention.head_count_kv").unwrap_or(heads);
    let key = match int("attention.key_length") {
        Some(k) => k,
        None => int("embedding_length")? / heads,
    };
    let value = int("attention.value_length").unwrap_or(key);
    Some(u64::from(n_layer) * kv_heads * (key + value))
}

#[cfg(test)]
mod tests {
    use super::kv_values_per_cell;

    #[test]
    fn kv_values_per_cell_follow_the_head_counts_and_lengths() {
        let keys = |pairs: &'static [(&'static str, u64)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|&(_, v)| v)
        };
        // SmolLM2 135M: 9 heads of 64, 3 KV heads, 30 layers.
        let smol = keys(&[
            ("attention.head_count", 9),
            ("attention.head_count_kv", 3),
            ("embedding_length", 576),
        ]);
        assert_eq!(kv_values_per_cell(30, smol), Some(30 * 3 * 128));
        // Explicit key and value lengths win over embedding / heads.
        let wide = keys(&[
            ("attention.head_count", 4),
            ("attention.head_count_kv", 1),
            ("attention.key_length", 256),
            ("attention.value_length", 128),
            ("embedding_length", 640),
        ]);
        assert_eq!(kv_values_per_cell(2, wide), Some(2 * 384));
        // No KV head count: one per head. No head count (or an array): unknown.
        let mha = keys(&[("attention.head_count", 4), ("embedding_length", 256)]);
        assert_eq!(kv_values_per_cell(1, mha), Some(4 * 128));
        assert_eq!(
            kv_values_per_cell(1, keys(&[("embedding_length", 256)])),
            None
        );
    }
}
