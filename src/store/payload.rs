//! Reading an object's payload in parts, straight into the places a caller needs them (a
//! restore puts each layer's rows of a page where the KV state blob wants them), so the
//! bytes are copied once, from the page cache to their destination. The checks are those of
//! [`ObjectStore::read_into`]: header, binding, length, and the checksum of the whole payload,
//! computed part by part while each part is still in the CPU's cache.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rustix::fs::{fadvise, Advice};

use super::checksum::PayloadHasher;
use super::fsutil::{io_err, open_regular};
use super::object::{Header, HEADER_LEN};
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
    /// and on a machine with few cores that hint cost as much CPU as the read itself, while
    /// the reading threads overlap the disk well enough without it.
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
    /// must add up to [`Self::len`]. The payload is cut into `threads` ranges of about equal
    /// size, read at once, one thread each: for a large object, which a single reader would
    /// leave the disk and the other cores waiting on (parts that skip bytes are read by one
    /// thread, which hashes them as it goes). Each thread hands every part to `prepare`
    /// just before reading into it (a caller faults fresh memory in there, in parallel).
    /// The first range is read and hashed on this thread while the others are still
    /// reading; the rest are hashed in order as they arrive, so every byte is checked once.
    /// Time spent hashing is added to `hashing`. After an error the parts hold unverified
    /// bytes, which the caller must not use.
    pub fn read_parts(
        self,
        parts: Vec<PayloadPart<'_>>,
        threads: usize,
        prepare: impl Fn(&mut [u8]) + Sync,
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
        let skips = parts.iter().any(|p| matches!(p, PayloadPart::Skip(_)));
        let threads = if skips { 1 } else { threads.max(1) };
        let mut hasher = PayloadHasher::new(self.header.checksum_kind);
        let mut hash = |bytes: &[u8]| {
            let started = Instant::now();
            hasher.update(bytes);
            *hashing += started.elapsed();
        };
        let (this, prepare) = (&self, &prepare);
        std::thread::scope(|scope| {
            let mut ranges = split_parts(parts, threads).into_iter();
            let first = ranges.next();
            let others: Vec<_> = ranges
                .map(|(at, mut parts)| {
                    scope.spawn(move || {
                        let file = this.reopen()?;
                        this.read_range(&file, at, &mut parts, prepare, &mut |_: &[u8]| {})?;
                        Ok::<_, StoreError>(parts)
                    })
                })
                .collect();
            if let Some((at, mut parts)) = first {
                this.read_range(&this.file, at, &mut parts, prepare, &mut hash)?;
            }
            for other in others {
                // A reader only panics on a bug; its range then reads as unusable.
                let parts = other
                    .join()
                    .unwrap_or_else(|_| Err(corrupt("a reading thread failed".to_string())))?;
                for part in &parts {
                    if let PayloadPart::Into(buf) = part {
                        hash(buf);
                    }
                }
            }
            Ok::<(), StoreError>(())
        })?;
        if hasher.finalize() != self.header.checksum {
            return Err(corrupt("payload checksum mismatch".to_string()));
        }
        Ok(self.header.kind)
    }

    /// Reads the payload bytes from `at` on into `parts`, handing each byte read to `hash`
    /// (skipped bytes too, through a small buffer).
    fn read_range(
        &self,
        file: &File,
        mut at: usize,
        parts: &mut [PayloadPart<'_>],
        prepare: &(impl Fn(&mut [u8]) + Sync),
        hash: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        let mut scratch = Vec::new();
        for part in parts.iter_mut() {
            match part {
                PayloadPart::Into(buf) => {
                    prepare(buf);
                    self.read_exact_at(file, buf, at)?;
                    hash(buf);
                    at += buf.len();
                }
                PayloadPart::Skip(n) => {
                    let mut left = *n;
                    scratch.resize(left.min(SKIP_CHUNK), 0);
                    while left > 0 {
                        let chunk = &mut scratch[..left.min(SKIP_CHUNK)];
                        self.read_exact_at(file, chunk, at)?;
                        hash(chunk);
                        at += chunk.len();
                        left -= chunk.len();
                    }
                }
            }
        }
        Ok(())
    }

    /// The object's file opened again, as [`ObjectStore::open_payload`] opens it: a range
    /// read on another thread needs a file of its own, since readers sharing one share its
    /// read-ahead state, which their interleaved offsets confuse. A file put at the path
    /// since (a rewrite of a damaged object) holds the same payload or fails the checksum.
    fn reopen(&self) -> Result<File> {
        let (file, file_len) = open_regular(&self.path).map_err(|e| io_err(&self.path, e))?;
        if file_len != HEADER_LEN as u64 + self.len() {
            return Err(StoreError::Corrupt {
                id: self.header.id,
                detail: format!("its file changed length to {file_len} bytes during a read"),
            });
        }
        // The same hint as the first open: this range too is read front to back.
        let _ = fadvise(&file, 0, None, Advice::Sequential);
        Ok(file)
    }

    /// Reads payload bytes `at..at + buf.len()`.
    fn read_exact_at(&self, file: &File, buf: &mut [u8], at: usize) -> Result<()> {
        file.read_exact_at(buf, (HEADER_LEN + at) as u64)
            .map_err(|e| self.read_error(e))
    }

    fn read_error(&self, e: io::Error) -> StoreError {
        match e.kind() {
            // The length was checked at open: the file shrank since.
            io::ErrorKind::UnexpectedEof => StoreError::Corrupt {
                id: self.header.id,
                detail: format!(
                    "the file ends before the {} payload bytes its header names",
                    self.len()
                ),
            },
            _ => io_err(&self.path, e),
        }
    }
}

