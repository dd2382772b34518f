//! Tests for [`super::ObjectStore`] (kept apart so object.rs stays readable).

use super::super::fsutil::mode_of;
use super::super::TEMP_PREFIX;
use super::*;
use crate::store::PayloadPart;
use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

fn store() -> (tempfile::TempDir, ObjectStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store = ObjectStore::open(tmp.path().join("kv/objects")).unwrap();
    (tmp, store)
}

fn payload(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn assert_corrupt(store: &ObjectStore, id: &ObjectId, why: &str) {
    match store.get(id) {
        Err(StoreError::Corrupt { id: got, detail }) => {
            assert_eq!(&got, id, "{why}");
            let msg = StoreError::Corrupt { id: got, detail }.to_string();
            assert!(
                msg.contains(&id.to_string()) && !msg.contains('\n'),
                "{why}: {msg}"
            );
        }
        other => panic!("{why}: expected Corrupt, got {other:?}"),
    }
}

#[test]
fn round_trip_and_layout() {
    let (_tmp, store) = store();
    let data = payload(100_000, 1);
    let id = ObjectId::hash_of(&data);
    let out = store.put(&id, ObjectKind::Page, &data).unwrap();
    assert_eq!(
        out,
        PutOutcome {
            written_bytes: 100_096,
            already_present: false
        }
    );
    assert_eq!(store.get(&id).unwrap(), data);

    let path = store.object_path(&id);
    let hex = id.to_hex();
    assert_eq!(path, store.root().join(&hex[..2]).join(&hex[2..]));
    let raw = fs::read(&path).unwrap();
    assert_eq!(&raw[..8], b"KVROBJ\x00\x03");
    assert_eq!(raw[8], ObjectKind::Page as u8);
    assert_eq!(&raw[16..24], &100_000u64.to_le_bytes());
    assert_eq!(
        &raw[24..40],
        &twox_hash::XxHash3_128::oneshot(&data).to_le_bytes()
    );
    assert_eq!(&raw[40..56], &[0u8; 16]);
    assert_eq!(&raw[56..64], &[0u8; 8]);
    assert_eq!(&raw[64..96], id.as_bytes());
    assert_eq!(&raw[96..], &data[..]);

    // Buffer reuse, kind reported, empty payload supported.
    let mut buf = vec![9u8; 10];
    assert_eq!(store.read_into(&id, &mut buf).unwrap(), ObjectKind::Page);
    assert_eq!(buf, data);
    let empty = ObjectId::chain(&[b"empty"]);
    store.put(&empty, ObjectKind::Tail, &[]).unwrap();
    assert_eq!(store.read_into(&empty, &mut buf).unwrap(), ObjectKind::Tail);
    assert!(buf.is_empty());

    assert!(store.contains(&id).unwrap());
    assert_eq!(store.size_on_disk(&id).unwrap(), 100_096);
}

#[test]
fn put_is_idempotent_and_repairs_damaged_objects() {
    let (_tmp, store) = store();
    let id = ObjectId::hash_of(b"x");
    store.put(&id, ObjectKind::Other, b"first").unwrap();
    let again = store.put(&id, ObjectKind::Other, b"different").unwrap();
    assert!(again.already_present);
    assert_eq!(again.written_bytes, 0);
    assert_eq!(store.get(&id).unwrap(), b"first");

    // A truncated object has no valid header any more: put rewrites it.
    let path = store.object_path(&id);
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(10)
        .unwrap();
    let out = store.put(&id, ObjectKind::Other, b"first").unwrap();
    assert!(!out.already_present);
    assert_eq!(store.get(&id).unwrap(), b"first");
}

#[test]
fn missing_object() {
    let (_tmp, store) = store();
    let id = ObjectId::hash_of(b"nope");
    let err = store.get(&id).unwrap_err();
    assert!(matches!(err, StoreError::Missing { id: got } if got == id));
    assert_eq!(err.to_string(), format!("object {id} is missing"));
    assert!(!store.contains(&id).unwrap());
    assert!(matches!(
        store.size_on_disk(&id),
        Err(StoreError::Missing { .. })
    ));
    assert!(!store.remove(&id).unwrap());
}

#[test]
fn truncation_at_any_point_is_corrupt() {
    let (_tmp, store) = store();
    let data = payload(5000, 2);
    let id = ObjectId::hash_of(&data);
    store.put(&id, ObjectKind::Page, &data).unwrap();
    let path = store.object_path(&id);
    let full = fs::read(&path).unwrap();
    for cut in [0, 1, 8, 32, 63, 64, 65, 95, 96, 97, 1000, full.len() - 1] {
        fs::write(&path, &full[..cut]).unwrap();
        assert_corrupt(&store, &id, &format!("truncated at {cut}"));
    }
    // Trailing garbage is caught too.
    let mut longer = full.clone();
    longer.push(0);
    fs::write(&path, &longer).unwrap();
    assert_corrupt(&store, &id, "extended");
    fs::write(&path, &full).unwrap();
    assert_eq!(store.get(&id).unwrap(), data);
}

#[test]
fn every_single_bit_flip_in_the_header_is_caught() {
    let (_tmp, store) = store();
    let data = payload(300, 3);
    let id = ObjectId::hash_of(&data);
    store.put(&id, ObjectKind::Tail, &data).unwrap();
    let path = store.object_path(&id);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    for byte in 0..HEADER_LEN as u64 {
        let mut b = [0u8; 1];
        file.read_exact_at(&mut b, byte).unwrap();
        for bit in 0..8 {
            file.write_all_at(&[b[0] ^ (1 << bit)], byte).unwrap();
            assert_corrupt(&store, &id, &format!("header byte {byte} bit {bit}"));
        }
        file.write_all_at(&b, byte).unwrap();
    }
    assert_eq!(store.get(&id).unwrap(), data);
}

#[test]
fn payload_bit_flips_are_caught() {
    let (_tmp, store) = store();
    let data = payload(70_000, 4);
    let id = ObjectId::hash_of(&data);
    store.put(&id, ObjectKind::Page, &data).unwrap();
    let path = store.object_path(&id);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    for off in [0u64, 1, 4095, 4096, 35_000, 69_999] {
        let pos = HEADER_LEN as u64 + off;
        let mut b = [0u8; 1];
        file.read_exact_at(&mut b, pos).unwrap();
        file.write_all_at(&[b[0] ^ 0x10], pos).unwrap();
        let mut buf = Vec::new();
        assert!(matches!(
            store.read_into(&id, &mut buf),
            Err(StoreError::Corrupt { ref detail, .. }) if detail.contains("checksum")
        ));
        assert!(buf.is_empty(), "no unverified bytes left in the buffer");
        file.write_all_at(&b, pos).unwrap();
    }
    assert_eq!(store.get(&id).unwrap(), data);
}

#[test]
fn iter_usage_and_remove() {
    let (_tmp, store) = store();
    let mut ids = Vec::new();
    for i in 0..20u8 {
        let id = ObjectId::chain(&[b"page", &[i]]);
        store
            .put(&id, ObjectKind::Page, &payload(i as usize * 10, i))
            .unwrap();
        ids.push(id);
    }
    // Noise that must be ignored: the lock file, a foreign file, a misnamed dir.
    let _lock = store.lock_shared().unwrap();
    fs::write(store.root().join("README"), b"hi").unwrap();
    fs::create_dir(store.root().join("zz")).unwrap();
    fs::write(store.root().join("zz").join("x".repeat(62)), b"hi").unwrap();

    let mut listed: Vec<ObjectId> = store.iter().map(|r| r.unwrap()).collect();
    listed.sort();
    ids.sort();
    assert_eq!(listed, ids);
    let expected_bytes: u64 = (0..20u64).map(|i| 96 + i * 10).sum();
    assert_eq!(store.usage().unwrap(), (20, expected_bytes));

    assert!(store.remove(&ids[0]).unwrap());
    assert!(!store.contains(&ids[0]).unwrap());
    assert_eq!(store.iter().count(), 19);
}

#[test]
fn iter_on_missing_root_is_empty() {
    let tmp = tempfile::tempdir().unwrap();
    let store = ObjectStore::open(tmp.path().join("objects")).unwrap();
    fs::remove_dir(store.root()).unwrap();
    assert_eq!(store.iter().count(), 0);
    assert_eq!(store.usage().unwrap(), (0, 0));
}

#[test]
fn gc_keeps_live_removes_rest_and_old_temp_files() {
    let (_tmp, store) = store();
    let ids: Vec<ObjectId> = (0..10u8).map(|i| ObjectId::chain(&[&[i]])).collect();
    for id in &ids {
        store.put(id, ObjectKind::Page, &[7u8; 100]).unwrap();
    }
    let live: HashSet<ObjectId> = ids.iter().step_by(2).copied().collect();

    // A stray temp file from a crashed writer (old) and one from a running writer (new).
    let fan = store.object_path(&ids[0]).parent().unwrap().to_path_buf();
    let old_tmp = fan.join(format!("{TEMP_PREFIX}old"));
    let new_tmp = store.root().join(format!("{TEMP_PREFIX}new"));
    fs::write(&old_tmp, [0u8; 50]).unwrap();
    fs::write(&new_tmp, [0u8; 50]).unwrap();
    File::options()
        .write(true)
        .open(&old_tmp)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(120))
        .unwrap();

    let _gc_lock = store.lock_exclusive().unwrap();
    let report = store.gc(&live).unwrap();
    assert_eq!(
        report,
        GcReport {
            removed: 5,
            kept: 5,
            leased: 0,
            temp_removed: 1,
            corrupt_removed: 0,
            bytes_freed: 5 * 196 + 50
        }
    );
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(store.contains(id).unwrap(), i % 2 == 0, "object {i}");
    }
    assert!(!old_tmp.exists());
    assert!(new_tmp.exists());
    assert!(store.lock_path().exists(), "gc leaves the lock file alone");

    // Nothing left to do.
    let again = store.gc(&live).unwrap();
    assert_eq!((again.removed, again.kept), (0, 5));
}

