use std::collections::HashSet;

use super::*;
use crate::store::ObjectKind;

fn store() -> (tempfile::TempDir, ObjectStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = ObjectStore::open(dir.path().join("objects")).unwrap();
    (dir, store)
}

fn id(n: u8) -> ObjectId {
    ObjectId([n; 32])
}

/// A lease as a holder writes it, in the shared lock, before each object.
fn leased_put(store: &ObjectStore, lease: &mut Lease, n: u8) {
    let _shared = store.lock_shared().unwrap();
    lease.add(id(n)).unwrap();
    store.put(&id(n), ObjectKind::Page, &[n; 100]).unwrap();
}

#[test]
fn gc_keeps_what_a_live_lease_lists_and_takes_it_once_cleared() {
    let (_dir, store) = store();
    let mut lease = {
        let _shared = store.lock_shared().unwrap();
        store.take_lease().unwrap()
    };
    for n in 1..=3 {
        leased_put(&store, &mut lease, n);
    }
    // Not leased, not named: garbage.
    store.put(&id(9), ObjectKind::Page, &[9; 100]).unwrap();
    // Named by a manifest (the caller's live set) and leased: counted once, as live.
    let live = HashSet::from([id(1)]);
    let report = {
        let _exclusive = store.lock_exclusive().unwrap();
        store.gc(&live).unwrap()
    };
    assert_eq!((report.removed, report.kept, report.leased), (1, 3, 2));
    for n in 1..=3 {
        assert!(store.contains(&id(n)).unwrap(), "object {n}");
    }
    assert!(!store.contains(&id(9)).unwrap());

    // The holder's manifest landed: it names 1 only, the rest is garbage now.
    {
        let _shared = store.lock_shared().unwrap();
        lease.clear().unwrap();
    }
    assert!(lease.is_empty());
    let _exclusive = store.lock_exclusive().unwrap();
    assert!(store.leased_objects().unwrap().is_empty());
    let report = store.gc(&live).unwrap();
    assert_eq!((report.removed, report.kept, report.leased), (2, 1, 0));
    // Cleared, the lease is still this holder's (not a dead one's, to be deleted).
    assert!(lease.path().exists());
}

#[test]
fn a_dead_holders_lease_protects_nothing_and_is_deleted() {
    let (_dir, store) = store();
    let mut live_lease = {
        let _shared = store.lock_shared().unwrap();
        store.take_lease().unwrap()
    };
    leased_put(&store, &mut live_lease, 1);
    // What a process killed mid-save leaves: a lease file no one holds the lock of, its
    // last line torn.
    store.put(&id(2), ObjectKind::Page, &[2; 100]).unwrap();
    let dead = store.lease_dir().join("4242-crashed.lease");
    std::fs::write(
        &dead,
        format!("# kvrun lease\n{}\n{}", id(2).to_hex(), "ab12"),
    )
    .unwrap();
    let _exclusive = store.lock_exclusive().unwrap();
    assert_eq!(store.leased_objects().unwrap(), HashSet::from([id(1)]));
    assert!(!dead.exists(), "the dead holder's lease is gone");
    std::fs::write(&dead, id(2).to_hex()).unwrap();
    let report = store.gc(&HashSet::new()).unwrap();
    assert_eq!((report.removed, report.leased), (1, 1));
    assert!(store.contains(&id(1)).unwrap() && !store.contains(&id(2)).unwrap());
    // Dropping the lease ends the protection and removes its file.
    let path = live_lease.path().to_path_buf();
    drop(live_lease);
    assert!(!path.exists());
    let report = store.gc(&HashSet::new()).unwrap();
    assert_eq!(report.removed, 1);
}

#[test]
fn a_lease_held_by_another_process_protects_until_it_is_killed() {
    // util-linux `flock` holds the lock of a file the way a kvrun process does.
    let (_dir, store) = store();
    store.put(&id(5), ObjectKind::Page, &[5; 100]).unwrap();
    let path = {
        let _shared = store.lock_shared().unwrap();
        let lease = store.lease_dir().join("77-other.lease");
        std::fs::create_dir_all(store.lease_dir()).unwrap();
        std::fs::write(&lease, format!("{}\n", id(5).to_hex())).unwrap();
        lease
    };
    let Ok(mut holder) = std::process::Command::new("flock")
        .args(["--exclusive", "--no-fork"])
        .arg(&path)
        .args(["sleep", "30"])
        .spawn()
    else {
        eprintln!("no flock(1) here; skipped");
        return;
    };
    // Until the child holds the lock, the lease looks dead (and would be deleted).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if holder.try_wait().unwrap().is_some() {
            eprintln!("flock(1) without --no-fork here; skipped");
            return;
        }
        let file = std::fs::File::open(&path).unwrap();
        if !FileExt::try_lock_exclusive(&file).unwrap() {
            break;
        }
        FileExt::unlock(&file).unwrap();
        assert!(std::time::Instant::now() < deadline, "flock never took it");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    {
        let _exclusive = store.lock_exclusive().unwrap();
        assert_eq!(store.gc(&HashSet::new()).unwrap().leased, 1);
    }
    assert!(store.contains(&id(5)).unwrap() && path.exists());
    holder.kill().unwrap();
    holder.wait().unwrap();
    let _exclusive = store.lock_exclusive().unwrap();
    assert_eq!(store.gc(&HashSet::new()).unwrap().removed, 1);
    assert!(!path.exists());
}
