//! Page identities and the tail record.
//!
//! A page's id is a hash chained over the model fingerprint, the KV settings, the parent
//! page's id and the page's token ids (the prefix-caching scheme of vLLM and LMCache): two
//! sessions whose token prefixes agree name their pages identically, so a page is stored once
//! and found again by a new session that starts the same way.

use crate::store::{IdChain, ObjectId};
use crate::token::TokenId;

use super::KvError;

/// The part of every page id that is not tokens: which model, which KV settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageKey {
    root: ObjectId,
}

impl PageKey {
    /// `kv_settings` is a stable description of everything that changes the KV bytes
    /// (cache type, flash attention, page size, llama.cpp build).
    pub fn new(model_fingerprint: &str, kv_settings: &str) -> Self {
        let root = IdChain::new()
            .part(b"kvrun page chain v1")
            .part(model_fingerprint.as_bytes())
            .part(kv_settings.as_bytes())
            .finish();
        Self { root }
    }

    /// Extends `ids` to name every full page of `tokens` (reusing the ids already there).
    pub fn extend_ids(&self, tokens: &[TokenId], page_tokens: usize, ids: &mut Vec<ObjectId>) {
        let full = tokens.len() / page_tokens;
        while ids.len() < full {
            let i = ids.len();
            let parent = ids.last().copied().unwrap_or(self.root);
            let page: Vec<u32> = tokens[i * page_tokens..(i + 1) * page_tokens]
                .iter()
                .map(|&t| t as u32)
                .collect();
            let id = IdChain::new()
                .part(parent.as_bytes())
                .part_u32s(&page)
                .finish();
            ids.push(id);
        }
    }

    /// The object holding the rows of `tail` (fewer than a page of tokens) after the full
    /// pages `pages`. Chained like a page id, so a tail record is bound to its log and
    /// position: it can only be read as the tail of exactly these tokens.
    pub fn tail_id(&self, pages: &[ObjectId], tail: &[TokenId]) -> ObjectId {
        let parent = pages.last().copied().unwrap_or(self.root);
        let tokens: Vec<u32> = tail.iter().map(|&t| t as u32).collect();
        IdChain::new()
            .part(b"tail")
            .part(parent.as_bytes())
            .part_u32s(&tokens)
            .finish()
    }

    /// The object holding llama.cpp's whole state of a sequence after `tokens` (a memory
    /// kvrun does not page). Bound to every token, so it loads only as the state of exactly
    /// this log.
    pub fn state_id(&self, tokens: &[TokenId]) -> ObjectId {
        let tokens: Vec<u32> = tokens.iter().map(|&t| t as u32).collect();
        IdChain::new()
            .part(b"sequence state")
            .part(self.root.as_bytes())
            .part_u32s(&tokens)
            .finish()
    }

    /// The object holding a recurrent or hybrid sequence's checkpoint right after `page`
    /// ([`crate::sequence::Checkpoints`]): named by the page chain, so sessions whose logs
    /// agree up to that page share it.
    pub fn checkpoint_id(page: &ObjectId) -> ObjectId {
        IdChain::new()
            .part(b"recurrent checkpoint")
            .part(page.as_bytes())
            .finish()
    }

    /// The object holding a page's sliding-window rows.
    pub fn swa_id(page: &ObjectId) -> ObjectId {
        IdChain::new()
            .part(b"swa rows")
            .part(page.as_bytes())
            .finish()
    }
}

/// Rows of the tokens after the last full page: full-attention rows and, for iSWA models,
/// the sliding-window rows of the same tokens. Rewritten at every save (it is small: fewer
/// than one page of tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TailRecord {
    pub n_cells: u32,
    /// The record as read; the rows stay where they were read into (a restore reads it
    /// into a buffer it keeps for the next one, and copies the rows out from there).
    bytes: Vec<u8>,
    base_len: usize,
}

const TAIL_MAGIC: &[u8; 8] = b"KVRTAIL1";
/// Bytes before a tail record's rows: its magic, cell count and full-attention bytes.
pub const TAIL_HEADER: usize = 20;

impl TailRecord {
    /// The record of `n_cells` cells of full-attention rows `base` and window rows `swa`.
    pub fn encode(n_cells: u32, base: &[u8], swa: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(TAIL_HEADER + base.len() + swa.len());
        out.extend_from_slice(TAIL_MAGIC);
        out.extend_from_slice(&n_cells.to_le_bytes());
        out.extend_from_slice(&(base.len() as u64).to_le_bytes());
        out.extend_from_slice(base);
        out.extend_from_slice(swa);
        out
    }

