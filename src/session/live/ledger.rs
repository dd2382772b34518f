//! What a live session knows of its objects in the store: which are there, which are on
//! their way, which a read found damaged, and whether the manifest on disk names objects
//! its commit found missing. A save writes only what this says is new; nothing here
//! touches the context or the disk.

use std::collections::HashSet;

use super::commit::StoreFacts;
use crate::store::ObjectId;

#[derive(Debug, Default)]
pub(super) struct Ledger {
    /// Objects known to be in the store (saves skip them without a syscall).
    pub(super) present: HashSet<ObjectId>,
    /// Objects handed to the writer that no landed manifest names yet: a save counts them
    /// as stored (its commit follows them and checks); a failure or a gc takes them out.
    pub(super) queued: HashSet<ObjectId>,
    /// Objects a read found damaged: the next save rewrites them from the live context
    /// (their header may look fine, so `put` alone would keep them).
    pub(super) damaged: HashSet<ObjectId>,
    /// The manifest on disk names objects its commit found missing; a save from the
    /// context (which still has their rows) writes them again.
    pub(super) incomplete: bool,
    /// Repairs tried since the last complete commit (they stop after a few).
    pub(super) repairs: u32,
}

impl Ledger {
    /// Known stored or on its way, without asking the store.
    pub(super) fn known(&self, id: &ObjectId) -> bool {
        self.present.contains(id) || self.queued.contains(id)
    }

    /// A read found `id` damaged: the next save writes it again.
    pub(super) fn found_damaged(&mut self, id: ObjectId) {
        self.present.remove(&id);
        self.damaged.insert(id);
    }

    /// What a commit the writer finished says of the objects.
    pub(super) fn learn(&mut self, facts: &StoreFacts) {
        if facts.committed {
            for id in &facts.objects {
                self.queued.remove(id);
                self.present.insert(*id);
            }
            // Stale, or named but not stored: the next save captures and writes them.
            for id in facts.stale.iter().chain(&facts.missing) {
                self.queued.remove(id);
                self.present.remove(id);
            }
            self.incomplete = !facts.missing.is_empty();
            if !self.incomplete {
                self.repairs = 0;
            }
        } else {
            for id in &facts.objects {
                self.queued.remove(id);
                self.present.remove(id);
            }
            self.damaged.extend(facts.replaced.iter().copied());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::hash_of(&[n])
    }

    fn facts(committed: bool, objects: &[u8], missing: &[u8], replaced: &[u8]) -> StoreFacts {
        StoreFacts {
            committed,
            manifest: None,
            objects: objects.iter().map(|n| id(*n)).collect(),
            stale: Vec::new(),
            replaced: replaced.iter().map(|n| id(*n)).collect(),
            missing: missing.iter().map(|n| id(*n)).collect(),
        }
    }

    #[test]
    fn a_commit_moves_queued_objects_to_present_and_a_failure_forgets_them() {
        let mut ledger = Ledger::default();
        ledger.queued.extend([id(1), id(2), id(3)]);
        ledger.learn(&facts(true, &[1], &[2], &[]));
        assert!(ledger.present.contains(&id(1)) && !ledger.queued.contains(&id(1)));
        // Named but missing: not known any more, and the session is incomplete.
        assert!(!ledger.known(&id(2)) && ledger.incomplete);
        ledger.repairs = 2;
        ledger.learn(&facts(true, &[3], &[], &[]));
        assert!(!ledger.incomplete && ledger.repairs == 0 && ledger.known(&id(3)));
        // A failed commit: its objects are written again, replaced ones counted damaged.
        ledger.learn(&facts(false, &[3], &[], &[4]));
        assert!(!ledger.known(&id(3)) && ledger.damaged.contains(&id(4)));
        ledger.found_damaged(id(1));
        assert!(!ledger.known(&id(1)) && ledger.damaged.contains(&id(1)));
    }
}
