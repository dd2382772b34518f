//! Reading a restore's page objects several at a time. A cold restore is bound by the disk
//! and by the checksum: with one thread they take turns, with a few they overlap (one thread
//! hashes a page while another waits for the next one's read). Every check of a single
//! read stands: the header names the object, the length matches the layout, the checksum
//! matches the payload; results come back in request order, so the first damaged page is
//! the one a sequential read would have reported.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::kv::layout::{BASE, SWA};
use crate::kv::KvLayout;
use crate::session::capture::RestorePhases;
use crate::session::kv_error::{LiveError, LiveResult as Result};
use crate::session::manifest::KvSnapshot;
use crate::store::{ObjectId, ObjectStore, PayloadPart};
use crate::tiers::WarmPool;

/// One object to read; `expected_len` is the payload length the KV layout needs, when the
/// object has a fixed size (pages do, tail records do not).
#[derive(Debug, Clone, Copy)]
pub struct PageRequest {
    pub id: ObjectId,
    pub expected_len: Option<usize>,
}

/// The payloads, in request order, and where the time went.
pub struct PageReads {
    pub results: Vec<Result<Vec<u8>>>,
    /// Wall time of the whole read, verification included.
    pub read_ms: f64,
    /// Checksum time summed over the reading threads.
    pub verify_ms: f64,
}

/// A snapshot's page objects as read, in snapshot order.
pub struct Fetched {
    pub base: Vec<Result<Vec<u8>>>,
    pub swa: Vec<Result<Vec<u8>>>,
}

/// Reads every page `snap` names (pages of `page_tokens` tokens) in one parallel pass
/// (pages after a damaged one are read too: the reads overlap, and a restore rarely meets
/// damage), adding the time to `phases`.
pub fn fetch_pages(
    (store, warm): (&ObjectStore, Option<&WarmPool>),
    snap: &KvSnapshot,
    layout: &KvLayout,
    page_tokens: usize,
    phases: &mut RestorePhases,
) -> Fetched {
    let p = page_tokens;
    let page = |id: &ObjectId, section| PageRequest {
        id: *id,
        expected_len: Some(p * layout.bytes_per_token(section)),
    };
    let mut requests: Vec<PageRequest> = snap.pages.iter().map(|id| page(id, BASE)).collect();
    let swa: &[(usize, ObjectId)] = if layout.is_iswa() {
        &snap.swa_pages
    } else {
        &[]
    };
    requests.extend(swa.iter().map(|(_, id)| page(id, SWA)));
    let reads = read_pages(store, warm, &requests);
    phases.read_ms += reads.read_ms;
    phases.verify_ms += reads.verify_ms;
    let mut results = reads.results.into_iter();
    Fetched {
        base: results.by_ref().take(snap.pages.len()).collect(),
        swa: results.collect(),
    }
}

/// Reads and verifies one object (a tail record, a recurrent state) through the warm pool,
/// into `buffer` when it is read from disk, adding the time to `phases`.
pub fn read_object(
    store: &ObjectStore,
    warm: Option<&WarmPool>,
    request: PageRequest,
    buffer: Vec<u8>,
    phases: &mut RestorePhases,
) -> Result<Vec<u8>> {
    let started = Instant::now();
    let mut hashing = Duration::ZERO;
    let read = read_one(store, warm, &request, buffer, &mut hashing);
    phases.read_ms += started.elapsed().as_secs_f64() * 1e3;
    phases.verify_ms += hashing.as_secs_f64() * 1e3;
    read
}

/// More threads than this only queue on the disk.
const MAX_READERS: usize = 8;

/// Reads and verifies `requests` through the warm pool (when there is one) with a few
/// threads at once.
pub fn read_pages(
    store: &ObjectStore,
    warm: Option<&WarmPool>,
    requests: &[PageRequest],
) -> PageReads {
    let started = Instant::now();
    let threads = readers_for(requests.len());
    let (results, hashing) = in_parallel(requests.iter().collect(), threads, |request, hashing| {
        read_one(store, warm, request, Vec::new(), hashing)
    });
    PageReads {
        results,
        read_ms: started.elapsed().as_secs_f64() * 1e3,
        verify_ms: hashing.as_secs_f64() * 1e3,
    }
}

