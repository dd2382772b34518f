//! Storing pages while the prefill goes on. A page's rows are captured when it fills (its
//! sliding-window rows must be taken then anyway), and a background thread writes them
//! durably (temp, fsync, rename, directory fsync) while the context decodes the next pages.
//! A save then finds most of its objects already there and writes only what is left.
//!
//! Nothing names these objects until a save's manifest does, so a crash leaves at most
//! unreferenced objects that gc collects. Neither does anything here mark them as present:
//! a gc between the write and the save could take them, so the save checks each one under
//! the store lock, as it checks every object it has not written itself, and writes what it
//! does not find.

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::store::{ObjectId, ObjectKind, ObjectStore};
use crate::tiers::WarmPool;

/// Pages queued ahead of the writer: a page is a few MB, and the prefill of one takes far
/// longer than its write, so a short queue only absorbs a slow fsync.
const QUEUE_PAGES: usize = 4;

/// One object for the background writer.
pub(super) struct EarlyJob {
    pub(super) id: ObjectId,
    pub(super) kind: ObjectKind,
    pub(super) payload: Vec<u8>,
    /// The warm tier to hand the payload to once it is stored.
    pub(super) keep: Option<Arc<WarmPool>>,
}

/// What the writer did since the last [`EarlyWriter::drain`].
#[derive(Debug, Clone, Default)]
pub(super) struct EarlyStats {
    pub(super) objects: usize,
    pub(super) bytes: u64,
    /// Wall time the writer spent storing them.
    pub(super) busy_ms: f64,
    /// The first failure (the save writes what is missing itself, and reports its errors).
    pub(super) error: Option<String>,
}

#[derive(Default)]
struct State {
    in_flight: usize,
    stats: EarlyStats,
}

struct Shared {
    state: Mutex<State>,
    idle: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A thread storing a session's filled pages; dropping it waits for the queued ones.
pub(super) struct EarlyWriter {
    send: Option<SyncSender<EarlyJob>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl EarlyWriter {
    pub(super) fn spawn(store: ObjectStore) -> std::io::Result<Self> {
        let (send, receive) = sync_channel::<EarlyJob>(QUEUE_PAGES);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            idle: Condvar::new(),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("kvrun-page-writer".into())
            .spawn(move || {
                for job in receive {
                    let started = Instant::now();
                    let put = store.put(&job.id, job.kind, &job.payload);
                    let busy_ms = started.elapsed().as_secs_f64() * 1e3;
                    if let (Ok(_), Some(warm)) = (&put, &job.keep) {
                        warm.insert(job.id, job.payload);
                    }
                    let mut state = theirs.lock();
                    state.in_flight -= 1;
                    state.stats.busy_ms += busy_ms;
                    match put {
                        Ok(outcome) => {
                            state.stats.objects += usize::from(!outcome.already_present);
                            state.stats.bytes += outcome.written_bytes;
                        }
                        Err(e) => {
                            state.stats.error.get_or_insert_with(|| e.to_string());
                        }
                    }
                    theirs.idle.notify_all();
                }
            })?;
        Ok(Self {
            send: Some(send),
            thread: Some(thread),
            shared,
        })
    }

    /// Queues `job` (waits while the queue is full).
    pub(super) fn submit(&self, job: EarlyJob) {
        let Some(send) = &self.send else { return };
        self.shared.lock().in_flight += 1;
        if send.send(job).is_err() {
            // The thread is gone (it panicked): the save writes the page itself.
            self.shared.lock().in_flight -= 1;
        }
    }

    /// Waits until every queued object is stored (or failed), and returns what was done
    /// since the last drain.
    pub(super) fn drain(&self) -> EarlyStats {
        self.wait();
        std::mem::take(&mut self.shared.lock().stats)
    }

    /// Waits until every queued object is stored (or failed).
    pub(super) fn wait(&self) {
        let mut state = self.shared.lock();
        // A writer that died (a panic) never reports its last jobs: stop waiting for it.
        while state.in_flight > 0 && self.thread.as_ref().is_some_and(|t| !t.is_finished()) {
            state = self
                .shared
                .idle
                .wait_timeout(state, Duration::from_millis(100))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state.in_flight = 0;
    }
}

impl Drop for EarlyWriter {
    fn drop(&mut self) {
        drop(self.send.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queued_pages_are_stored_by_the_time_drain_returns() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        let id = |n: u8| ObjectId([n; 32]);
        store.put(&id(1), ObjectKind::Page, &[1; 100]).unwrap();
        let writer = EarlyWriter::spawn(store.clone()).unwrap();
        for n in 1..=12u8 {
            writer.submit(EarlyJob {
                id: id(n),
                kind: ObjectKind::Page,
                payload: vec![n; 50_000],
                keep: None,
            });
        }
        let stats = writer.drain();
        assert_eq!(stats.objects, 11, "{stats:?}");
        assert!(stats.error.is_none());
        // Stored objects are immutable: the one already there keeps its payload.
        assert_eq!(store.get(&id(1)).unwrap(), vec![1; 100]);
        for n in 2..=12u8 {
            assert_eq!(store.get(&id(n)).unwrap(), vec![n; 50_000], "object {n}");
        }
        assert_eq!(writer.drain().objects, 0, "drain reports each write once");
        // Dropping the writer waits for what is still queued.
        writer.submit(EarlyJob {
            id: id(13),
            kind: ObjectKind::Page,
            payload: vec![13; 10],
            keep: None,
        });
        drop(writer);
        assert_eq!(store.get(&id(13)).unwrap(), vec![13; 10]);
    }
}
