//! GGUF value model and the ggml tensor type table.
//!
//! The numeric codes mirror `enum gguf_type` (ggml/include/gguf.h) and `enum ggml_type`
//! (ggml/include/ggml.h) of the llama.cpp version kvrun pins; block and type sizes are the
//! `blck_size`/`type_size` traits from ggml/src/ggml.c (checked against `sizeof(block_*)`).

use std::fmt;

/// The type tag of a GGUF metadata value (`enum gguf_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgufValueType {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
}

impl GgufValueType {
    pub fn from_u32(v: u32) -> Option<Self> {
        use GgufValueType::*;
        Some(match v {
            0 => U8,
            1 => I8,
            2 => U16,
            3 => I16,
            4 => U32,
            5 => I32,
            6 => F32,
            7 => Bool,
            8 => String,
            9 => Array,
            10 => U64,
            11 => I64,
            12 => F64,
            _ => return None,
        })
    }

    pub fn as_u32(self) -> u32 {
        self as u32
    }

    /// Smallest number of bytes one value of this type occupies in a file. Used to reject
    /// element counts that cannot possibly fit in the bytes left, before allocating.
    pub(crate) fn min_encoded_size(self) -> u64 {
        use GgufValueType::*;
        match self {
            U8 | I8 | Bool => 1,
            U16 | I16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 => 8,
            String => 8, // u64 length prefix
            Array => 12, // u32 element type + u64 count
        }
    }
}

/// A list of strings stored as one buffer plus end offsets: a 262k-entry vocabulary becomes
/// two allocations instead of 262k, which keeps header parsing fast.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct StringArray {
    data: String,
    ends: Vec<usize>,
    /// Index of the first element whose file bytes llama.cpp's UTF-8 decoder rejects (stored
    /// lossily here). llama.cpp keeps such bytes and later throws on them through a C
    /// boundary, which aborts the process, so the vocabulary check needs to know.
    first_invalid_utf8: Option<usize>,
}

impl StringArray {
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            data: String::new(),
            ends: Vec::with_capacity(n),
            first_invalid_utf8: None,
        }
    }

    pub fn push(&mut self, s: &str) {
        self.data.push_str(s);
        self.ends.push(self.data.len());
    }

    /// Appends an element read from a file, remembering whether its bytes were UTF-8.
    pub(crate) fn push_bytes(&mut self, bytes: &[u8]) {
        if self.first_invalid_utf8.is_none() && !llama_cpp_decodes(bytes) {
            self.first_invalid_utf8 = Some(self.len());
        }
        self.push(&String::from_utf8_lossy(bytes));
    }

    /// The first element that was not valid UTF-8 in the file, if any.
    pub fn first_invalid_utf8(&self) -> Option<usize> {
        self.first_invalid_utf8
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        let end = *self.ends.get(i)?;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.data.get(start..end)
    }

    pub fn iter(&self) -> impl Iterator<Item = &str> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }
}

/// Whether llama.cpp's `unicode_cpt_from_utf8` decodes every character of `b` without
/// throwing. It is laxer than Rust (overlong forms and surrogates pass), so this mirrors it
/// rather than refusing files llama.cpp handles.
fn llama_cpp_decodes(b: &[u8]) -> bool {
    if std::str::from_utf8(b).is_ok() {
        return true;
    }
    let mut i = 0;
    while i < b.len() {
        let lead = b[i];
        let len = match lead.leading_ones() {
            0 => 1,
            2 => 2,
            3 => 3,
            4 => 4,
            _ => return false,
        };
        let Some(tail) = b.get(i + 1..i + len) else {
            return false;
        };
        if tail.iter().any(|&c| c & 0xC0 != 0x80) {
            return false;
        }
        i += len;
    }
    true
}

impl<S: AsRef<str>> FromIterator<S> for StringArray {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut out = StringArray::new();
        for s in iter {
            out.push(s.as_ref());
        }
        out
    }
}