#[test]
fn everything_created_is_private() {
    let (tmp, store) = store();
    let id = ObjectId::hash_of(b"p");
    store.put(&id, ObjectKind::Page, b"p").unwrap();
    let _l = store.lock_shared().unwrap();
    assert_eq!(mode_of(&tmp.path().join("kv")).unwrap(), 0o700);
    assert_eq!(mode_of(store.root()).unwrap(), 0o700);
    let path = store.object_path(&id);
    assert_eq!(mode_of(path.parent().unwrap()).unwrap(), 0o700);
    assert_eq!(mode_of(&path).unwrap(), 0o600);
    assert_eq!(mode_of(&store.lock_path()).unwrap(), 0o600);
}

#[test]
fn put_leaves_no_temp_files() {
    let (_tmp, store) = store();
    let id = ObjectId::hash_of(b"t");
    store
        .put(&id, ObjectKind::Page, &payload(1 << 20, 5))
        .unwrap();
    let dir = store.object_path(&id).parent().unwrap().to_path_buf();
    let names: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1);
}

#[test]
fn an_object_under_another_name_is_caught_and_replaced_on_put() {
    let (_tmp, store) = store();
    let (a, b) = (payload(500, 1), payload(500, 2));
    let (ia, ib) = (ObjectId::hash_of(b"page a"), ObjectId::hash_of(b"page b"));
    store.put(&ia, ObjectKind::Page, &a).unwrap();
    store.put(&ib, ObjectKind::Page, &b).unwrap();
    // A valid object copied over another's file: the checksum holds, the id does not.
    fs::copy(store.object_path(&ia), store.object_path(&ib)).unwrap();
    assert_corrupt(&store, &ib, "copied file");
    let err = store.get(&ib).unwrap_err().to_string();
    assert!(err.contains(&format!("holds object {ia}")), "{err}");
    // put sees the bad header and rewrites; replace rewrites regardless.
    assert!(
        !store
            .put(&ib, ObjectKind::Page, &b)
            .unwrap()
            .already_present
    );
    assert_eq!(store.get(&ib).unwrap(), b);
    let mut bytes = fs::read(store.object_path(&ib)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(store.object_path(&ib), &bytes).unwrap();
    assert!(
        store
            .put(&ib, ObjectKind::Page, &b)
            .unwrap()
            .already_present
    );
    assert_corrupt(&store, &ib, "payload flip");
    store.replace(&ib, ObjectKind::Page, &b).unwrap();
    assert_eq!(store.get(&ib).unwrap(), b);
}

#[test]
fn format_2_objects_are_read_with_their_blake3_and_checked() {
    let (_tmp, store) = store();
    let data = payload(300_000, 5);
    let id = ObjectId::hash_of(&data);
    // An object as kvrun's format 2 wrote it: format 3's layout with blake3.
    let header = Header {
        id,
        kind: ObjectKind::Page,
        payload_len: data.len() as u64,
        checksum_kind: ChecksumKind::Blake3,
        checksum: *blake3::hash(&data).as_bytes(),
    }
    .encode();
    assert_eq!(&header[..8], b"KVROBJ\x00\x02");
    let path = store.object_path(&id);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, [&header[..], &data].concat()).unwrap();
    assert_eq!(store.get(&id).unwrap(), data);
    // Read in parts, as a restore reads a page.
    let mut parts_read = vec![0u8; data.len()];
    let (a, b) = parts_read.split_at_mut(1000);
    let reader = store.open_payload(&id).unwrap();
    reader
        .read_parts(
            vec![PayloadPart::Into(a), PayloadPart::Into(b)],
            2,
            |_| {},
            &mut Default::default(),
        )
        .unwrap();
    assert_eq!(parts_read, data);
    // A present format 2 object is kept, not rewritten.
    assert!(
        store
            .put(&id, ObjectKind::Page, &data)
            .unwrap()
            .already_present
    );
    // Its blake3 still catches a flipped byte.
    let file = OpenOptions::new().write(true).open(&path).unwrap();
    file.write_at(&[data[77_777] ^ 0x20], (HEADER_LEN + 77_777) as u64)
        .unwrap();
    assert_corrupt(&store, &id, "flipped format 2 payload");
}

