//! Minimal GGUF v3 writer: metadata of every type plus F32/F16 tensors and streamed tensors
//! of any type, laid out exactly as ggml's own writer does (tensors packed in table order,
//! each padded to the alignment), so the pinned llama.cpp and kvrun's reader both accept
//! the result.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use crate::gguf::{GgmlType, GgufArray, GgufValue, StringArray};
use crate::gguf::{DEFAULT_ALIGNMENT, GGUF_MAGIC, MAX_DIMS, MAX_TENSOR_NAME};

struct PendingTensor {
    name: String,
    dims: Vec<u64>,
    ggml_type: GgmlType,
    data: TensorData,
}

/// Writes a streamed tensor's bytes when the file is written.
pub type TensorSource = Box<dyn Fn(&mut dyn Write) -> io::Result<()>>;

enum TensorData {
    Bytes(Vec<u8>),
    /// Produced while the file is written, so a multi-GB model never sits in memory; the
    /// source must write exactly `len` bytes (checked).
    Streamed {
        len: u64,
        source: TensorSource,
    },
}

impl TensorData {
    fn len(&self) -> u64 {
        match self {
            TensorData::Bytes(b) => b.len() as u64,
            TensorData::Streamed { len, .. } => *len,
        }
    }
}

/// Collects metadata and tensors in memory, then writes the file in one go. Problems with
/// the inputs (duplicate names, shape/data mismatch) are reported by `write_*` as
/// `io::ErrorKind::InvalidInput`, so building never needs a `Result`.
#[derive(Default)]
pub struct GgufWriter {
    kvs: Vec<(String, GgufValue)>,
    tensors: Vec<PendingTensor>,
}

