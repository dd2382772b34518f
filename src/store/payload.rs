//! Reading an object's payload in parts, straight into the places a caller needs them (a
//! restore puts each layer's rows of a page where the KV state blob wants them), so the
//! bytes are copied once, from the page cache to their destination. The checks are those of
//! [`ObjectStore::read_into`]: header, binding, length, and the checksum of the whole payload,
//! computed part by part while each part is still in the CPU's cache.

use std::fs::File;
use std::io::{self, Read};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::fs::{fadvise, Advice};

use super::checksum::PayloadHasher;
use super::fsutil::io_err;
use super::object::Header;
use super::{ObjectId, ObjectKind, ObjectStore, Result, StoreError};

/// Where the next bytes of a payload go: into a caller's buffer, or (still hashed) nowhere.
pub enum PayloadPart<'a> {
    Into(&'a mut [u8]),
    Skip(usize),
}

impl PayloadPart<'_> {
    pub fn len(&self) -> usize {
        match self {
            PayloadPart::Into(buf) => buf.len(),
            PayloadPart::Skip(n) => *n,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// An object whose header checked out, open for reading its payload.
pub struct PayloadReader {
    file: File,
    path: PathBuf,
    header: Header,
}

/// Skipped bytes are read (and hashed) through a buffer of at most this size.
const SKIP_CHUNK: usize = 1 << 20;

impl ObjectStore {
    /// Opens `id` for [`PayloadReader::read_parts`] (header and binding checked), and
    /// tells the kernel the file is read front to back, which doubles its read-ahead.
    ///
    /// Nothing asks for the whole file up front (`POSIX_FADV_WILLNEED`): the kernel then
    /// fills the page cache in 4 KiB pages, where a read's own read-ahead uses large folios,
    /// and on this project's 2-core test VM that hint cost as much CPU as the read itself.
    /// A restore without it took 16/47/91 ms for SmolLM2's 1k/4k/8k-token sessions against
    /// 19/57/109 ms with it, the reading threads overlapping the disk well enough.
    pub fn open_payload(&self, id: &ObjectId) -> Result<PayloadReader> {
        let (file, header) = self.open_checked(id)?;
        // A hint only: a filesystem that ignores it reads the same bytes.
        let _ = fadvise(&file, 0, None, Advice::Sequential);
        Ok(PayloadReader {
            file,
            path: self.object_path(id),
            header,
        })
    }
}

impl PayloadReader {
    /// Payload bytes, as the header states and the file's length confirms.
    pub fn len(&self) -> u64 {
        self.header.payload_len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Reads the payload into `parts`, in order, and checks its checksum; the parts' lengths
    /// must add up to [`Self::len`]. Time spent hashing is added to `hashing`. After an
    /// error the parts hold unverified bytes, which the caller must not use.
    pub fn read_parts(
        mut self,
        parts: &mut [PayloadPart<'_>],
        hashing: &mut Duration,
    ) -> Result<ObjectKind> {
        let id = self.header.id;
        let corrupt = |detail: String| StoreError::Corrupt { id, detail };
        let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
        if total != self.len() {
            return Err(corrupt(format!(
                "payload is {} bytes, the reader expects {total}",
                self.len()
            )));
        }
        let mut hasher = PayloadHasher::new(self.header.checksum_kind);
        let mut scratch = Vec::new();
        for part in parts.iter_mut() {
            match part {
                PayloadPart::Into(buf) => {
                    self.read_exact(buf)?;
                    let started = Instant::now();
                    hasher.update(buf);
                    *hashing += started.elapsed();
                }
                PayloadPart::Skip(n) => {
                    let mut left = *n;
                    scratch.resize(left.min(SKIP_CHUNK), 0);
                    while left > 0 {
                        let chunk = &mut scratch[..left.min(SKIP_CHUNK)];
                        self.read_exact(chunk)?;
                        let started = Instant::now();
                        hasher.update(chunk);
                        *hashing += started.elapsed();
                        left -= chunk.len();
                    }
                }
            }
        }
        if hasher.finalize() != self.header.checksum {
            return Err(corrupt("payload checksum mismatch".to_string()));
        }
        Ok(self.header.kind)
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<()> {
        match self.file.read_exact(buf) {
            Ok(()) => Ok(()),
            // The length was checked at open: the file shrank since.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Err(StoreError::Corrupt {
                id: self.header.id,
                detail: format!(
                    "the file ends before the {} payload bytes its header names",
                    self.len()
                ),
            }),
            Err(e) => Err(io_err(&self.path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::object::HEADER_LEN;

    fn store_with(payload: &[u8]) -> (tempfile::TempDir, ObjectStore, ObjectId) {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let id = ObjectId([7; 32]);
        store.put(&id, ObjectKind::Page, payload).unwrap();
        (dir, store, id)
    }

    #[test]
    fn parts_receive_the_payload_in_order_and_skips_are_still_verified() {
        let payload: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let (_dir, store, id) = store_with(&payload);
        let (mut a, mut b) = (vec![0u8; 1000], vec![0u8; 500_000]);
        let skip = payload.len() - a.len() - b.len();
        let reader = store.open_payload(&id).unwrap();
        assert_eq!(reader.len(), payload.len() as u64);
        let mut parts = [
            PayloadPart::Into(&mut a),
            PayloadPart::Skip(skip),
            PayloadPart::Into(&mut b),
        ];
        let mut hashing = Duration::ZERO;
        let kind = reader.read_parts(&mut parts, &mut hashing).unwrap();
        assert_eq!(kind, ObjectKind::Page);
        assert_eq!(a, payload[..1000]);
        assert_eq!(b, payload[1000 + skip..]);

        // A flip inside the skipped bytes is caught too.
        let path = store.object_path(&id);
        let mut file = std::fs::read(&path).unwrap();
        file[HEADER_LEN + 1000 + skip / 2] ^= 1;
        std::fs::write(&path, file).unwrap();
        let mut parts = [
            PayloadPart::Into(&mut a),
            PayloadPart::Skip(skip),
            PayloadPart::Into(&mut b),
        ];
        let err = store
            .open_payload(&id)
            .unwrap()
            .read_parts(&mut parts, &mut hashing)
            .unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    #[test]
    fn parts_of_the_wrong_total_length_are_refused() {
        let (_dir, store, id) = store_with(&[1u8; 100]);
        let mut buf = vec![0u8; 99];
        let err = store
            .open_payload(&id)
            .unwrap()
            .read_parts(&mut [PayloadPart::Into(&mut buf)], &mut Duration::default())
            .unwrap_err();
        assert!(err.to_string().contains("expects 99"), "{err}");
    }
}