impl fmt::Debug for StringArray {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// A typed GGUF array. Nested arrays are allowed by the format (llama.cpp itself rejects
/// them, but they are parsed here so that such a file gets a precise error upstream).
#[derive(Debug, Clone, PartialEq)]
pub enum GgufArray {
    U8(Vec<u8>),
    I8(Vec<i8>),
    U16(Vec<u16>),
    I16(Vec<i16>),
    U32(Vec<u32>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    Bool(Vec<bool>),
    String(StringArray),
    Array(Vec<GgufArray>),
    U64(Vec<u64>),
    I64(Vec<i64>),
    F64(Vec<f64>),
}

impl GgufArray {
    pub fn len(&self) -> usize {
        match self {
            GgufArray::U8(v) => v.len(),
            GgufArray::I8(v) => v.len(),
            GgufArray::U16(v) => v.len(),
            GgufArray::I16(v) => v.len(),
            GgufArray::U32(v) => v.len(),
            GgufArray::I32(v) => v.len(),
            GgufArray::F32(v) => v.len(),
            GgufArray::Bool(v) => v.len(),
            GgufArray::String(v) => v.len(),
            GgufArray::Array(v) => v.len(),
            GgufArray::U64(v) => v.len(),
            GgufArray::I64(v) => v.len(),
            GgufArray::F64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn element_type(&self) -> GgufValueType {
        match self {
            GgufArray::U8(_) => GgufValueType::U8,
            GgufArray::I8(_) => GgufValueType::I8,
            GgufArray::U16(_) => GgufValueType::U16,
            GgufArray::I16(_) => GgufValueType::I16,
            GgufArray::U32(_) => GgufValueType::U32,
            GgufArray::I32(_) => GgufValueType::I32,
            GgufArray::F32(_) => GgufValueType::F32,
            GgufArray::Bool(_) => GgufValueType::Bool,
            GgufArray::String(_) => GgufValueType::String,
            GgufArray::Array(_) => GgufValueType::Array,
            GgufArray::U64(_) => GgufValueType::U64,
            GgufArray::I64(_) => GgufValueType::I64,
            GgufArray::F64(_) => GgufValueType::F64,
        }
    }

    pub fn as_strings(&self) -> Option<&StringArray> {
        match self {
            GgufArray::String(v) => Some(v),
            _ => None,
        }
    }
}

/// One GGUF metadata value.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    F32(f32),
    Bool(bool),
    String(String),
    Array(GgufArray),
    U64(u64),
    I64(i64),
    F64(f64),
}

impl GgufValue {
    pub fn value_type(&self) -> GgufValueType {
        match self {
            GgufValue::U8(_) => GgufValueType::U8,
            GgufValue::I8(_) => GgufValueType::I8,
            GgufValue::U16(_) => GgufValueType::U16,
            GgufValue::I16(_) => GgufValueType::I16,
            GgufValue::U32(_) => GgufValueType::U32,
            GgufValue::I32(_) => GgufValueType::I32,
            GgufValue::F32(_) => GgufValueType::F32,
            GgufValue::Bool(_) => GgufValueType::Bool,
            GgufValue::String(_) => GgufValueType::String,
            GgufValue::Array(_) => GgufValueType::Array,
            GgufValue::U64(_) => GgufValueType::U64,
            GgufValue::I64(_) => GgufValueType::I64,
            GgufValue::F64(_) => GgufValueType::F64,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// Any integer type as i128, so both signed and unsigned coerce without loss.
    fn as_i128(&self) -> Option<i128> {
        Some(match *self {
            GgufValue::U8(v) => v.into(),
            GgufValue::I8(v) => v.into(),
            GgufValue::U16(v) => v.into(),
            GgufValue::I16(v) => v.into(),
            GgufValue::U32(v) => v.into(),
            GgufValue::I32(v) => v.into(),
            GgufValue::U64(v) => v.into(),
            GgufValue::I64(v) => v.into(),
            _ => return None,
        })
    }

    /// Any integer type that is non-negative and fits; converters disagree on u32 vs i32 etc.
    pub fn as_u64(&self) -> Option<u64> {
        self.as_i128().and_then(|v| u64::try_from(v).ok())
    }

    pub fn as_u32(&self) -> Option<u32> {
        self.as_i128().and_then(|v| u32::try_from(v).ok())
    }

    pub fn as_i64(&self) -> Option<i64> {
        self.as_i128().and_then(|v| i64::try_from(v).ok())
    }

    /// Floats, and integers as a convenience.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(v.into()),
            GgufValue::F64(v) => Some(v),
            _ => self.as_i128().map(|v| v as f64),
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            GgufValue::Bool(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&GgufArray> {
        match self {
            GgufValue::Array(a) => Some(a),
            _ => None,
        }
    }
}

/// A ggml tensor element type that can appear in a GGUF file of the pinned llama.cpp.
/// Codes removed from ggml (4, 5, 31-33, 36-38) are deliberately absent: llama.cpp
/// rejects them, so they are "unknown" here too.
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GgmlType {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    TQ1_0 = 34,
    TQ2_0 = 35,
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
    Q2_0 = 42,
}

/// (type, name, elements per block, bytes per block), from ggml.c's `type_traits`.
const GGML_TYPES: &[(GgmlType, &str, u64, u64)] = &[
    (GgmlType::F32, "F32", 1, 4),
    (GgmlType::F16, "F16", 1, 2),
    (GgmlType::Q4_0, "Q4_0", 32, 18),
    (GgmlType::Q4_1, "Q4_1", 32, 20),
    (GgmlType::Q5_0, "Q5_0", 32, 22),
    (GgmlType::Q5_1, "Q5_1", 32, 24),
    (GgmlType::Q8_0, "Q8_0", 32, 34),
    (GgmlType::Q8_1, "Q8_1", 32, 36),
    (GgmlType::Q2_K, "Q2_K", 256, 84),
    (GgmlType::Q3_K, "Q3_K", 256, 110),
    (GgmlType::Q4_K, "Q4_K", 256, 144),
    (GgmlType::Q5_K, "Q5_K", 256, 176),
    (GgmlType::Q6_K, "Q6_K", 256, 210),
    (GgmlType::Q8_K, "Q8_K", 256, 292),
    (GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66),
    (GgmlType::IQ2_XS, "IQ2_XS", 256, 74),
    (GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98),
    (GgmlType::IQ1_S, "IQ1_S", 256, 50),
    (GgmlType::IQ4_NL, "IQ4_NL", 32, 18),
    (GgmlType::IQ3_S, "IQ3_S", 256, 110),
    (GgmlType::IQ2_S, "IQ2_S", 256, 82),
    (GgmlType::IQ4_XS, "IQ4_XS", 256, 136),
    (GgmlType::I8, "I8", 1, 1),
    (GgmlType::I16, "I16", 1, 2),
    (GgmlType::I32, "I32", 1, 4),
    (GgmlType::I64, "I64", 1, 8),
    (GgmlType::F64, "F64", 1, 8),
    (GgmlType::IQ1_M, "IQ1_M", 256, 56),
    (GgmlType::BF16, "BF16", 1, 2),
    (GgmlType::TQ1_0, "TQ1_0", 256, 54),
    (GgmlType::TQ2_0, "TQ2_0", 256, 66),
    (GgmlType::MXFP4, "MXFP4", 32, 17),
    (GgmlType::NVFP4, "NVFP4", 64, 36),
    (GgmlType::Q1_0, "Q1_0", 128, 18),
    (GgmlType::Q2_0, "Q2_0", 64, 18),
];

impl GgmlType {
    pub fn from_u32(v: u32) -> Option<Self> {
        GGML_TYPES
            .iter()
            .find(|(t, ..)| *t as u32 == v)
            .map(|(t, ..)| *t)
    }

    pub fn as_u32(self) -> u32 {
        self as u32
    }

    fn traits(self) -> (&'static str, u64, u64) {
        // Every variant has a row; the fallback only keeps this total without a panic path.
        GGML_TYPES
            .iter()
            .find(|(t, ..)| *t == self)
            .map_or(("?", 1, 1), |&(_, n, b, s)| (n, b, s))
    }

    pub fn name(self) -> &'static str {
        self.traits().0
    }

    /// Elements per quantization block (1 for plain types).
    pub fn block_size(self) -> u64 {
        self.traits().1
    }

    /// Bytes per block.
    pub fn type_size(self) -> u64 {
        self.traits().2
    }
}

impl fmt::Display for GgmlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