/// One page to read straight into its places in a blob frame: per layer block of the page
/// (page-row order), its area, which takes the block's rows from cell `skip_cells` on. A
/// tail record is read the same way, its header first.
pub struct PlacedRead<'b> {
    pub id: ObjectId,
    /// Where the bytes before the rows go (a tail record's header), for the caller to check.
    pub header: Option<&'b mut [u8]>,
    pub cells: usize,
    pub skip_cells: usize,
    /// Bytes per cell of each layer block.
    pub widths: &'b [usize],
    pub areas: Vec<&'b mut [u8]>,
    /// The areas' memory is fresh: fault it in before each read ([`BlobFrame::fresh`]).
    ///
    /// [`BlobFrame::fresh`]: crate::kv::blob::BlobFrame::fresh
    pub prefault: bool,
}

/// Whether each placed read succeeded, in request order, and where the time went.
pub struct PlacedReads {
    pub results: Vec<Result<()>>,
    pub read_ms: f64,
    pub verify_ms: f64,
}

/// Reads and verifies pages into their places, `threads` at once (at most one per page).
/// After an error a page's areas hold unverified bytes: the caller must not load them.
pub fn read_placed(
    store: &ObjectStore,
    warm: Option<&WarmPool>,
    reads: Vec<PlacedRead<'_>>,
    threads: usize,
) -> PlacedReads {
    let started = Instant::now();
    let (results, hashing) = in_parallel(reads, threads, |read, hashing| {
        read_one_placed(store, warm, read, hashing)
    });
    PlacedReads {
        results,
        read_ms: started.elapsed().as_secs_f64() * 1e3,
        verify_ms: hashing.as_secs_f64() * 1e3,
    }
}

/// Reader threads for `jobs` objects: at least two, so one read is in flight while another
/// page hashes even on one core.
fn readers_for(jobs: usize) -> usize {
    readers().min(jobs)
}

/// Reader threads for a restore: one per core, at least two and at most [`MAX_READERS`].
pub fn readers() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, MAX_READERS)
}

/// Runs `work` over `jobs` on `threads` threads (at least one, at most one per job), taking
/// jobs in order; results come back in job order with the checksum time the jobs reported,
/// summed. One thread works on the caller's.
fn in_parallel<J: Send, R: Send>(
    jobs: Vec<J>,
    threads: usize,
    work: impl Fn(J, &mut Duration) -> Result<R> + Sync,
) -> (Vec<Result<R>>, Duration) {
    let n = jobs.len();
    let queue = Mutex::new(jobs.into_iter().enumerate());
    let worker = || {
        let mut done = Vec::new();
        let mut hashing = Duration::ZERO;
        loop {
            // Taken under the lock, worked on outside it.
            let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
            let Some((i, job)) = next else {
                break;
            };
            done.push((i, work(job, &mut hashing)));
        }
        (done, hashing)
    };
    let mut results: Vec<Option<Result<R>>> = (0..n).map(|_| None).collect();
    let mut hashing = Duration::ZERO;
    std::thread::scope(|scope| {
        let threads = threads.clamp(1, n.max(1));
        let handles: Vec<_> = (1..threads).map(|_| scope.spawn(worker)).collect();
        // A reader only panics on a bug; its pages then read as unusable, not as data,
        // whichever thread it ran on.
        let here = std::panic::catch_unwind(std::panic::AssertUnwindSafe(worker));
        let done = std::iter::once(here).chain(handles.into_iter().map(|h| h.join()));
        for (done, spent) in done.flatten() {
            hashing += spent;
            for (i, read) in done {
                results[i] = Some(read);
            }
        }
    });
    let results = results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(LiveError::internal("a page reader failed"))))
        .collect();
    (results, hashing)
}