/// `parts` cut into at most `n` runs of about equal bytes, each with the payload offset it
/// starts at: a part that straddles a cut is split there.
fn split_parts(parts: Vec<PayloadPart<'_>>, n: usize) -> Vec<(usize, Vec<PayloadPart<'_>>)> {
    let total: usize = parts.iter().map(PayloadPart::len).sum();
    let per = total.div_ceil(n.max(1)).max(1);
    let mut runs = Vec::new();
    let (mut run, mut run_at, mut at) = (Vec::new(), 0, 0);
    for mut part in parts {
        loop {
            let room = per - (at - run_at);
            if part.len() <= room {
                at += part.len();
                run.push(part);
                break;
            }
            let (head, rest) = match part {
                PayloadPart::Into(buf) => {
                    let (head, rest) = buf.split_at_mut(room);
                    (PayloadPart::Into(head), PayloadPart::Into(rest))
                }
                PayloadPart::Skip(k) => (PayloadPart::Skip(room), PayloadPart::Skip(k - room)),
            };
            run.push(head);
            at += room;
            runs.push((run_at, std::mem::take(&mut run)));
            run_at = at;
            part = rest;
        }
    }
    if !run.is_empty() {
        runs.push((run_at, run));
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let parts = vec![
            PayloadPart::Into(&mut a),
            PayloadPart::Skip(skip),
            PayloadPart::Into(&mut b),
        ];
        let mut hashing = Duration::ZERO;
        // Skipped bytes are hashed in order, so these parts are read by one thread.
        let kind = reader.read_parts(parts, 4, |_| {}, &mut hashing).unwrap();
        assert_eq!(kind, ObjectKind::Page);
        assert_eq!(a, payload[..1000]);
        assert_eq!(b, payload[1000 + skip..]);

        // A flip inside the skipped bytes is caught too.
        let path = store.object_path(&id);
        let mut file = std::fs::read(&path).unwrap();
        file[HEADER_LEN + 1000 + skip / 2] ^= 1;
        std::fs::write(&path, file).unwrap();
        let parts = vec![
            PayloadPart::Into(&mut a),
            PayloadPart::Skip(skip),
            PayloadPart::Into(&mut b),
        ];
        let err = store
            .open_payload(&id)
            .unwrap()
            .read_parts(parts, 4, |_| {}, &mut hashing)
            .unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    #[test]
    fn a_split_read_returns_the_payload_and_checks_every_range() {
        let payload: Vec<u8> = (0..3_000_001u32).map(|i| (i % 253) as u8).collect();
        let (_dir, store, id) = store_with(&payload);
        let mut hashing = Duration::ZERO;
        // One part, and parts of uneven sizes whose cuts fall inside and between them.
        for cuts in [vec![], vec![1, 999_999, 1_000_000, 2_500_000]] {
            for threads in [1, 2, 3, 7] {
                let prepared = std::sync::atomic::AtomicUsize::new(0);
                let mut buf = vec![0u8; payload.len()];
                let mut parts = Vec::new();
                let mut rest = &mut buf[..];
                let mut at = 0;
                for &cut in &cuts {
                    let (head, tail) = rest.split_at_mut(cut - at);
                    parts.push(PayloadPart::Into(head));
                    (rest, at) = (tail, cut);
                }
                parts.push(PayloadPart::Into(rest));
                let count = |part: &mut [u8]| {
                    prepared.fetch_add(part.len(), std::sync::atomic::Ordering::Relaxed);
                };
                let reader = store.open_payload(&id).unwrap();
                let kind = reader.read_parts(parts, threads, count, &mut hashing);
                assert_eq!(kind.unwrap(), ObjectKind::Page);
                assert!(buf == payload, "{threads} threads, cuts {cuts:?}");
                assert_eq!(prepared.into_inner(), payload.len(), "{threads} threads");
            }
        }
        let read = |buf: &mut [u8]| {
            let reader = store.open_payload(&id).unwrap();
            let parts = vec![PayloadPart::Into(buf)];
            reader.read_parts(parts, 3, |_| {}, &mut Duration::default())
        };
        // A flip in the last range, which another thread reads, is caught.
        let path = store.object_path(&id);
        let mut file = std::fs::read(&path).unwrap();
        let last = file.len() - 2;
        file[last] ^= 1;
        std::fs::write(&path, file).unwrap();
        let err = read(&mut vec![0u8; payload.len()]).unwrap_err();
        assert!(err.to_string().contains("checksum"), "{err}");
    }

    /// A range read on another thread opens the path again: a FIFO or a shorter file put
    /// there after the first open is refused, not waited on or read short.
    #[test]
    fn a_split_read_refuses_a_file_replaced_during_the_read() {
        let payload = vec![5u8; 1 << 20];
        let (dir, store, id) = store_with(&payload);
        let path = store.object_path(&id);
        let read = |reader: PayloadReader| {
            let mut buf = vec![0u8; payload.len()];
            let parts = vec![PayloadPart::Into(&mut buf)];
            reader.read_parts(parts, 2, |_| {}, &mut Duration::default())
        };
        let reader = store.open_payload(&id).unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        std::fs::rename(&fifo, &path).unwrap();
        let err = read(reader).unwrap_err();
        assert!(err.to_string().contains("regular"), "{err}");

        std::fs::remove_file(&path).unwrap();
        store.put(&id, ObjectKind::Page, &payload).unwrap();
        let reader = store.open_payload(&id).unwrap();
        let short = std::fs::read(&path).unwrap();
        std::fs::write(dir.path().join("short"), &short[..short.len() - 10]).unwrap();
        std::fs::rename(dir.path().join("short"), &path).unwrap();
        let err = read(reader).unwrap_err();
        assert!(err.to_string().contains("changed length"), "{err}");
    }

    #[test]
    fn parts_of_the_wrong_total_length_are_refused() {
        let (_dir, store, id) = store_with(&[1u8; 100]);
        let mut buf = vec![0u8; 99];
        let err = store
            .open_payload(&id)
            .unwrap()
            .read_parts(
                vec![PayloadPart::Into(&mut buf)],
                1,
                |_| {},
                &mut Duration::default(),
            )
            .unwrap_err();
        assert!(err.to_string().contains("expects 99"), "{err}");
    }
}