    /// Decodes and checks the sizes against the layout's bytes per token. Takes the bytes
    /// read, and leaves the rows in them.
    pub fn decode(
        bytes: Vec<u8>,
        base_per_cell: usize,
        swa_per_cell: usize,
    ) -> Result<Self, KvError> {
        let (n_cells, base_len) = parse_header(&bytes)?;
        let rest = bytes.len() - TAIL_HEADER;
        let expect_base = (n_cells as usize).checked_mul(base_per_cell);
        let expect_swa = (n_cells as usize).checked_mul(swa_per_cell);
        match (expect_base, expect_swa) {
            (Some(b), Some(s)) if b as u64 == base_len && b.checked_add(s) == Some(rest) => {
                Ok(Self {
                    n_cells,
                    bytes,
                    base_len: b,
                })
            }
            _ => Err(bad("sizes do not match the KV layout")),
        }
    }

    /// Checks a record's header, read apart from its rows (a restore reads the rows straight
    /// into their places): it must hold `n_cells` cells of `base_per_cell` full-attention
    /// bytes. The length of the rest is the reader's to check.
    pub fn check_header(
        header: &[u8],
        n_cells: usize,
        base_per_cell: usize,
    ) -> Result<(), KvError> {
        let (n, base_len) = parse_header(header)?;
        let expect_base = n_cells.checked_mul(base_per_cell);
        match n as usize == n_cells && expect_base.map(|b| b as u64) == Some(base_len) {
            true => Ok(()),
            false => Err(bad("its cell count or sizes do not match the restore")),
        }
    }

    /// The full-attention rows, layer block after layer block (as a page's are).
    pub fn base(&self) -> &[u8] {
        &self.bytes[TAIL_HEADER..TAIL_HEADER + self.base_len]
    }

    /// The sliding-window rows (empty without a window).
    pub fn swa(&self) -> &[u8] {
        &self.bytes[TAIL_HEADER + self.base_len..]
    }

    /// The buffer it was read into.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

fn bad(what: &str) -> KvError {
    KvError::Record(format!("tail record: {what}"))
}

/// A record's cell count and full-attention bytes, from its first [`TAIL_HEADER`] bytes.
fn parse_header(bytes: &[u8]) -> Result<(u32, u64), KvError> {
    if bytes.len() < TAIL_HEADER || &bytes[..8] != TAIL_MAGIC {
        return Err(bad("bad magic"));
    }
    let n_cells = u32::from_le_bytes(bytes[8..12].try_into().map_err(|_| bad("header"))?);
    let base_len = u64::from_le_bytes(bytes[12..20].try_into().map_err(|_| bad("header"))?);
    Ok((n_cells, base_len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_ids_chain_over_the_prefix() {
        let key = PageKey::new("model", "f16");
        let a: Vec<TokenId> = (0..40).collect();
        let mut b = a.clone();
        b[25] = 999;
        let (mut ia, mut ib) = (Vec::new(), Vec::new());
        key.extend_ids(&a, 10, &mut ia);
        key.extend_ids(&b, 10, &mut ib);
        assert_eq!(ia.len(), 4);
        assert_eq!(ia[..2], ib[..2]);
        // A change in page 2 changes it and every page after it.
        assert_ne!(ia[2], ib[2]);
        assert_ne!(ia[3], ib[3]);
        // Another model or setting names every page differently.
        let mut ic = Vec::new();
        PageKey::new("model", "q8_0").extend_ids(&a, 10, &mut ic);
        assert_ne!(ia[0], ic[0]);
        assert_ne!(PageKey::swa_id(&ia[0]), ia[0]);
        // A tail is bound to its parent page and its tokens.
        let tail = key.tail_id(&ia[..2], &a[20..25]);
        assert_eq!(tail, key.tail_id(&ib[..2], &b[20..25]));
        assert_ne!(tail, key.tail_id(&ia[..2], &a[20..24]));
        assert_ne!(tail, key.tail_id(&ia[..1], &a[20..25]));
        assert_ne!(key.tail_id(&[], &[]), key.tail_id(&ia[..1], &[]));
        assert!(!ia.contains(&tail));
    }

    #[test]
    fn tail_round_trip_and_size_checks() {
        let bytes = TailRecord::encode(3, &[1; 12], &[2; 6]);
        let tail = TailRecord::decode(bytes.clone(), 4, 2).unwrap();
        assert_eq!(
            (tail.n_cells, tail.base(), tail.swa()),
            (3, &[1; 12][..], &[2; 6][..])
        );
        assert!(TailRecord::decode(bytes.clone(), 4, 3).is_err());
        assert!(TailRecord::decode(bytes[..bytes.len() - 1].to_vec(), 4, 2).is_err());
        for cut in 0..20 {
            assert!(TailRecord::decode(bytes[..cut].to_vec(), 4, 2).is_err());
        }
        // The header alone, as a restore reads it apart from the rows.
        let header = &bytes[..TAIL_HEADER];
        assert!(TailRecord::check_header(header, 3, 4).is_ok());
        assert!(TailRecord::check_header(header, 2, 4).is_err());
        assert!(TailRecord::check_header(header, 3, 5).is_err());
        assert!(TailRecord::check_header(&header[..19], 3, 4).is_err());
        let mut other = header.to_vec();
        other[0] ^= 1;
        assert!(TailRecord::check_header(&other, 3, 4).is_err());
    }
}