/// One placed page, every check of [`read_one`] applied. Pages are read one per thread: a
/// page read in ranges by two threads, a page per chunk, restored the 8B shape more slowly
/// than two-page chunks read a page per thread (`bench restore --shape llama-8b`).
fn read_one_placed(
    store: &ObjectStore,
    warm: Option<&WarmPool>,
    mut read: PlacedRead<'_>,
    hashing: &mut Duration,
) -> Result<()> {
    let header_len = read.header.as_ref().map_or(0, |h| h.len());
    let expected = header_len + read.cells * read.widths.iter().sum::<usize>();
    let wrong_length = |len: usize| {
        LiveError::PageShape(format!(
            "it holds {len} bytes where the KV layout needs {expected}"
        ))
    };
    if read.areas.len() != read.widths.len() || read.skip_cells > read.cells {
        return Err(LiveError::internal(
            "a page's places do not match its layout",
        ));
    }
    let mut parts = Vec::with_capacity(2 * read.areas.len() + 1);
    parts.extend(read.header.take().map(PayloadPart::Into));
    for (area, &w) in read.areas.iter_mut().zip(read.widths) {
        if read.skip_cells > 0 {
            parts.push(PayloadPart::Skip(read.skip_cells * w));
        }
        if area.len() != (read.cells - read.skip_cells) * w {
            return Err(LiveError::internal(
                "a page's places do not match its layout",
            ));
        }
        parts.push(PayloadPart::Into(area));
    }
    // A fresh buffer's areas are faulted in on the reader threads, just before each is read
    // into, so that its memory (the first touch of a page costs more here than the copy
    // that fills it) is prepared in parallel and while other pages wait on the disk, in one
    // call per area rather than a fault per 4 KiB. A reused buffer's are already in memory,
    // and asking again walked its page tables for a noticeable share of a restore's CPU
    // time.
    let fresh = read.prefault;
    let prefault = |area: &mut [u8]| {
        if fresh {
            crate::llama::prefault(area);
        }
    };
    match warm {
        // The pool keeps what it loads, and checks its RAM copy on every read.
        Some(pool) => {
            for part in &mut parts {
                if let PayloadPart::Into(area) = part {
                    prefault(area);
                }
            }
            let payload = pool.get_or_load(store, &read.id)?;
            if payload.len() != expected {
                return Err(wrong_length(payload.len()));
            }
            let mut at = 0;
            for part in &mut parts {
                if let PayloadPart::Into(area) = part {
                    area.copy_from_slice(&payload[at..at + area.len()]);
                }
                at += part.len();
            }
        }
        None => {
            let reader = store.open_payload(&read.id)?;
            if reader.len() != expected as u64 {
                return Err(wrong_length(reader.len() as usize));
            }
            reader.read_parts(parts, 1, prefault, hashing)?;
        }
    }
    Ok(())
}

/// One object, every check applied, read from disk into `buf`; adds its checksum time to
/// `hashing` (pages from the warm pool are checked there, as part of the read).
fn read_one(
    store: &ObjectStore,
    warm: Option<&WarmPool>,
    request: &PageRequest,
    mut buf: Vec<u8>,
    hashing: &mut Duration,
) -> Result<Vec<u8>> {
    let payload = match warm {
        // Copied into the caller's buffer: a kept one is memory already in.
        Some(pool) => {
            let page = pool.get_or_load(store, &request.id)?;
            buf.clear();
            buf.extend_from_slice(&page);
            buf
        }
        None => {
            let unverified = store.read_unverified_into(&request.id, &mut buf)?;
            let started = Instant::now();
            let verified = unverified.verify(&buf);
            *hashing += started.elapsed();
            verified?;
            buf
        }
    };
    if let Some(expected) = request.expected_len {
        if payload.len() != expected {
            return Err(LiveError::PageShape(format!(
                "it holds {} bytes where the KV layout needs {expected}",
                payload.len()
            )));
        }
    }
    Ok(payload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ObjectKind;

    fn id(n: u8) -> ObjectId {
        ObjectId([n; 32])
    }

    /// Flips the last payload byte of `id`'s file (the header stays valid).
    fn flip_payload(store: &ObjectStore, id: &ObjectId) {
        let path = store.object_path(id);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, bytes).unwrap();
    }

    #[test]
    fn results_keep_request_order_and_name_each_damaged_page() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let payload = |n: u8| vec![n; 1000 + n as usize];
        for n in 1..=12 {
            if n != 9 {
                store.put(&id(n), ObjectKind::Page, &payload(n)).unwrap();
            }
        }
        flip_payload(&store, &id(4));
        let requests: Vec<PageRequest> = (1..=12)
            .map(|n| PageRequest {
                id: id(n),
                // Page 7 is stored whole but is not the length the layout needs.
                expected_len: Some(payload(n).len() + usize::from(n == 7)),
            })
            .collect();
        for warm in [None, Some(WarmPool::new(1 << 20))] {
            let reads = read_pages(&store, warm.as_ref(), &requests);
            assert_eq!(reads.results.len(), 12);
            for (k, read) in reads.results.iter().enumerate() {
                let n = k as u8 + 1;
                match (n, read) {
                    (4, Err(e)) => assert!(format!("{e:#}").contains("checksum"), "{e:#}"),
                    (7, Err(e)) => assert!(format!("{e:#}").contains("KV layout"), "{e:#}"),
                    (9, Err(e)) => assert!(format!("{e:#}").contains("missing"), "{e:#}"),
                    (4 | 7 | 9, Ok(_)) => panic!("page {n} should be unusable"),
                    (_, Ok(bytes)) => assert_eq!(bytes, &payload(n), "page {n}"),
                    (_, Err(e)) => panic!("page {n}: {e:#}"),
                }
            }
        }
    }

    #[test]
    fn no_requests_read_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        assert!(read_pages(&store, None, &[]).results.is_empty());
    }
}