#[test]
fn format_1_objects_read_as_corrupt_and_gc_deletes_damaged_live_objects() {
    let (_tmp, store) = store();
    let data = payload(300, 3);
    let id = ObjectId::hash_of(&data);
    let other = ObjectId::hash_of(b"other");
    store.put(&id, ObjectKind::Page, &data).unwrap();
    store.put(&other, ObjectKind::Page, &data).unwrap();
    // Rewrite `id` the way kvrun's format 1 did: 64-byte header, no id inside.
    let mut v1 = Vec::new();
    v1.extend_from_slice(b"KVROBJ\x00\x01");
    v1.push(ObjectKind::Page as u8);
    v1.extend_from_slice(&[0; 7]);
    v1.extend_from_slice(&(data.len() as u64).to_le_bytes());
    v1.extend_from_slice(blake3::hash(&data).as_bytes());
    v1.extend_from_slice(&[0; 8]);
    v1.extend_from_slice(&data);
    fs::write(store.object_path(&id), &v1).unwrap();
    let err = store.get(&id).unwrap_err().to_string();
    assert!(err.contains("older kvrun (object format 1)"), "{err}");
    // Both are live, only the damaged one goes.
    let live: HashSet<ObjectId> = [id, other].into_iter().collect();
    let _lock = store.lock_exclusive().unwrap();
    let report = store.gc(&live).unwrap();
    assert_eq!(
        (report.corrupt_removed, report.kept, report.removed),
        (1, 1, 0)
    );
    assert!(!store.contains(&id).unwrap());
    assert_eq!(store.get(&other).unwrap(), data);
}

