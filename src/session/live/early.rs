//! What the writer does ahead of a commit: the pages it stored early, and the lease that
//! keeps gc off them until a manifest names them.

use crate::store::{Lease, ObjectId, ObjectStore, StoreError};

/// What the writer stored of the pages since the last commit.
#[derive(Debug, Clone, Default)]
pub(super) struct EarlyStats {
    pub(super) objects: usize,
    pub(super) bytes: u64,
    /// Wall time the writer spent storing them.
    pub(super) busy_ms: f64,
    /// The first failure (the commit that names the page then fails its check).
    pub(super) error: Option<String>,
}

/// The writer's lease on the pages it stored ahead of their manifest (see
/// [`crate::store::lease`]), taken with the first page.
#[derive(Default)]
pub(super) struct PendingLease {
    lease: Option<Lease>,
    /// A lease failure was logged (it costs only the protection, so once is enough: a
    /// commit that finds a page gone still saves the log, and the next save the page).
    warned: bool,
}

impl PendingLease {
    /// Lists `id`; the caller holds the store lock shared.
    pub(super) fn add(&mut self, store: &ObjectStore, id: ObjectId) {
        let added = match &mut self.lease {
            Some(lease) => lease.add(id),
            None => store.take_lease().and_then(|mut lease| {
                lease.add(id)?;
                self.lease = Some(lease);
                Ok(())
            }),
        };
        self.warn(added, "leasing a page");
    }

    /// A manifest names what the lease protected: lists nothing any more. The caller holds
    /// the store lock shared.
    pub(super) fn clear(&mut self) {
        if let Some(lease) = &mut self.lease {
            let cleared = lease.clear();
            self.warn(cleared, "clearing the page lease");
        }
    }

    fn warn(&mut self, result: Result<(), StoreError>, what: &str) {
        if let Err(e) = result {
            if !std::mem::replace(&mut self.warned, true) {
                tracing::warn!(
                    "{what} failed ({e}); until this session's next save, a gc may take                      pages it has stored (the save writes them again)"
                );
            }
        }
    }
}
