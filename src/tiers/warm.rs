//! The warm tier: KV pages kept in RAM under a byte budget, least recently used out first.
//!
//! Pages are immutable once full, so the pool never writes back: dropping a page only loses a
//! copy of what the cold store already holds. Every insert evicts before it adds, so the
//! budget holds at every moment.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use twox_hash::XxHash3_128;

use super::evict;
use crate::store::{ObjectId, ObjectStore, StoreError};

struct Entry {
    data: Arc<Vec<u8>>,
    /// XXH3-128, checked on every read: RAM can flip bits too, and a bad page must never
    /// reach llama.cpp (the store's own checksum, for the same reason: it is fast).
    checksum: u128,
    tick: u64,
    used_at: Instant,
}

#[derive(Default)]
struct Inner {
    map: HashMap<ObjectId, Entry>,
    /// tick → id, oldest first.
    lru: BTreeMap<u64, ObjectId>,
    used: u64,
    tick: u64,
    high_water: u64,
    hits: u64,
    loads: u64,
    corrupt: u64,
}

/// Counters for the stats and the TUI.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WarmStats {
    pub used_bytes: u64,
    pub budget_bytes: u64,
    pub pages: u64,
    pub high_water_bytes: u64,
    /// Page reads served from RAM.
    pub hits: u64,
    /// Page reads that went to the cold store.
    pub loads: u64,
    /// RAM copies that failed their checksum (dropped and reloaded from disk).
    pub corrupt: u64,
}

pub struct WarmPool {
    budget: u64,
    inner: Mutex<Inner>,
}

