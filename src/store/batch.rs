//! Writing many objects at once, as a save does: while the caller slices the next pages out
//! of its capture, a few threads hash and write the previous ones, each file fsynced by its
//! writer (concurrent fsyncs share the filesystem's journal commits). Each fan-out
//! directory is fsynced once, after all its renames, so every object is durable when the
//! batch returns, before any manifest that names them is written.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::mpsc::sync_channel;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::fsutil::fsync_dir;
use super::object::PutTimings;
use super::{ObjectId, ObjectKind, ObjectStore, PutOutcome, Result, StoreError};

/// An object's bytes for [`PutJob`]: owned, or gathered from ranges of a shared buffer (a
/// save's capture of llama.cpp's state) by the writer thread that stores it. Gathering there
/// keeps the copy off the caller's thread, on the writers, and in a buffer each writer
/// reuses: at a gigabyte of KV, one fresh buffer per page was seconds of first-touch page
/// faults on the engine thread.
pub enum Payload {
    Owned(Vec<u8>),
    Gathered {
        source: Arc<Vec<u8>>,
        ranges: Vec<Range<usize>>,
    },
}

impl Payload {
    /// Bytes `ranges` of `source`, in order, when every range lies inside it.
    pub fn gathered(source: Arc<Vec<u8>>, ranges: Vec<Range<usize>>) -> Option<Self> {
        let inside = ranges
            .iter()
            .all(|r| r.start <= r.end && r.end <= source.len());
        inside.then_some(Self::Gathered { source, ranges })
    }

