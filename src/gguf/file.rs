//! The result of parsing: a validated header with metadata lookup and the tensor table.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::types::{GgmlType, GgufArray, GgufValue};

/// One entry of the tensor table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    pub name: String,
    /// Dimensions in ggml order: `dims[0]` is the contiguous (row) dimension.
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
    /// Offset relative to the start of the data section.
    pub offset: u64,
    /// Size of the tensor data in bytes.
    pub n_bytes: u64,
}

impl TensorInfo {
    pub fn n_elements(&self) -> u64 {
        // Validated at parse time not to overflow i64.
        self.dims.iter().product()
    }
}

/// A parsed and validated GGUF header.
#[derive(Debug, Clone)]
pub struct GgufFile {
    pub(super) path: PathBuf,
    pub(super) version: u32,
    pub(super) metadata: Vec<(String, GgufValue)>,
    pub(super) key_index: HashMap<String, usize>,
    pub(super) tensors: Vec<TensorInfo>,
    pub(super) tensor_index: HashMap<String, usize>,
    pub(super) alignment: u64,
    pub(super) tensor_table_end: u64,
    pub(super) data_offset: u64,
    pub(super) file_size: u64,
    pub(super) fingerprint: String,
}

impl GgufFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn version(&self) -> u32 {
        self.version
    }

    pub fn alignment(&self) -> u64 {
        self.alignment
    }

    /// Metadata in file order.
    pub fn metadata(&self) -> impl Iterator<Item = (&str, &GgufValue)> + '_ {
        self.metadata.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn get(&self, key: &str) -> Option<&GgufValue> {
        self.key_index.get(key).map(|&i| &self.metadata[i].1)
    }

    pub fn get_str(&self, key: &str) -> Option<&str> {
        self.get(key)?.as_str()
    }

    /// Any integer type that is non-negative and fits in u32.
    pub fn get_u32(&self, key: &str) -> Option<u32> {
        self.get(key)?.as_u32()
    }

    /// Any integer type that is non-negative.
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key)?.as_u64()
    }

    pub fn get_f64(&self, key: &str) -> Option<f64> {
        self.get(key)?.as_f64()
    }

    pub fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key)?.as_bool()
    }

    pub fn get_array(&self, key: &str) -> Option<&GgufArray> {
        self.get(key)?.as_array()
    }

    pub fn get_array_len(&self, key: &str) -> Option<usize> {
        Some(self.get_array(key)?.len())
    }

    /// `general.architecture`; guaranteed present by validation.
    pub fn architecture(&self) -> &str {
        self.get_str("general.architecture").unwrap_or_default()
    }

    pub fn tensors(&self) -> &[TensorInfo] {
        &self.tensors
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensor_index.get(name).map(|&i| &self.tensors[i])
    }

    /// Absolute file offset where tensor data starts.
    pub fn data_offset(&self) -> u64 {
        self.data_offset
    }

    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    /// Length of the header region: everything before `data_offset` (incl. padding).
    pub fn header_len(&self) -> u64 {
        self.data_offset
    }

    /// Absolute offset just past the tensor table (before alignment padding).
    pub fn tensor_table_end(&self) -> u64 {
        self.tensor_table_end
    }

    /// blake3 (hex) of bytes `0..tensor_table_end` followed by the file size as u64 LE.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }
}
