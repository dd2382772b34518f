//! GGUF header parser and validator.
//!
//! llama.cpp aborts the whole process on some malformed files, so kvrun checks a file here
//! before handing it over: structure, value types, tensor types and shapes, and that every
//! tensor's data lies inside the file, using only the header (tensor data is never read).
//! The checks are at least as strict as `gguf_init_from_reader` in ggml/src/gguf.cpp.

use std::collections::HashMap;
use std::path::Path;

use super::error::{shown, GgufError};
use super::file::{GgufFile, TensorInfo};
use super::input::Input;
use super::types::{GgmlType, GgufArray, GgufValue, GgufValueType, StringArray};

pub const GGUF_MAGIC: [u8; 4] = *b"GGUF";
pub const DEFAULT_ALIGNMENT: u64 = 32;
/// ggml's `TENSOR_ALIGNMENT` (ggml-impl.h): the CPU backend's buffer alignment.
pub const MIN_ALIGNMENT: u64 = 32;
/// ggml's `GGML_MAX_NAME`: tensor names must be shorter than this.
pub const MAX_TENSOR_NAME: usize = 64;
/// ggml's `GGML_MAX_DIMS`.
pub const MAX_DIMS: u32 = 4;

/// Caps on counts that size allocations. Real models have < 1000 keys and < 100k tensors.
const MAX_KV: u64 = 1 << 16;
const MAX_TENSORS: u64 = 1 << 20;
/// Nested arrays are never used in practice; cap their total element count and depth.
const MAX_NESTED_ELEMENTS: u64 = 1 << 16;
const MAX_NESTING: u32 = 4;
/// Smallest possible encodings, to bound counts by the bytes left before allocating.
const MIN_KV_BYTES: u64 = 8 + 1 + 4 + 1; // key length + non-empty key + type + 1-byte value
const MIN_TENSOR_INFO_BYTES: u64 = 8 + 4 + 8 + 4 + 8; // name length, n_dims, one dim, type, offset

/// Parse and validate the header of a GGUF file. Reads only the header region.
pub fn read_header(path: &Path) -> Result<GgufFile, GgufError> {
    parse(Input::open(path)?, path)
}

/// Parse an in-memory file (tests only: avoids thousands of temp-file writes).
#[cfg(test)]
pub(crate) fn read_header_bytes(bytes: &[u8]) -> Result<GgufFile, GgufError> {
    let src = Box::new(std::io::Cursor::new(bytes.to_vec()));
    parse(Input::new(src, bytes.len() as u64), Path::new(""))
}