impl GgufWriter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn add_value(&mut self, key: impl Into<String>, value: GgufValue) -> &mut Self {
        self.kvs.push((key.into(), value));
        self
    }

    /// Replaces the value of `key`, or adds it when absent.
    pub fn set_value(&mut self, key: &str, value: GgufValue) -> &mut Self {
        match self.kvs.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.kvs.push((key.to_string(), value)),
        }
        self
    }

    /// Drops `key` if present.
    pub fn remove_value(&mut self, key: &str) -> &mut Self {
        self.kvs.retain(|(k, _)| k != key);
        self
    }

    pub fn add_str(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.add_value(key, GgufValue::String(value.into()))
    }

    pub fn add_u32(&mut self, key: impl Into<String>, value: u32) -> &mut Self {
        self.add_value(key, GgufValue::U32(value))
    }

    pub fn add_i32(&mut self, key: impl Into<String>, value: i32) -> &mut Self {
        self.add_value(key, GgufValue::I32(value))
    }

    pub fn add_u64(&mut self, key: impl Into<String>, value: u64) -> &mut Self {
        self.add_value(key, GgufValue::U64(value))
    }

    pub fn add_f32(&mut self, key: impl Into<String>, value: f32) -> &mut Self {
        self.add_value(key, GgufValue::F32(value))
    }

    pub fn add_bool(&mut self, key: impl Into<String>, value: bool) -> &mut Self {
        self.add_value(key, GgufValue::Bool(value))
    }

    pub fn add_str_array<S: AsRef<str>>(
        &mut self,
        key: impl Into<String>,
        values: &[S],
    ) -> &mut Self {
        let arr: StringArray = values.iter().collect();
        self.add_value(key, GgufValue::Array(GgufArray::String(arr)))
    }

    pub fn add_f32_array(&mut self, key: impl Into<String>, values: &[f32]) -> &mut Self {
        self.add_value(key, GgufValue::Array(GgufArray::F32(values.to_vec())))
    }

    pub fn add_i32_array(&mut self, key: impl Into<String>, values: &[i32]) -> &mut Self {
        self.add_value(key, GgufValue::Array(GgufArray::I32(values.to_vec())))
    }

    /// `dims` in ggml order (`dims[0]` contiguous); `data.len()` must equal their product.
    pub fn add_tensor_f32(
        &mut self,
        name: impl Into<String>,
        dims: &[u64],
        data: &[f32],
    ) -> &mut Self {
        let bytes = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.push_tensor(name.into(), dims, GgmlType::F32, TensorData::Bytes(bytes))
    }

    /// Like `add_tensor_f32`, but stored as F16 (round to nearest).
    pub fn add_tensor_f16(
        &mut self,
        name: impl Into<String>,
        dims: &[u64],
        data: &[f32],
    ) -> &mut Self {
        let bytes = data
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_le_bytes())
            .collect();
        self.push_tensor(name.into(), dims, GgmlType::F16, TensorData::Bytes(bytes))
    }

    /// A tensor of any type whose bytes `source` writes when the file is written; `len` is
    /// what the shape needs (checked against it, and against what `source` writes).
    pub fn add_tensor_streamed(
        &mut self,
        name: impl Into<String>,
        dims: &[u64],
        ggml_type: GgmlType,
        len: u64,
        source: TensorSource,
    ) -> &mut Self {
        self.push_tensor(
            name.into(),
            dims,
            ggml_type,
            TensorData::Streamed { len, source },
        )
    }

    fn push_tensor(
        &mut self,
        name: String,
        dims: &[u64],
        ggml_type: GgmlType,
        data: TensorData,
    ) -> &mut Self {
        self.tensors.push(PendingTensor {
            name,
            dims: dims.to_vec(),
            ggml_type,
            data,
        });
        self
    }

    fn validate(&self) -> io::Result<()> {
        let invalid = |msg: String| Err(io::Error::new(io::ErrorKind::InvalidInput, msg));
        let mut keys = HashSet::new();
        for (k, _) in &self.kvs {
            if k.is_empty() || !keys.insert(k.as_str()) {
                return invalid(format!(
                    "GGUF writer: empty or duplicate metadata key '{k}'"
                ));
            }
        }
        let mut names = HashSet::new();
        for t in &self.tensors {
            if t.name.len() >= MAX_TENSOR_NAME || !names.insert(t.name.as_str()) {
                return invalid(format!(
                    "GGUF writer: tensor name '{}' too long or duplicate",
                    t.name
                ));
            }
            // Rows hold whole blocks: bytes = elements / block size * type size.
            let block = t.ggml_type.block_size().max(1);
            let want = t.dims.first().filter(|&&d| d % block == 0).and_then(|_| {
                t.dims
                    .iter()
                    .try_fold(1u64, |a, &d| a.checked_mul(d))
                    .and_then(|n| (n / block).checked_mul(t.ggml_type.type_size()))
            });
            if t.dims.is_empty() || t.dims.len() > MAX_DIMS as usize || want != Some(t.data.len()) {
                return invalid(format!(
                    "GGUF writer: tensor '{}' has shape {:?} but {} bytes of {}",
                    t.name,
                    t.dims,
                    t.data.len(),
                    t.ggml_type
                ));
            }
        }
        Ok(())
    }

    pub fn write_to<W: Write>(&self, w: W) -> io::Result<()> {
        self.validate()?;
        let align = DEFAULT_ALIGNMENT;
        let mut w = Counting { w, pos: 0 };

        w.put(&GGUF_MAGIC)?;
        w.put(&3u32.to_le_bytes())?;
        w.put(&(self.tensors.len() as u64).to_le_bytes())?;
        w.put(&(self.kvs.len() as u64).to_le_bytes())?;
        let mut buf = Vec::new();
        for (k, v) in &self.kvs {
            buf.clear();
            encode_str(&mut buf, k);
            encode_value(&mut buf, v);
            w.put(&buf)?;
        }

        let mut offset: u64 = 0;
        for t in &self.tensors {
            buf.clear();
            encode_str(&mut buf, &t.name);
            buf.extend_from_slice(&(t.dims.len() as u32).to_le_bytes());
            for d in &t.dims {
                buf.extend_from_slice(&d.to_le_bytes());
            }
            buf.extend_from_slice(&t.ggml_type.as_u32().to_le_bytes());
            buf.extend_from_slice(&offset.to_le_bytes());
            w.put(&buf)?;
            offset = (offset + t.data.len()).div_ceil(align) * align;
        }

        // Data section: start aligned, each tensor followed by zero padding (as ggml does,
        // including after the last one).
        if !self.tensors.is_empty() {
            w.pad_to(align)?;
        }
        for t in &self.tensors {
            match &t.data {
                TensorData::Bytes(b) => w.put(b)?,
                TensorData::Streamed { len, source } => {
                    let before = w.pos;
                    source(&mut w)?;
                    if w.pos - before != *len {
                        return Err(io::Error::new(
                            io::ErrorKind::InvalidInput,
                            format!(
                                "GGUF writer: tensor '{}' wrote {} bytes, its shape needs {len}",
                                t.name,
                                w.pos - before
                            ),
                        ));
                    }
                }
            }
            w.pad_to(align)?;
        }
        w.w.flush()
    }

    pub fn write_file(&self, path: &Path) -> io::Result<()> {
        let mut w = BufWriter::new(File::create(path)?);
        self.write_to(&mut w)?;
        w.flush()
    }
}