    pub fn len(&self) -> usize {
        match self {
            Self::Owned(bytes) => bytes.len(),
            Self::Gathered { ranges, .. } => ranges.iter().map(|r| r.len()).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes, gathered into `scratch` when they are not owned.
    pub fn bytes<'a>(&'a self, scratch: &'a mut Vec<u8>) -> &'a [u8] {
        match self {
            Self::Owned(bytes) => bytes,
            Self::Gathered { source, ranges } => {
                scratch.clear();
                for r in ranges {
                    scratch.extend_from_slice(&source[r.clone()]);
                }
                scratch
            }
        }
    }

    /// The bytes as a vector of their own.
    pub fn into_vec(self) -> Vec<u8> {
        match self {
            Self::Owned(bytes) => bytes,
            gathered => {
                let mut out = Vec::with_capacity(gathered.len());
                gathered.bytes(&mut out);
                out
            }
        }
    }
}

/// One object for [`ObjectStore::put_batch`].
pub struct PutJob {
    pub id: ObjectId,
    pub kind: ObjectKind,
    pub payload: Payload,
    /// Write it even if a valid-looking object is there (a read found it damaged).
    pub replace: bool,
    /// Hand the payload to the batch's `keep` callback once it is stored (a RAM copy).
    pub keep: bool,
}

/// Where a batch's time went, in milliseconds. Writers run at once, so their hash, write and
/// fsync times are summed over threads and can exceed the batch's wall time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BatchTimings {
    /// The producer's own work (slicing payloads), without the time it waited on the queue.
    pub produce_ms: f64,
    /// The producer blocked on a full queue (the writers were behind).
    pub queue_wait_ms: f64,
    /// Checksums of the payloads, summed over the writers.
    pub hash_ms: f64,
    /// Temp file creation, write and rename, summed over the writers.
    pub write_ms: f64,
    /// The objects' fsyncs, summed over the writers.
    pub fsync_ms: f64,
    /// From the first job to the last writer's end (wall).
    pub writers_ms: f64,
    /// The fan-out directories' fsyncs after the renames (wall), and how many.
    pub dir_fsync_ms: f64,
    pub dirs: usize,
}

/// Each object of a batch and what its put did.
pub type BatchOutcomes = Vec<(ObjectId, PutOutcome)>;

/// Writer threads: enough to overlap hashing with writing and fsync, few enough not to
/// queue on the disk.
const MAX_WRITERS: usize = 4;

impl ObjectStore {
    /// Puts every job `produce` emits (as [`Self::put`], or [`Self::replace`] for jobs that
    /// ask), on a few threads while `produce` runs. `keep` receives the payloads of jobs
    /// that ask for them, once stored. Returns what `produce` returned and each object's
    /// outcome; on an error some objects may be stored, none named by anything yet.
    pub fn put_batch<R, E: From<StoreError>>(
        &self,
        produce: impl FnOnce(&mut dyn FnMut(PutJob)) -> std::result::Result<R, E>,
        keep: impl Fn(ObjectId, Vec<u8>) + Sync,
    ) -> std::result::Result<(R, BatchOutcomes, BatchTimings), E> {
        let started = Instant::now();
        let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
        let writers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(2, MAX_WRITERS);
        // A bounded queue: the producer stays at most a few payloads ahead of the writers.
        let (send, receive) = sync_channel::<PutJob>(writers);
        let receive = Mutex::new(receive);
        let writer = || {
            let mut done = Vec::new();
            let mut dirs = BTreeSet::new();
            let mut failed = None;
            // Gathered payloads are copied here, reused from one job to the next.
            let mut scratch = Vec::new();
            let mut timings = PutTimings::default();
            let mut sum = |t: PutTimings| {
                timings.hash_ms += t.hash_ms;
                timings.write.write_ms += t.write.write_ms;
                timings.write.fsync_ms += t.write.fsync_ms;
            };
            loop {
                let job = receive.lock().unwrap_or_else(|e| e.into_inner()).recv();
                let Ok(job) = job else { break };
                // After a failure, drain the queue so the producer never blocks.
                if failed.is_some() {
                    continue;
                }
                match self.write_job(&job, &mut scratch) {
                    Ok((outcome, dir, t)) => {
                        sum(t);
                        dirs.extend(dir);
                        done.push((job.id, outcome));
                        if job.keep {
                            let bytes = match job.payload {
                                Payload::Owned(bytes) => bytes,
                                // Gathered into the scratch buffer already: hand it over.
                                Payload::Gathered { .. } => std::mem::take(&mut scratch),
                            };
                            keep(job.id, bytes);
                        }
                    }
                    Err(e) => failed = Some(e),
                }
            }
            (done, dirs, failed, timings)
        };
        let mut batch = BatchTimings::default();
        let (produced, results) = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..writers).map(|_| scope.spawn(writer)).collect();
            let mut waited = std::time::Duration::ZERO;
            let mut emit = |job: PutJob| {
                let queued = Instant::now();
                // Fails only when every writer is gone, which the joins below report.
                let _ = send.send(job);
                waited += queued.elapsed();
            };
            let produce_started = Instant::now();
            let produced = produce(&mut emit);
            batch.produce_ms = ms(produce_started.elapsed()) - ms(waited);
            batch.queue_wait_ms = ms(waited);
            drop(send);
            let results: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
            (produced, results)
        });
        batch.writers_ms = ms(started.elapsed());
        let mut outcomes = Vec::new();
        let mut dirs: BTreeSet<PathBuf> = BTreeSet::new();
        let mut first_error = None;
        for result in results {
            match result {
                Ok((done, written_dirs, failed, t)) => {
                    batch.hash_ms += t.hash_ms;
                    batch.write_ms += t.write.write_ms;
                    batch.fsync_ms += t.write.fsync_ms;
                    outcomes.extend(done);
                    dirs.extend(written_dirs);
                    if let Some(e) = failed {
                        first_error.get_or_insert(e);
                    }
                }
                Err(_) => {
                    // A writer that panicked: report it as an I/O failure of the store.
                    first_error.get_or_insert(StoreError::Io {
                        path: self.root().to_path_buf(),
                        source: std::io::Error::other("an object writer thread failed"),
                    });
                }
            }
        }
        let produced = produced?;
        if let Some(e) = first_error {
            return Err(e.into());
        }
        let dirs_started = Instant::now();
        for dir in &dirs {
            fsync_dir(dir)?;
        }
        batch.dir_fsync_ms = ms(dirs_started.elapsed());
        batch.dirs = dirs.len();
        Ok((produced, outcomes, batch))
    }

    /// Writes one job's object unless it is already there; returns the outcome and the
    /// directory that still needs an fsync, if it was written.
    fn write_job(
        &self,
        job: &PutJob,
        scratch: &mut Vec<u8>,
    ) -> Result<(PutOutcome, Option<PathBuf>, PutTimings)> {
        if !job.replace && self.check_header(&job.id).is_ok() {
            if job.keep {
                // The caller keeps the bytes even of an object stored already.
                job.payload.bytes(scratch);
            }
            let outcome = PutOutcome {
                written_bytes: 0,
                already_present: true,
            };
            return Ok((outcome, None, PutTimings::default()));
        }
        let payload = job.payload.bytes(scratch);
        let (outcome, _, timings) = self.replace_unsynced_dir_timed(&job.id, job.kind, payload)?;
        let dir = self.object_path(&job.id).parent().map(PathBuf::from);
        Ok((outcome, dir, timings))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_stores_every_object_and_keeps_those_asked_for() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let id = |n: u8| ObjectId([n; 32]);
        store.put(&id(3), ObjectKind::Page, &[3; 10]).unwrap();
        let kept = Mutex::new(Vec::new());
        let (produced, outcomes, _) = store
            .put_batch(
                |emit| {
                    for n in 1..=20u8 {
                        emit(PutJob {
                            id: id(n),
                            kind: ObjectKind::Page,
                            payload: Payload::Owned(vec![n; 1000 * n as usize]),
                            replace: false,
                            keep: n % 2 == 0,
                        });
                    }
                    Ok::<_, StoreError>("done")
                },
                |id, payload| kept.lock().unwrap().push((id, payload.len())),
            )
            .unwrap();
        assert_eq!(produced, "done");
        assert_eq!(outcomes.len(), 20);
        for (oid, outcome) in &outcomes {
            assert_eq!(outcome.already_present, *oid == id(3), "{oid}");
        }
        for n in 1..=20u8 {
            let want = if n == 3 {
                vec![3; 10]
            } else {
                vec![n; 1000 * n as usize]
            };
            assert_eq!(store.get(&id(n)).unwrap(), want, "object {n}");
        }
        let mut kept = kept.into_inner().unwrap();
        kept.sort();
        let want: Vec<_> = (1..=10u8).map(|k| (id(2 * k), 2000 * k as usize)).collect();
        assert_eq!(kept, want);
    }

    #[test]
    fn gathered_payloads_are_stored_and_kept_as_their_ranges_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let source: Arc<Vec<u8>> = Arc::new((0..=255u8).cycle().take(10_000).collect());
        let id = |n: u8| ObjectId([n; 32]);
        // Present already, and kept: the keeper still gets the gathered bytes.
        store.put(&id(4), ObjectKind::Page, &source[..5]).unwrap();
        let ranges = |n: usize| vec![n * 100..n * 100 + 50, 9000 + n..9010 + n, 0..0];
        let want = |n: usize| ranges(n).into_iter().flat_map(|r| source[r].to_vec());
        let kept = Mutex::new(Vec::new());
        store
            .put_batch(
                |emit| {
                    for n in 1..=6u8 {
                        let payload =
                            Payload::gathered(Arc::clone(&source), ranges(n as usize)).unwrap();
                        assert_eq!(payload.len(), 60);
                        emit(PutJob {
                            id: id(n),
                            kind: ObjectKind::Page,
                            payload,
                            replace: false,
                            keep: n % 2 == 0,
                        });
                    }
                    Ok::<_, StoreError>(())
                },
                |id, payload| kept.lock().unwrap().push((id, payload)),
            )
            .unwrap();
        for n in [1u8, 2, 3, 5, 6] {
            let stored = store.get(&id(n)).unwrap();
            assert_eq!(stored, want(n as usize).collect::<Vec<_>>(), "object {n}");
        }
        let mut kept = kept.into_inner().unwrap();
        kept.sort();
        let expected: Vec<_> = [2u8, 4, 6]
            .map(|n| (id(n), want(n as usize).collect::<Vec<_>>()))
            .into();
        assert_eq!(kept, expected);
        // A range outside the source is refused up front, never read.
        assert!(Payload::gathered(Arc::clone(&source), vec![0..1, 9_990..10_001]).is_none());
    }

    #[test]
    fn a_failing_producer_fails_the_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let err = store
            .put_batch(
                |_| {
                    Err(StoreError::Missing {
                        id: ObjectId([9; 32]),
                    })
                },
                |_, _: Vec<u8>| {},
            )
            .map(|(r, _, _): ((), _, _)| r)
            .unwrap_err();
        assert!(matches!(err, StoreError::Missing { .. }), "{err}");
    }
}