fn parse(mut r: Input, path: &Path) -> Result<GgufFile, GgufError> {
    let file_size = r.file_size();

    if file_size < 4 {
        let found = r.with_bytes(file_size, "magic", <[u8]>::to_vec)?;
        return Err(GgufError::BadMagic { found });
    }
    let magic: [u8; 4] = r.fixed("magic")?;
    if magic != GGUF_MAGIC {
        return Err(GgufError::BadMagic {
            found: magic.to_vec(),
        });
    }
    let version = r.u32("version")?;
    if version != 2 && version != 3 {
        let hint = match version {
            1 => " (GGUF v1 is obsolete; re-convert the model)",
            v if v & 0xFFFF == 0 => " (big-endian file?)",
            _ => "",
        };
        return Err(GgufError::UnsupportedVersion { version, hint });
    }

    let n_tensors = r.u64("tensor count")?;
    let n_kv = r.u64("metadata count")?;
    check_limit(&r, n_tensors, MAX_TENSORS, "tensor count")?;
    check_limit(&r, n_kv, MAX_KV, "metadata count")?;
    r.check_count(n_kv, MIN_KV_BYTES, "metadata count")?;
    r.check_count(n_tensors, MIN_TENSOR_INFO_BYTES, "tensor count")?;

    // Metadata. Capacities are bounded by the checks above.
    let mut metadata = Vec::with_capacity(n_kv as usize);
    let mut key_index = HashMap::with_capacity(n_kv as usize);
    let mut nested_budget = MAX_NESTED_ELEMENTS;
    for i in 0..n_kv {
        let key_offset = r.pos();
        let key = r
            .string("key")
            .map_err(|e| e.context(|| format!("metadata entry {i}")))?;
        if key.is_empty() {
            return Err(GgufError::EmptyKey {
                index: i,
                offset: key_offset,
            });
        }
        if key_index.contains_key(&key) {
            return Err(GgufError::DuplicateKey(shown(&key)));
        }
        let value = read_value(&mut r, 0, &mut nested_budget)
            .map_err(|e| e.context(|| format!("value of '{}'", shown(&key))))?;
        key_index.insert(key.clone(), metadata.len());
        metadata.push((key, value));
    }
    let get = |k: &str| key_index.get(k).map(|&i| &metadata[i].1);

    // gguf.cpp's rule (a u32 power of two), plus ggml's tensor alignment: llama.cpp maps
    // tensor data in place, and ggml asserts that every tensor starts on such a boundary.
    let alignment = match get("general.alignment") {
        None => DEFAULT_ALIGNMENT,
        Some(GgufValue::U32(a)) if a.is_power_of_two() && u64::from(*a) >= MIN_ALIGNMENT => {
            u64::from(*a)
        }
        Some(GgufValue::U32(a)) => {
            return Err(bad_meta(
                "general.alignment",
                format!("{a} is not a power of two of at least {MIN_ALIGNMENT}"),
            ))
        }
        Some(v) => {
            return Err(bad_meta(
                "general.alignment",
                format!("must be u32, found {:?}", v.value_type()),
            ))
        }
    };
    match get("general.architecture") {
        Some(GgufValue::String(s)) if !s.is_empty() => {}
        Some(GgufValue::String(_)) => {
            return Err(bad_meta("general.architecture", "is empty".into()))
        }
        Some(v) => {
            return Err(bad_meta(
                "general.architecture",
                format!("must be a string, found {:?}", v.value_type()),
            ))
        }
        None => return Err(bad_meta("general.architecture", "is missing".into())),
    }

    // Tensor table.
    let mut tensors = Vec::with_capacity(n_tensors as usize);
    let mut tensor_index = HashMap::with_capacity(n_tensors as usize);
    for i in 0..n_tensors {
        let t = read_tensor_info(&mut r).map_err(|e| e.context(|| format!("tensor info {i}")))?;
        if tensor_index.contains_key(&t.name) {
            return Err(GgufError::DuplicateTensor(shown(&t.name)));
        }
        tensor_index.insert(t.name.clone(), tensors.len());
        tensors.push(t);
    }
    let tensor_table_end = r.pos();
    let fingerprint = r.finish_hash();

    // gguf.cpp pads to the alignment only when there is at least one tensor.
    let data_offset = if tensors.is_empty() {
        tensor_table_end
    } else {
        tensor_table_end.div_ceil(alignment) * alignment
    };
    if data_offset > file_size {
        return Err(GgufError::Truncated {
            what: "padding before tensor data".into(),
            offset: tensor_table_end,
        });
    }
    check_layout(&tensors, alignment, data_offset, file_size)?;

    Ok(GgufFile {
        path: path.to_path_buf(),
        version,
        metadata,
        key_index,
        tensors,
        tensor_index,
        alignment,
        tensor_table_end,
        data_offset,
        file_size,
        fingerprint,
    })
}

/// Header fingerprint of a model file: blake3 over the header bytes (magic through the end
/// of the tensor table) plus the file size. Never reads tensor data, so it takes
/// milliseconds even for a 40 GB model. The file must be a valid GGUF.
pub fn fingerprint(path: &Path) -> Result<String, GgufError> {
    Ok(read_header(path)?.fingerprint)
}

fn bad_meta(key: &str, reason: String) -> GgufError {
    GgufError::BadMetadata {
        key: key.to_string(),
        reason,
    }
}

fn check_limit(r: &Input, count: u64, limit: u64, what: &str) -> Result<(), GgufError> {
    if count > limit {
        return Err(GgufError::LimitExceeded {
            what: what.to_string(),
            offset: r.pos(),
            count,
            limit,
        });
    }
    Ok(())
}

