//! A session's background writer: one thread per open session that does its disk work in
//! order, off the thread that owns the context.
//!
//! - **Pages.** A page's rows are captured when it fills (its sliding-window rows must be
//!   taken then anyway) and queued here; the thread writes them durably (temp, fsync,
//!   rename, directory fsync) while the context decodes the next pages.
//! - **Commits.** A save captures what only the context has (the tail, window rows) on the
//!   engine thread and queues a [`CommitJob`]: the objects left to write and the complete
//!   manifest. The thread writes them, checks under the store lock that every object the
//!   manifest names is there, writes the manifest atomically and deletes what it no longer
//!   names. A commit follows the pages queued before it, so one session's manifests land in
//!   order and each finds the pages it names already written.
//!
//! Nothing names a page until a commit's manifest does, so a crash leaves at most
//! unreferenced objects that gc collects. Until then the thread's [`Lease`] lists each page,
//! written into it before the page under the store's shared lock, so that no gc (this
//! process's or another's) takes it in the meantime; the commit whose manifest lands clears
//! the lease. Outcomes go back to the session through [`SessionWriter::take_outcomes`];
//! dropping the writer waits for everything queued (and ends the lease).

use std::sync::mpsc::{sync_channel, SyncSender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::commit::{CommitJob, CommitOutcome};
use super::early::{EarlyStats, PendingLease};
use crate::session::catalog::SessionCatalog;
use crate::session::manifest::SessionManifest;
use crate::store::{ObjectId, ObjectKind, PutOutcome, StoreError};
use crate::tiers::WarmPool;

/// Jobs queued ahead of the writer: a page is a few MB, and the prefill of one takes far
/// longer than its write, so a short queue only absorbs a slow fsync.
const QUEUE_JOBS: usize = 4;

/// One object captured when its page filled.
pub(super) struct PageJob {
    pub(super) id: ObjectId,
    pub(super) kind: ObjectKind,
    pub(super) payload: Vec<u8>,
    /// The warm tier to hand the payload to once it is stored.
    pub(super) keep: Option<Arc<WarmPool>>,
}

enum Job {
    Page(PageJob),
    Commit(Box<CommitJob>),
}

#[derive(Default)]
struct State {
    /// Jobs queued and not done, and of those, commits.
    in_flight: usize,
    commits_in_flight: usize,
    early: EarlyStats,
    /// Pages whose write failed (the session must not count them as on their way).
    failed_pages: Vec<ObjectId>,
    outcomes: Vec<CommitOutcome>,
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

/// What the session hears from its writer.
#[derive(Default)]
pub(super) struct Outcomes {
    pub(super) commits: Vec<CommitOutcome>,
    pub(super) failed_pages: Vec<ObjectId>,
}

/// The thread doing one session's writes; dropping it waits for the queued ones.
pub(super) struct SessionWriter {
    send: Option<SyncSender<Job>>,
    thread: Option<JoinHandle<()>>,
    shared: Arc<Shared>,
}

impl SessionWriter {
    pub(super) fn spawn(catalog: SessionCatalog) -> std::io::Result<Self> {
        let (send, receive) = sync_channel::<Job>(QUEUE_JOBS);
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            idle: Condvar::new(),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("kvrun-session-writer".into())
            .spawn(move || {
                // The manifest on disk as this thread left it; before its first commit, the
                // one the session saw (nothing else writes it while the thread lives).
                let mut on_disk: Option<Option<SessionManifest>> = None;
                let mut lease = PendingLease::default();
                for job in receive {
                    match job {
                        Job::Page(page) => store_page(&catalog, &theirs, &mut lease, page),
                        Job::Commit(mut commit) => {
                            let previous = on_disk.take().unwrap_or_else(|| commit.previous.take());
                            let early = std::mem::take(&mut theirs.lock().early);
                            let outcome =
                                commit.run(&catalog, previous.as_ref(), early, Some(&mut lease));
                            on_disk = Some(match outcome.durable_manifest() {
                                Some(m) => Some(m.clone()),
                                None => previous,
                            });
                            let mut state = theirs.lock();
                            state.in_flight -= 1;
                            state.commits_in_flight -= 1;
                            state.outcomes.push(outcome);
                            theirs.idle.notify_all();
                        }
                    }
                }
            })?;
        Ok(Self {
            send: Some(send),
            thread: Some(thread),
            shared,
        })
    }

    /// Queues a page (waits while the queue is full).
    pub(super) fn submit_page(&self, job: PageJob) -> Result<(), PageJob> {
        match self.submit(Job::Page(job), false) {
            Ok(()) => Ok(()),
            Err(Job::Page(job)) => Err(job),
            Err(Job::Commit(_)) => unreachable!("a page job comes back as one"),
        }
    }

    /// Queues a commit after everything queued so far; gives it back when the thread is
    /// gone (it panicked), for the caller to run itself.
    pub(super) fn submit_commit(&self, job: Box<CommitJob>) -> Result<(), Box<CommitJob>> {
        match self.submit(Job::Commit(job), true) {
            Ok(()) => Ok(()),
            Err(Job::Commit(job)) => Err(job),
            Err(Job::Page(_)) => unreachable!("a commit job comes back as one"),
        }
    }

    fn submit(&self, job: Job, commit: bool) -> Result<(), Job> {
        let Some(send) = &self.send else {
            return Err(job);
        };
        let count = |state: &mut State, up: bool| {
            let step = |n: &mut usize| *n = if up { *n + 1 } else { *n - 1 };
            step(&mut state.in_flight);
            if commit {
                step(&mut state.commits_in_flight);
            }
        };
        count(&mut self.shared.lock(), true);
        send.send(job).map_err(|back| {
            count(&mut self.shared.lock(), false);
            back.0
        })
    }

    /// Commits queued whose outcome has not come back yet.
    pub(super) fn commits_in_flight(&self) -> usize {
        self.shared.lock().commits_in_flight
    }

    /// What came back since the last call.
    pub(super) fn take_outcomes(&self) -> Outcomes {
        let mut state = self.shared.lock();
        Outcomes {
            commits: std::mem::take(&mut state.outcomes),
            failed_pages: std::mem::take(&mut state.failed_pages),
        }
    }

    /// Waits until every queued job is done (stored, committed or failed).
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
        state.commits_in_flight = 0;
    }
}

/// Leases the page and stores it in one hold of the shared store lock: no gc runs between
/// the two, so none sees the page stored and not leased.
fn leased_put(
    catalog: &SessionCatalog,
    lease: &mut PendingLease,
    job: &PageJob,
) -> Result<PutOutcome, StoreError> {
    let store = catalog.store();
    let _shared = store.lock_shared()?;
    lease.add(store, job.id);
    store.put(&job.id, job.kind, &job.payload)
}

fn store_page(catalog: &SessionCatalog, shared: &Shared, lease: &mut PendingLease, job: PageJob) {
    let started = Instant::now();
    let put = leased_put(catalog, lease, &job);
    let busy_ms = started.elapsed().as_secs_f64() * 1e3;
    if let (Ok(_), Some(warm)) = (&put, &job.keep) {
        warm.insert(job.id, job.payload);
    }
    let mut state = shared.lock();
    state.in_flight -= 1;
    state.early.busy_ms += busy_ms;
    match put {
        Ok(outcome) => {
            state.early.objects += usize::from(!outcome.already_present);
            state.early.bytes += outcome.written_bytes;
        }
        Err(e) => {
            state.early.error.get_or_insert_with(|| e.to_string());
            state.failed_pages.push(job.id);
        }
    }
    shared.idle.notify_all();
}

impl Drop for SessionWriter {
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
    fn queued_pages_are_stored_by_the_time_wait_returns() {
        let dir = tempfile::tempdir().unwrap();
        let paths = crate::paths::Paths::under(dir.path());
        let catalog = SessionCatalog::open(&paths).unwrap();
        let store = catalog.store().clone();
        let id = |n: u8| ObjectId([n; 32]);
        store.put(&id(1), ObjectKind::Page, &[1; 100]).unwrap();
        let writer = SessionWriter::spawn(catalog).unwrap();
        let page = |n: u8, len| PageJob {
            id: id(n),
            kind: ObjectKind::Page,
            payload: vec![n; len],
            keep: None,
        };
        for n in 1..=12u8 {
            assert!(writer.submit_page(page(n, 50_000)).is_ok());
        }
        writer.wait();
        let outcomes = writer.take_outcomes();
        assert!(outcomes.commits.is_empty() && outcomes.failed_pages.is_empty());
        let early = std::mem::take(&mut writer.shared.lock().early);
        assert_eq!(early.objects, 11, "{early:?}");
        // Stored objects are immutable: the one already there keeps its payload.
        assert_eq!(store.get(&id(1)).unwrap(), vec![1; 100]);
        for n in 2..=12u8 {
            assert_eq!(store.get(&id(n)).unwrap(), vec![n; 50_000], "object {n}");
        }
        // Dropping the writer waits for what is still queued.
        assert!(writer.submit_page(page(13, 10)).is_ok());
        drop(writer);
        assert_eq!(store.get(&id(13)).unwrap(), vec![13; 10]);
    }
}
