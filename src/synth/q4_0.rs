//! Random Q4_0 weights, streamed: benchmark models of a real model's size (gigabytes) are
//! written block by block, never held in memory.
//!
//! A Q4_0 block (ggml-common.h `block_q4_0`) holds 32 weights in 18 bytes: an f16 scale `d`,
//! then 16 bytes of 4-bit quants, element `j` in the low nibble of byte `j` and element
//! `j + 16` in its high nibble; weight = (quant - 8) * d.

use std::io::{self, Write};

use super::rng::SplitMix64;
use super::writer::GgufWriter;
use crate::gguf::GgmlType;

/// Weights per block.
pub const BLOCK: u32 = 32;
/// Bytes per block.
pub const BLOCK_BYTES: usize = 18;

/// One block: scale `d`, then the 32 quants (each 0..16) packed two per byte.
pub fn encode_block(d: half::f16, quants: &[u8; BLOCK as usize]) -> [u8; BLOCK_BYTES] {
    let mut block = [0u8; BLOCK_BYTES];
    block[..2].copy_from_slice(&d.to_le_bytes());
    for j in 0..16 {
        block[2 + j] = (quants[j] & 0x0f) | (quants[j + 16] << 4);
    }
    block
}

/// Adds an `[ne0, ne1]` matrix of random Q4_0 weights whose values, like the F16 tiny
/// model's, stay within about ±1/sqrt(ne0) (the fan-in), so activations keep a sane scale.
/// `ne0` must be a multiple of 32 (the writer checks the shape).
pub fn add_random_matrix(w: &mut GgufWriter, name: String, ne0: u32, ne1: u32, seed: u64) {
    let blocks = u64::from(ne0 / BLOCK) * u64::from(ne1);
    // Quants span -8..=7 steps of d.
    let d = half::f16::from_f32(1.0 / (8.0 * (ne0 as f32).sqrt()));
    w.add_tensor_streamed(
        name,
        &[ne0.into(), ne1.into()],
        GgmlType::Q4_0,
        blocks * BLOCK_BYTES as u64,
        Box::new(move |out: &mut dyn Write| write_random_blocks(out, blocks, d, seed)),
    );
}

/// `blocks` random blocks of scale `d`, through a buffer of about a megabyte.
fn write_random_blocks(
    out: &mut dyn Write,
    blocks: u64,
    d: half::f16,
    seed: u64,
) -> io::Result<()> {
    const PER_CHUNK: u64 = 1 << 16;
    let mut rng = SplitMix64(seed);
    let mut chunk = Vec::with_capacity(PER_CHUNK as usize * BLOCK_BYTES);
    let mut left = blocks;
    while left > 0 {
        let n = left.min(PER_CHUNK);
        chunk.clear();
        for _ in 0..n {
            let mut quants = [0u8; BLOCK as usize];
            for pair in quants.chunks_exact_mut(16) {
                let bits = rng.next_u64();
                for (k, q) in pair.iter_mut().enumerate() {
                    *q = ((bits >> (4 * k)) & 0x0f) as u8;
                }
            }
            chunk.extend_from_slice(&encode_block(d, &quants));
        }
        out.write_all(&chunk)?;
        left -= n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// ggml's `dequantize_row_q4_0`, transcribed: the reference the encoding must match.
    fn dequantize(block: &[u8; BLOCK_BYTES]) -> [f32; BLOCK as usize] {
        let d = half::f16::from_le_bytes([block[0], block[1]]).to_f32();
        let mut y = [0f32; BLOCK as usize];
        for j in 0..16 {
            y[j] = ((block[2 + j] & 0x0f) as i32 - 8) as f32 * d;
            y[j + 16] = ((block[2 + j] >> 4) as i32 - 8) as f32 * d;
        }
        y
    }

    #[test]
    fn a_block_dequantizes_to_its_quants_times_the_scale() {
        let quants: [u8; 32] = std::array::from_fn(|i| (i * 7 % 16) as u8);
        let d = half::f16::from_f32(0.25);
        let block = encode_block(d, &quants);
        assert_eq!(&block[..2], &d.to_le_bytes());
        let y = dequantize(&block);
        for (i, &q) in quants.iter().enumerate() {
            assert_eq!(y[i], (q as f32 - 8.0) * 0.25, "element {i}");
        }
    }

    #[test]
    fn random_blocks_have_the_given_finite_scale_and_exact_length() {
        let d = half::f16::from_f32(1.0 / (8.0 * 64f32.sqrt()));
        let mut out = Vec::new();
        // More than one chunk, and not a whole number of them.
        let blocks = (1 << 16) + 3;
        write_random_blocks(&mut out, blocks, d, 7).unwrap();
        assert_eq!(out.len() as u64, blocks * BLOCK_BYTES as u64);
        let mut seen = [false; 16];
        for block in out.chunks_exact(BLOCK_BYTES) {
            assert_eq!(&block[..2], &d.to_le_bytes());
            let y = dequantize(block.try_into().unwrap());
            assert!(y
                .iter()
                .all(|v| v.is_finite() && v.abs() <= 8.0 * d.to_f32()));
            for b in &block[2..] {
                seen[(b & 0x0f) as usize] = true;
                seen[(b >> 4) as usize] = true;
            }
        }
        assert!(seen.iter().all(|&s| s), "every quant value occurs");
        // Deterministic: the same seed gives the same bytes.
        let mut again = Vec::new();
        write_random_blocks(&mut again, blocks, d, 7).unwrap();
        assert_eq!(out, again);
    }
}