fn read_value(r: &mut Input, depth: u32, nested: &mut u64) -> Result<GgufValue, GgufError> {
    let type_offset = r.pos();
    let type_id = r.u32("value type")?;
    let ty = GgufValueType::from_u32(type_id).ok_or_else(|| GgufError::BadValueType {
        what: "value type".into(),
        type_id,
        offset: type_offset,
    })?;
    Ok(match ty {
        GgufValueType::U8 => GgufValue::U8(r.u8("u8")?),
        GgufValueType::I8 => GgufValue::I8(i8::from_le_bytes(r.fixed("i8")?)),
        GgufValueType::U16 => GgufValue::U16(u16::from_le_bytes(r.fixed("u16")?)),
        GgufValueType::I16 => GgufValue::I16(i16::from_le_bytes(r.fixed("i16")?)),
        GgufValueType::U32 => GgufValue::U32(r.u32("u32")?),
        GgufValueType::I32 => GgufValue::I32(i32::from_le_bytes(r.fixed("i32")?)),
        GgufValueType::F32 => GgufValue::F32(f32::from_le_bytes(r.fixed("f32")?)),
        // Like gguf.cpp, any non-zero byte is true.
        GgufValueType::Bool => GgufValue::Bool(r.u8("bool")? != 0),
        GgufValueType::String => GgufValue::String(r.string("string")?),
        GgufValueType::Array => GgufValue::Array(read_array(r, depth, nested)?),
        GgufValueType::U64 => GgufValue::U64(r.u64("u64")?),
        GgufValueType::I64 => GgufValue::I64(i64::from_le_bytes(r.fixed("i64")?)),
        GgufValueType::F64 => GgufValue::F64(f64::from_le_bytes(r.fixed("f64")?)),
    })
}

/// Read `n` fixed-size little-endian elements in one bounded slice.
fn read_numbers<T, const N: usize>(
    r: &mut Input,
    n: u64,
    conv: fn([u8; N]) -> T,
) -> Result<Vec<T>, GgufError> {
    r.with_bytes(n * N as u64, "array data", |b| {
        b.chunks_exact(N)
            .map(|c| {
                let mut a = [0u8; N];
                a.copy_from_slice(c);
                conv(a)
            })
            .collect()
    })
}

fn read_array(r: &mut Input, depth: u32, nested: &mut u64) -> Result<GgufArray, GgufError> {
    let type_offset = r.pos();
    let type_id = r.u32("array element type")?;
    let ty = GgufValueType::from_u32(type_id).ok_or_else(|| GgufError::BadValueType {
        what: "array element type".into(),
        type_id,
        offset: type_offset,
    })?;
    let n = r.u64("array length")?;
    // The bound check below is what makes the allocations in this function safe.
    r.check_count(n, ty.min_encoded_size(), "array length")?;
    Ok(match ty {
        GgufValueType::U8 => GgufArray::U8(read_numbers(r, n, u8::from_le_bytes)?),
        GgufValueType::I8 => GgufArray::I8(read_numbers(r, n, i8::from_le_bytes)?),
        GgufValueType::U16 => GgufArray::U16(read_numbers(r, n, u16::from_le_bytes)?),
        GgufValueType::I16 => GgufArray::I16(read_numbers(r, n, i16::from_le_bytes)?),
        GgufValueType::U32 => GgufArray::U32(read_numbers(r, n, u32::from_le_bytes)?),
        GgufValueType::I32 => GgufArray::I32(read_numbers(r, n, i32::from_le_bytes)?),
        GgufValueType::F32 => GgufArray::F32(read_numbers(r, n, f32::from_le_bytes)?),
        GgufValueType::Bool => GgufArray::Bool(read_numbers(r, n, |[b]: [u8; 1]| b != 0)?),
        GgufValueType::U64 => GgufArray::U64(read_numbers(r, n, u64::from_le_bytes)?),
        GgufValueType::I64 => GgufArray::I64(read_numbers(r, n, i64::from_le_bytes)?),
        GgufValueType::F64 => GgufArray::F64(read_numbers(r, n, f64::from_le_bytes)?),
        GgufValueType::String => {
            let mut out = StringArray::with_capacity(n as usize);
            for _ in 0..n {
                r.raw_string_with("array string", |b| out.push_bytes(b))?;
            }
            GgufArray::String(out)
        }
        GgufValueType::Array => {
            if depth + 1 >= MAX_NESTING {
                return Err(GgufError::LimitExceeded {
                    what: "array nesting depth".into(),
                    offset: type_offset,
                    count: u64::from(depth) + 2,
                    limit: u64::from(MAX_NESTING),
                });
            }
            if n > *nested {
                return Err(GgufError::LimitExceeded {
                    what: "total nested array elements".into(),
                    offset: type_offset,
                    count: n,
                    limit: *nested,
                });
            }
            *nested -= n;
            let mut out = Vec::with_capacity(n as usize);
            for _ in 0..n {
                out.push(read_array(r, depth + 1, nested)?);
            }
            GgufArray::Array(out)
        }
    })
}

