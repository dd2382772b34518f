//! Bounded, buffered, hashing byte source for header parsing.
//!
//! Every read is checked against the bytes actually left in the file (and against a header
//! size cap) before anything is allocated, so a corrupt count can never cause a huge
//! allocation. Consumed bytes are fed to blake3 in large slices as the buffer is recycled,
//! which gives the header fingerprint for free in the same single pass.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::error::GgufError;

/// Refuse headers (metadata + tensor table) larger than this. Real models are far below
/// it (Gemma 3's 262k-token vocabulary is ~6 MB); the cap bounds memory for crafted files.
pub const MAX_HEADER_BYTES: u64 = 256 << 20;

const BUF_SIZE: usize = 256 << 10;

pub(crate) struct Input {
    /// The file (or, in tests, a byte buffer) being parsed.
    src: Box<dyn Read>,
    buf: Vec<u8>,
    /// Next unread byte in `buf`.
    start: usize,
    /// End of the valid bytes in `buf`.
    end: usize,
    /// Bytes of `buf` already fed to the hasher (always <= `start`).
    hashed: usize,
    /// File offset of `buf[0]`.
    buf_offset: u64,
    file_size: u64,
    hasher: blake3::Hasher,
}

impl Input {
    /// Opens a regular file. Anything else is refused before it is opened: opening a FIFO
    /// blocks until a writer appears, and a device has no meaningful size.
    pub fn open(path: &Path) -> Result<Self, GgufError> {
        let not_regular = || GgufError::NotRegularFile;
        if !std::fs::metadata(path)?.is_file() {
            return Err(not_regular());
        }
        let file = File::open(path)?;
        let meta = file.metadata()?;
        // Checked again on the open file, in case the path was swapped in between.
        if !meta.is_file() {
            return Err(not_regular());
        }
        Ok(Self::new(Box::new(file), meta.len()))
    }

    /// `src` must yield exactly `file_size` bytes.
    pub fn new(src: Box<dyn Read>, file_size: u64) -> Self {
        Self {
            src,
            buf: vec![0; BUF_SIZE],
            start: 0,
            end: 0,
            hashed: 0,
            buf_offset: 0,
            file_size,
            hasher: blake3::Hasher::new(),
        }
    }

    pub fn file_size(&self) -> u64 {
        self.file_size
    }

    pub fn pos(&self) -> u64 {
        self.buf_offset + self.start as u64
    }

    /// Bytes that may still be read as header.
    pub fn remaining(&self) -> u64 {
        self.file_size
            .min(MAX_HEADER_BYTES)
            .saturating_sub(self.pos())
    }

    /// Error for a read of `n` bytes that does not fit: truncation if the file is too short,
    /// otherwise the header cap.
    fn short(&self, n: u64, what: &str) -> GgufError {
        let pos = self.pos();
        if pos.saturating_add(n) > self.file_size {
            GgufError::Truncated {
                what: what.to_string(),
                offset: pos,
            }
        } else {
            GgufError::HeaderTooLarge {
                what: what.to_string(),
                offset: pos,
                limit: MAX_HEADER_BYTES,
            }
        }
    }

    /// Reject a count of items, each at least `min_size` bytes, that cannot fit in what is
    /// left. Called before any allocation sized by `count`.
    pub fn check_count(&self, count: u64, min_size: u64, what: &str) -> Result<(), GgufError> {
        let need = count.saturating_mul(min_size);
        if need <= self.remaining() {
            return Ok(());
        }
        let pos = self.pos();
        if pos.saturating_add(need) <= self.file_size {
            return Err(self.short(need, what));
        }
        Err(GgufError::LengthOutOfRange {
            what: what.to_string(),
            offset: pos,
            count,
            remaining: self.file_size.saturating_sub(pos),
        })
    }

    /// Make at least `need` (<= BUF_SIZE) unread bytes available in `buf`.
    fn fill(&mut self, need: usize, what: &str) -> Result<(), GgufError> {
        // Recycle the consumed prefix; hash it first since it leaves the buffer.
        self.hasher.update(&self.buf[self.hashed..self.start]);
        self.buf.copy_within(self.start..self.end, 0);
        self.buf_offset += self.start as u64;
        self.end -= self.start;
        self.start = 0;
        self.hashed = 0;
        while self.end < need {
            match self.src.read(&mut self.buf[self.end..]) {
                // The size check passed, so EOF here means the file shrank under us.
                Ok(0) => return Err(self.short(need as u64, what)),
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    pub fn fixed<const N: usize>(&mut self, what: &str) -> Result<[u8; N], GgufError> {
        if (N as u64) > self.remaining() {
            return Err(self.short(N as u64, what));
        }
        if self.end - self.start < N {
            self.fill(N, what)?;
        }
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.start..self.start + N]);
        self.start += N;
        Ok(out)
    }

    pub fn u8(&mut self, what: &str) -> Result<u8, GgufError> {
        Ok(self.fixed::<1>(what)?[0])
    }

    pub fn u32(&mut self, what: &str) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.fixed(what)?))
    }

    pub fn u64(&mut self, what: &str) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.fixed(what)?))
    }

    /// Read `n` bytes (already checked by the caller or checked here) and hand them to `f`
    /// without copying when they fit in the buffer.
    pub fn with_bytes<R>(
        &mut self,
        n: u64,
        what: &str,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, GgufError> {
        if n > self.remaining() {
            return Err(self.short(n, what));
        }
        // n <= MAX_HEADER_BYTES, so it fits in usize on every supported target.
        let n = usize::try_from(n).map_err(|_| self.short(n, what))?;
        if n <= BUF_SIZE {
            if self.end - self.start < n {
                self.fill(n, what)?;
            }
            let out = f(&self.buf[self.start..self.start + n]);
            self.start += n;
            return Ok(out);
        }
        let mut tmp = vec![0u8; n];
        let mut done = 0;
        while done < n {
            if self.start == self.end {
                self.fill(1, what)?;
            }
            let k = (n - done).min(self.end - self.start);
            tmp[done..done + k].copy_from_slice(&self.buf[self.start..self.start + k]);
            self.start += k;
            done += k;
        }
        Ok(f(&tmp))
    }

    /// A GGUF string: u64 length + bytes. Invalid UTF-8 is replaced rather than rejected,
    /// because llama.cpp accepts arbitrary bytes (some vocabularies contain them).
    pub fn string_with<R>(
        &mut self,
        what: &str,
        f: impl FnOnce(&str) -> R,
    ) -> Result<R, GgufError> {
        self.raw_string_with(what, |b| f(&String::from_utf8_lossy(b)))
    }

    /// A GGUF string as the bytes in the file.
    pub fn raw_string_with<R>(
        &mut self,
        what: &str,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, GgufError> {
        let len = self.u64(what)?;
        self.check_count(len, 1, what)?;
        self.with_bytes(len, what, f)
    }

    pub fn string(&mut self, what: &str) -> Result<String, GgufError> {
        self.string_with(what, |s| s.to_string())
    }

    /// Hash of every byte consumed so far, plus the file size.
    pub fn finish_hash(&mut self) -> String {
        self.hasher.update(&self.buf[self.hashed..self.start]);
        self.hashed = self.start;
        let mut h = self.hasher.clone();
        h.update(&self.file_size.to_le_bytes());
        h.finalize().to_hex().to_string()
    }
}
