//! The checksum of an object's payload, which proves the bytes read are the bytes written.
//!
//! Objects of format 3 carry XXH3-128 (16 bytes, little-endian, then 16 zero bytes in the
//! header's 32-byte field); those of format 2 carry blake3, and are still read. A checksum
//! here guards against damage (a flipped bit, a torn or truncated file), not against an
//! adversary who can write the store: what names an object is its id, a blake3 chain over
//! its tokens, which a reader recomputes itself ([`super::ObjectId`]). The hash sits on
//! every restore's path, so speed decides: XXH3-128 hashes several times faster than
//! blake3 on one core, and with blake3 a restore spent a large share of its CPU time
//! hashing. twox-hash picks its AVX2 code at run time, where xxhash-rust uses SSE2 unless
//! built for the CPU.

use twox_hash::XxHash3_128;

/// Which checksum an object's header holds (it follows from the format version).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChecksumKind {
    /// Format 2.
    Blake3,
    /// Format 3, what is written.
    Xxh3,
}

/// The header field for `payload`, in one pass.
pub fn checksum(kind: ChecksumKind, payload: &[u8]) -> [u8; 32] {
    match kind {
        ChecksumKind::Blake3 => *blake3::hash(payload).as_bytes(),
        ChecksumKind::Xxh3 => field(XxHash3_128::oneshot(payload)),
    }
}

fn field(digest: u128) -> [u8; 32] {
    let mut out = [0u8; 32];
    out[..16].copy_from_slice(&digest.to_le_bytes());
    out
}

/// A checksum computed part by part, for payloads read in pieces.
pub enum PayloadHasher {
    Blake3(Box<blake3::Hasher>),
    Xxh3(Box<XxHash3_128>),
}

impl PayloadHasher {
    pub fn new(kind: ChecksumKind) -> Self {
        match kind {
            ChecksumKind::Blake3 => Self::Blake3(Box::default()),
            ChecksumKind::Xxh3 => Self::Xxh3(Box::new(XxHash3_128::new())),
        }
    }

    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Self::Blake3(h) => {
                h.update(bytes);
            }
            Self::Xxh3(h) => h.write(bytes),
        }
    }

    /// The header field for everything passed to [`Self::update`].
    pub fn finalize(&self) -> [u8; 32] {
        match self {
            Self::Blake3(h) => *h.finalize().as_bytes(),
            Self::Xxh3(h) => field(h.finish_128()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_hash_as_the_whole_payload_does_and_the_field_ends_in_zeros() {
        let payload: Vec<u8> = (0..1_000_003u32).map(|i| (i % 241) as u8).collect();
        for kind in [ChecksumKind::Blake3, ChecksumKind::Xxh3] {
            let mut hasher = PayloadHasher::new(kind);
            for part in payload.chunks(98_304) {
                hasher.update(part);
            }
            assert_eq!(hasher.finalize(), checksum(kind, &payload), "{kind:?}");
        }
        let field = checksum(ChecksumKind::Xxh3, &payload);
        assert_eq!(field[16..], [0u8; 16]);
        assert_eq!(
            field[..16],
            0x031cf69a6d9ee54582fb782aa52636c8u128.to_le_bytes()
        );
        // One flipped bit changes it.
        let mut flipped = payload.clone();
        flipped[500_000] ^= 0x10;
        assert_ne!(checksum(ChecksumKind::Xxh3, &flipped), field);
    }

    /// XXH3-128 as the reference defines it (the empty input's digest is the reference's
    /// test vector; the others are what stores written with xxhash-rust hold), so objects
    /// written by any version read back.
    #[test]
    fn the_checksum_is_the_reference_xxh3_128() {
        let payload: Vec<u8> = (0..1_000_003u32).map(|i| (i % 241) as u8).collect();
        for (data, digest) in [
            (&b""[..], 0x99aa06d3014798d86001c324468d497fu128),
            (&b"kvrun"[..], 0x3934d29e8c5ef5d20e6dc8ecb4a96ec8),
            (&payload[..], 0x031cf69a6d9ee54582fb782aa52636c8),
        ] {
            assert_eq!(
                checksum(ChecksumKind::Xxh3, data)[..16],
                digest.to_le_bytes()
            );
        }
    }
}