fn read_tensor_info(r: &mut Input) -> Result<TensorInfo, GgufError> {
    let name = r.string("name")?;
    let bad = |reason: String| GgufError::BadTensor {
        name: shown(&name),
        reason,
    };
    if name.len() >= MAX_TENSOR_NAME {
        return Err(bad(format!(
            "name is {} bytes, llama.cpp allows at most {}",
            name.len(),
            MAX_TENSOR_NAME - 1
        )));
    }
    let n_dims = r.u32("dimension count")?;
    if n_dims == 0 || n_dims > MAX_DIMS {
        return Err(bad(format!(
            "has {n_dims} dimensions, expected 1..={MAX_DIMS}"
        )));
    }
    let mut dims = Vec::with_capacity(n_dims as usize);
    let mut n_elements: u64 = 1;
    for _ in 0..n_dims {
        let d = r.u64("dimension")?;
        // ggml stores dims as int64_t and requires the element count to fit in it.
        n_elements = n_elements
            .checked_mul(d)
            .filter(|&n| n <= i64::MAX as u64 && d <= i64::MAX as u64)
            .ok_or_else(|| bad(format!("shape {dims:?} x {d} overflows")))?;
        dims.push(d);
    }
    let type_id = r.u32("ggml type")?;
    let ggml_type = GgmlType::from_u32(type_id).ok_or_else(|| GgufError::UnknownGgmlType {
        name: shown(&name),
        type_id,
    })?;
    let block = ggml_type.block_size();
    if dims[0] % block != 0 {
        return Err(bad(format!(
            "row length {} is not a multiple of the {ggml_type} block size {block}",
            dims[0]
        )));
    }
    let n_bytes = (n_elements / block)
        .checked_mul(ggml_type.type_size())
        .ok_or_else(|| bad("byte size overflows".into()))?;
    let offset = r.u64("data offset")?;
    Ok(TensorInfo {
        name,
        dims,
        ggml_type,
        offset,
        n_bytes,
    })
}

/// Every tensor aligned, inside the file, disjoint, and packed in table order with
/// alignment padding (the layout gguf.cpp insists on).
fn check_layout(
    tensors: &[TensorInfo],
    alignment: u64,
    data_offset: u64,
    file_size: u64,
) -> Result<(), GgufError> {
    let mut spans = Vec::with_capacity(tensors.len());
    for t in tensors {
        if t.offset % alignment != 0 {
            return Err(GgufError::TensorMisaligned {
                name: shown(&t.name),
                offset: t.offset,
                alignment,
            });
        }
        let out_of_range = |start: u64, end: u64| GgufError::TensorOutOfRange {
            name: shown(&t.name),
            start,
            end,
            file_size,
        };
        let start = data_offset
            .checked_add(t.offset)
            .ok_or_else(|| out_of_range(u64::MAX, u64::MAX))?;
        let end = start
            .checked_add(t.n_bytes)
            .ok_or_else(|| out_of_range(start, u64::MAX))?;
        if end > file_size {
            return Err(out_of_range(start, end));
        }
        spans.push((start, end, t.name.as_str()));
    }
    // Sorted by start, a span overlaps an earlier one iff it starts before the furthest end
    // seen so far. Zero-byte tensors occupy nothing and are skipped.
    spans.sort_unstable();
    let mut furthest: Option<(u64, &str)> = None;
    for &(start, end, name) in &spans {
        if start == end {
            continue;
        }
        match furthest {
            Some((prev_end, prev)) if start < prev_end => {
                return Err(GgufError::TensorOverlap {
                    first: shown(prev),
                    second: shown(name),
                });
            }
            _ => furthest = Some((end, name)),
        }
    }
    let mut expected: u64 = 0;
    for t in tensors {
        if t.offset != expected {
            return Err(GgufError::TensorNotPacked {
                name: shown(&t.name),
                offset: t.offset,
                expected,
            });
        }
        // Cannot overflow: offset + n_bytes <= file_size was checked above.
        expected = (t.offset + t.n_bytes).div_ceil(alignment) * alignment;
    }
    Ok(())
}
