//! Object ids: 32-byte blake3 digests, shown and parsed as 64 lowercase hex characters.

use std::fmt;
use std::str::FromStr;

/// A string that is not an object id.
#[derive(Debug, thiserror::Error)]
#[error("invalid object id {input:?}: expected 64 hex characters")]
pub struct InvalidId {
    pub input: String,
}

/// Identity of one stored object. Ids are part of the on-disk contract: a change in how they
/// are derived orphans every cached page (they are then collected by gc, not misread).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(pub [u8; 32]);

impl ObjectId {
    pub const LEN: usize = 32;

    /// The id of raw content: `blake3(bytes)`.
    pub fn hash_of(bytes: &[u8]) -> Self {
        Self(*blake3::hash(bytes).as_bytes())
    }

    /// Hash of a sequence of byte strings, each length-prefixed so that the split between
    /// parts matters (`["ab", "c"]` and `["a", "bc"]` differ). Meant for derived ids such as
    /// a page id = chain(model fingerprint, kv settings, parent id, token ids). For many or
    /// typed parts use [`IdChain`] directly; `chain(parts)` equals feeding each part to it.
    pub fn chain(parts: &[&[u8]]) -> Self {
        let mut chain = IdChain::new();
        for part in parts {
            chain.part(part);
        }
        chain.finish()
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// Parses 64 hex characters (either case).
    pub fn from_hex(text: &str) -> Result<Self, InvalidId> {
        let mut out = [0u8; 32];
        hex::decode_to_slice(text, &mut out).map_err(|_| InvalidId {
            input: text.chars().take(80).collect(),
        })?;
        Ok(Self(out))
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

impl fmt::Debug for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ObjectId({self})")
    }
}

/// Ids travel in manifests as hex strings.
impl serde::Serialize for ObjectId {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_hex())
    }
}

impl<'de> serde::Deserialize<'de> for ObjectId {
    fn deserialize<D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::from_hex(&text).map_err(serde::de::Error::custom)
    }
}

impl FromStr for ObjectId {
    type Err = InvalidId;
    fn from_str(s: &str) -> Result<Self, InvalidId> {
        Self::from_hex(s)
    }
}

/// Key-derivation context for [`IdChain`]. Keeps derived ids in a different domain from
/// [`ObjectId::hash_of`], so no chain of parts can collide with the hash of some raw bytes.
/// Changing this string changes every derived id (see the golden test).
const CHAIN_CONTEXT: &str = "kvrun object-id chain v1";

/// Incremental builder behind [`ObjectId::chain`]. Each part is encoded as its byte length
/// (u64 little-endian) followed by its bytes; that encoding is prefix-free, so distinct part
/// sequences never hash the same input.
#[derive(Clone)]
pub struct IdChain {
    hasher: blake3::Hasher,
}

impl IdChain {
    pub fn new() -> Self {
        Self {
            hasher: blake3::Hasher::new_derive_key(CHAIN_CONTEXT),
        }
    }

    /// Adds one part.
    pub fn part(&mut self, bytes: &[u8]) -> &mut Self {
        self.hasher.update(&(bytes.len() as u64).to_le_bytes());
        self.hasher.update(bytes);
        self
    }

    /// Adds one part made of `u32` values (token ids) as little-endian bytes, without the
    /// caller allocating a byte copy. Same id as `part` on the concatenated LE bytes.
    pub fn part_u32s(&mut self, values: &[u32]) -> &mut Self {
        self.hasher
            .update(&((values.len() * 4) as u64).to_le_bytes());
        // Batched through a stack buffer: one hasher call per 1 KiB, not per token.
        let mut buf = [0u8; 1024];
        for chunk in values.chunks(buf.len() / 4) {
            for (dst, v) in buf.chunks_exact_mut(4).zip(chunk) {
                dst.copy_from_slice(&v.to_le_bytes());
            }
            self.hasher.update(&buf[..chunk.len() * 4]);
        }
        self
    }

    pub fn finish(&self) -> ObjectId {
        ObjectId(*self.hasher.finalize().as_bytes())
    }
}

impl Default for IdChain {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trip_and_display() {
        let id = ObjectId::hash_of(b"hello");
        let text = id.to_string();
        assert_eq!(text.len(), 64);
        assert_eq!(text, blake3::hash(b"hello").to_hex().as_str());
        assert_eq!(text.parse::<ObjectId>().unwrap(), id);
        assert_eq!(ObjectId::from_hex(&text.to_uppercase()).unwrap(), id);
        assert_eq!(format!("{id:?}"), format!("ObjectId({text})"));
    }

    #[test]
    fn bad_hex_is_rejected() {
        for bad in ["", "abc", &"g".repeat(64), &"a".repeat(66)] {
            let err = ObjectId::from_hex(bad).unwrap_err();
            assert_eq!(err.input, bad);
            assert!(err.to_string().contains("expected 64 hex characters"));
        }
    }

    #[test]
    fn chain_depends_on_part_boundaries_and_domain() {
        let a = ObjectId::chain(&[b"ab", b"c"]);
        let b = ObjectId::chain(&[b"a", b"bc"]);
        let c = ObjectId::chain(&[b"abc"]);
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_ne!(b, c);
        assert_ne!(ObjectId::chain(&[]), ObjectId::chain(&[b""]));
        assert_ne!(c, ObjectId::hash_of(b"abc"));
        assert_eq!(a, ObjectId::chain(&[b"ab", b"c"]));
    }

    #[test]
    fn part_u32s_matches_le_bytes() {
        let tokens: Vec<u32> = (0..1000).map(|i| i * 7919 + 3).collect();
        let bytes: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        let parent = ObjectId::hash_of(b"parent");
        let via_u32 = IdChain::new()
            .part(b"model")
            .part(parent.as_bytes())
            .part_u32s(&tokens)
            .finish();
        let via_bytes = ObjectId::chain(&[b"model", parent.as_bytes(), &bytes]);
        assert_eq!(via_u32, via_bytes);
        assert_eq!(
            IdChain::new().part_u32s(&[]).finish(),
            ObjectId::chain(&[b""])
        );
    }

    #[test]
    fn chain_golden_value_is_stable() {
        // On-disk contract: if this changes, every existing cache is orphaned.
        let id = ObjectId::chain(&[b"model", b"settings", &[0u8; 32], &[1, 0, 0, 0]]);
        assert_eq!(id.to_string(), GOLDEN);
    }

    const GOLDEN: &str = "8297eadf5017c3992b8931b14cc2a31ce3c6ac49c8e7a1b9cb14b93bae5d2e83";
}