impl WarmPool {
    pub fn new(budget: u64) -> Self {
        Self {
            budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves only a cache behind; keep using it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A page from RAM, else from the cold store (verified there) and kept in RAM. The page
    /// is shared with the pool, not copied: callers copy it once, straight to where it goes.
    /// A copy here took fresh memory, whose first touch can cost about as much as the copy
    /// itself, which made restores from prefetched pages slower.
    pub fn get_or_load(
        &self,
        store: &ObjectStore,
        id: &ObjectId,
    ) -> Result<Arc<Vec<u8>>, StoreError> {
        let found = touch(&mut self.lock(), id);
        // Checked outside the lock: other readers need not wait for this page's hash.
        if let Some((data, checksum)) = found {
            let intact = XxHash3_128::oneshot(&data) == checksum;
            let mut inner = self.lock();
            if intact {
                inner.hits += 1;
                return Ok(data);
            }
            inner.corrupt += 1;
            drop(inner);
            self.remove(id);
        }
        let data = Arc::new(store.get(id)?);
        self.lock().loads += 1;
        self.insert_shared(*id, Arc::clone(&data));
        Ok(data)
    }

    pub fn contains(&self, id: &ObjectId) -> bool {
        self.lock().map.contains_key(id)
    }

    /// Keeps a page in RAM (a page larger than the whole budget is not kept).
    pub fn insert(&self, id: ObjectId, data: Vec<u8>) {
        self.insert_shared(id, Arc::new(data));
    }

    fn insert_shared(&self, id: ObjectId, data: Arc<Vec<u8>>) {
        let size = data.len() as u64;
        if size > self.budget {
            return;
        }
        let checksum = XxHash3_128::oneshot(&data);
        let mut inner = self.lock();
        if touch(&mut inner, &id).is_some() {
            return;
        }
        // Every LRU entry has its page in the map (`remove_entry` drops both together).
        let oldest_first = inner
            .lru
            .values()
            .map(|old| (*old, inner.map.get(old).map_or(0, |e| e.data.len() as u64)));
        for old in evict::warm_overflow(oldest_first, inner.used, size, self.budget) {
            remove_entry(&mut inner, &old);
        }
        inner.tick += 1;
        let tick = inner.tick;
        inner.lru.insert(tick, id);
        inner.map.insert(
            id,
            Entry {
                checksum,
                data,
                tick,
                used_at: Instant::now(),
            },
        );
        inner.used += size;
        inner.high_water = inner.high_water.max(inner.used);
    }

    /// Drops pages not used for `idle` (the warm-idle timeout). Returns bytes freed.
    pub fn evict_idle(&self, idle: Duration) -> u64 {
        let mut inner = self.lock();
        let pages = inner.map.iter().map(|(id, e)| (*id, e.used_at));
        let stale = evict::warm_idle(pages, idle, Instant::now());
        stale.iter().map(|id| remove_entry(&mut inner, id)).sum()
    }

    /// Drops one page (a corrupt copy, say).
    pub fn remove(&self, id: &ObjectId) {
        remove_entry(&mut self.lock(), id);
    }

    pub fn stats(&self) -> WarmStats {
        let inner = self.lock();
        WarmStats {
            used_bytes: inner.used,
            budget_bytes: self.budget,
            pages: inner.map.len() as u64,
            high_water_bytes: inner.high_water,
            hits: inner.hits,
            loads: inner.loads,
            corrupt: inner.corrupt,
        }
    }

    /// Starts loading `ids` from the cold store into RAM in the background (prefetch), for
    /// example while the model loads or the user types.
    pub fn prefetch(
        self: &Arc<Self>,
        store: ObjectStore,
        ids: Vec<ObjectId>,
    ) -> std::thread::JoinHandle<()> {
        let pool = Arc::clone(self);
        std::thread::spawn(move || {
            for id in ids {
                if pool.contains(&id) {
                    continue;
                }
                match store.get(&id) {
                    Ok(data) => pool.insert(id, data),
                    // A damaged page is reported when a restore needs it.
                    Err(_) => continue,
                }
            }
        })
    }
}

/// Drops a page and its place in the LRU order; returns the bytes freed.
fn remove_entry(inner: &mut Inner, id: &ObjectId) -> u64 {
    let Some(e) = inner.map.remove(id) else {
        return 0;
    };
    inner.lru.remove(&e.tick);
    let freed = e.data.len() as u64;
    inner.used -= freed;
    freed
}

/// Marks a page as just used and returns it with its checksum.
fn touch(inner: &mut Inner, id: &ObjectId) -> Option<(Arc<Vec<u8>>, u128)> {
    inner.tick += 1;
    let tick = inner.tick;
    let entry = inner.map.get_mut(id)?;
    let old = std::mem::replace(&mut entry.tick, tick);
    entry.used_at = Instant::now();
    let found = (Arc::clone(&entry.data), entry.checksum);
    inner.lru.remove(&old);
    inner.lru.insert(tick, *id);
    Some(found)
}

#[cfg(test)]
impl WarmPool {
    /// Flips a bit of a held page, as failing RAM would.
    fn corrupt_for_test(&self, id: &ObjectId) {
        let mut inner = self.lock();
        if let Some(e) = inner.map.get_mut(id) {
            let mut data = e.data.as_ref().clone();
            data[0] ^= 1;
            e.data = Arc::new(data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_corrupted_ram_copy_is_caught_and_reloaded_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        store
            .put(&id(9), crate::store::ObjectKind::Page, &[9; 64])
            .unwrap();
        let pool = WarmPool::new(1000);
        pool.get_or_load(&store, &id(9)).unwrap();
        pool.corrupt_for_test(&id(9));
        assert_eq!(
            pool.get_or_load(&store, &id(9)).unwrap().as_slice(),
            [9; 64]
        );
        let s = pool.stats();
        assert_eq!((s.corrupt, s.loads), (1, 2));
        // And a corrupt disk copy is an error, not data.
        let path = store.object_path(&id(9));
        let mut bytes = std::fs::read(&path).unwrap();
        let n = bytes.len();
        bytes[n - 1] ^= 1;
        std::fs::write(&path, bytes).unwrap();
        pool.remove(&id(9));
        assert!(pool.get_or_load(&store, &id(9)).is_err());
    }

    fn id(n: u8) -> ObjectId {
        ObjectId([n; 32])
    }

    #[test]
    fn budget_holds_and_least_recent_goes_first() {
        let pool = WarmPool::new(300);
        pool.insert(id(1), vec![1; 100]);
        pool.insert(id(2), vec![2; 100]);
        pool.insert(id(3), vec![3; 100]);
        // Touch 1 so 2 is the least recently used.
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        assert_eq!(
            pool.get_or_load(&store, &id(1)).unwrap().as_slice(),
            [1; 100]
        );
        pool.insert(id(4), vec![4; 100]);
        assert!(pool.contains(&id(1)) && !pool.contains(&id(2)));
        assert!(pool.stats().used_bytes <= 300);
        pool.insert(id(5), vec![5; 400]);
        assert!(!pool.contains(&id(5)), "larger than the budget");
        assert_eq!(pool.stats().hits, 1);
    }

    #[test]
    fn loads_from_the_store_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let store = ObjectStore::open(dir.path()).unwrap();
        store
            .put(&id(7), crate::store::ObjectKind::Page, &[7; 50])
            .unwrap();
        let pool = WarmPool::new(1000);
        assert_eq!(
            pool.get_or_load(&store, &id(7)).unwrap().as_slice(),
            [7; 50]
        );
        assert_eq!(
            pool.get_or_load(&store, &id(7)).unwrap().as_slice(),
            [7; 50]
        );
        let s = pool.stats();
        assert_eq!((s.loads, s.hits, s.pages), (1, 1, 1));
        assert_eq!(pool.evict_idle(Duration::ZERO), 50);
        assert_eq!(pool.stats().used_bytes, 0);
    }
}