/// Tracks the file position so padding can be computed.
struct Counting<W> {
    w: W,
    pos: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let n = self.w.write(b)?;
        self.pos += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

impl<W: Write> Counting<W> {
    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.pos += b.len() as u64;
        self.w.write_all(b)
    }

    fn pad_to(&mut self, align: u64) -> io::Result<()> {
        const ZEROS: [u8; DEFAULT_ALIGNMENT as usize] = [0; DEFAULT_ALIGNMENT as usize];
        let pad = (self.pos.div_ceil(align) * align - self.pos) as usize;
        self.put(&ZEROS[..pad])
    }
}

fn encode_str(buf: &mut Vec<u8>, s: &str) {
    buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
    buf.extend_from_slice(s.as_bytes());
}

fn encode_value(buf: &mut Vec<u8>, v: &GgufValue) {
    buf.extend_from_slice(&v.value_type().as_u32().to_le_bytes());
    match v {
        GgufValue::U8(x) => buf.push(*x),
        GgufValue::I8(x) => buf.extend_from_slice(&x.to_le_bytes()),
        GgufValue::U16(x) => buf.extend_from_slice(&x.to_le_bytes()),
        GgufValue::I16(x) => buf.extend_from_slice(&x.to_le_bytes()),
        GgufValue::U32(x) => buf.extend_from_slice(&x.to_le_bytes()),
        GgufValue::I32(x) => buf.extend_from_slice(&x.to_le_bytes()),
        GgufValue::F32(x) => buf.extend_from_slice(&x.to_le_bytes()),
        GgufValue::Bool(x) => buf.push(u8::from(*x)),
        GgufValue::String(s) => encode_str(buf, s),
        GgufValue::Array(a) => encode_array(buf, a),
        GgufValue::U64(x) => buf.extend_from_slice(&x.to_le_bytes()),
        GgufValue::I64(x) => buf.extend_from_slice(&x.to_le_bytes()),
        GgufValue::F64(x) => buf.extend_from_slice(&x.to_le_bytes()),
    }
}

/// Array payload: element type, count, then the elements without per-element type tags
/// (a nested array element is itself type + count + elements).
fn encode_array(buf: &mut Vec<u8>, a: &GgufArray) {
    buf.extend_from_slice(&a.element_type().as_u32().to_le_bytes());
    buf.extend_from_slice(&(a.len() as u64).to_le_bytes());
    fn each<T: Copy, const N: usize>(buf: &mut Vec<u8>, v: &[T], f: fn(T) -> [u8; N]) {
        for &x in v {
            buf.extend_from_slice(&f(x));
        }
    }
    match a {
        GgufArray::U8(v) => buf.extend_from_slice(v),
        GgufArray::I8(v) => each(buf, v, i8::to_le_bytes),
        GgufArray::U16(v) => each(buf, v, u16::to_le_bytes),
        GgufArray::I16(v) => each(buf, v, i16::to_le_bytes),
        GgufArray::U32(v) => each(buf, v, u32::to_le_bytes),
        GgufArray::I32(v) => each(buf, v, i32::to_le_bytes),
        GgufArray::F32(v) => each(buf, v, f32::to_le_bytes),
        GgufArray::Bool(v) => each(buf, v, |b| [u8::from(b)]),
        GgufArray::String(v) => v.iter().for_each(|s| encode_str(buf, s)),
        GgufArray::Array(v) => v.iter().for_each(|x| encode_array(buf, x)),
        GgufArray::U64(v) => each(buf, v, u64::to_le_bytes),
        GgufArray::I64(v) => each(buf, v, i64::to_le_bytes),
        GgufArray::F64(v) => each(buf, v, f64::to_le_bytes),
    }
}