#[test]
fn links_special_files_and_huge_files_are_not_read() {
    let (tmp, store) = store();
    let data = payload(100, 4);
    let id = ObjectId::hash_of(&data);
    store.put(&id, ObjectKind::Page, &data).unwrap();
    let path = store.object_path(&id);
    // A link to a valid object elsewhere is refused, not followed.
    let elsewhere = tmp.path().join("elsewhere");
    fs::rename(&path, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    assert_corrupt(&store, &id, "symlink");
    fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    assert_corrupt(&store, &id, "link to /dev/zero");
    fs::remove_file(&path).unwrap();
    // A sparse file larger than any object is refused from its size.
    fs::File::create(&path)
        .unwrap()
        .set_len(MAX_OBJECT_BYTES + 1)
        .unwrap();
    assert_corrupt(&store, &id, "sparse huge file");
    // put repairs all of these.
    assert!(
        !store
            .put(&id, ObjectKind::Page, &data)
            .unwrap()
            .already_present
    );
    assert_eq!(store.get(&id).unwrap(), data);
}

#[test]
fn random_mutations_never_panic_nor_read_as_other_bytes() {
    use crate::kv::blob::fake_cache::for_a_while;
    let (_tmp, store) = store();
    let data = payload(2000, 9);
    let id = ObjectId::hash_of(&data);
    store.put(&id, ObjectKind::Tail, &data).unwrap();
    let path = store.object_path(&id);
    let good = fs::read(&path).unwrap();
    let mut buf = Vec::new();
    for_a_while(Duration::from_secs(2), |rng| {
        fs::write(&path, rng.mutate(&good)).unwrap();
        if let Ok(kind) = store.read_into(&id, &mut buf) {
            assert_eq!((kind, &buf), (ObjectKind::Tail, &data));
        }
    });
}

/// A hybrid model's whole state outgrows a page's limit (Qwen3.5-27B's is 1.2 GB at 16k
/// tokens): a state object of that size is read, a page of that size is refused, and
/// nothing a read would refuse is written.
#[test]
fn state_objects_may_be_larger_than_pages_and_nothing_unreadable_is_written() {
    let (_tmp, store) = store();
    let len = MAX_OBJECT_BYTES; // header + payload: just over a page's limit
    for (kind, readable) in [(ObjectKind::State, true), (ObjectKind::Page, false)] {
        let id = ObjectId([kind as u8; 32]);
        let path = store.object_path(&id);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let header = Header {
            id,
            kind,
            payload_len: len,
            checksum_kind: ChecksumKind::Xxh3,
            checksum: [0; 32],
        }
        .encode();
        let file = fs::File::create(&path).unwrap();
        file.write_all_at(&header, 0).unwrap();
        file.set_len(HEADER_LEN as u64 + len).unwrap(); // sparse
        match store.check_header(&id) {
            Ok(()) => assert!(readable, "{kind:?}"),
            Err(e) => {
                assert!(!readable, "{kind:?}: {e}");
                assert!(e.to_string().contains("bytes allowed"), "{e}");
            }
        }
    }
    assert_eq!(ObjectKind::State.max_file_bytes(), MAX_STATE_BYTES);
    // A page just over its limit is refused before anything reaches the disk.
    let big = vec![0u8; MAX_OBJECT_BYTES as usize - HEADER_LEN + 1];
    let id = ObjectId([9; 32]);
    match store.put(&id, ObjectKind::Page, &big) {
        Err(e @ StoreError::TooLarge { .. }) => assert!(!e.to_string().contains('\n'), "{e}"),
        other => panic!("{:?}", other.map(|o| o.written_bytes)),
    }
    assert!(!store.object_path(&id).exists());
}
