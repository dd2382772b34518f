//! Tests for export and import (kept apart so export.rs stays readable).

use std::fs;
use std::path::PathBuf;

use super::super::test_support::{bound_manifest, catalog, object_count};
use super::*;
use crate::store::fsutil::mode_of;

/// A models folder with no model in it.
const NO_MODELS: &str = "/nonexistent/kvrun-test-models";

/// A source catalog with session "orig" (pages, a repeated sliding-window page, a tail) and
/// another session sharing one of its pages.
struct Fixture {
    tmp: tempfile::TempDir,
    src: SessionCatalog,
    orig: SessionManifest,
    objects: Vec<(ObjectId, u8, Vec<u8>)>,
}

fn fixture() -> Fixture {
    let (tmp, src) = catalog();
    let orig = bound_manifest(&src, "orig", 2, &[1], true);
    src.write_manifest(&orig).unwrap();
    // Shares the first page: the same first 16 tokens.
    src.write_manifest(&bound_manifest(&src, "other", 1, &[], false))
        .unwrap();
    let objects = distinct_objects(&orig)
        .iter()
        .map(|id| {
            let mut payload = Vec::new();
            let kind = src.store().read_into(id, &mut payload).unwrap();
            (*id, kind as u8, payload)
        })
        .collect();
    Fixture {
        tmp,
        src,
        orig,
        objects,
    }
}

impl Fixture {
    fn path(&self, name: &str) -> PathBuf {
        self.tmp.path().join(name)
    }

    fn export(&self) -> (PathBuf, Vec<u8>) {
        let file = self.path("orig.kvrexp");
        let report = export(&self.src, "orig", &file).unwrap();
        let bytes = fs::read(&file).unwrap();
        assert_eq!(report.objects, 4);
        assert_eq!(report.bytes, bytes.len() as u64);
        (file, bytes)
    }

    fn manifest_bytes(&self) -> Vec<u8> {
        fs::read(self.src.manifest_path("orig")).unwrap()
    }
}

/// Builds an export by hand, with every checksum correct; `count` overrides the count field.
fn encode(manifest: &[u8], objects: &[(ObjectId, u8, Vec<u8>)], count: Option<u32>) -> Vec<u8> {
    let mut out = EXPORT_MAGIC.to_vec();
    out.extend((manifest.len() as u64).to_le_bytes());
    out.extend(manifest);
    out.extend(count.unwrap_or(objects.len() as u32).to_le_bytes());
    for (id, kind, payload) in objects {
        out.extend(id.0);
        out.push(*kind);
        out.extend((payload.len() as u64).to_le_bytes());
        out.extend(payload);
        out.extend(blake3::hash(payload).as_bytes());
    }
    seal(out)
}

fn seal(mut body: Vec<u8>) -> Vec<u8> {
    let sum = blake3::hash(&body);
    body.extend(sum.as_bytes());
    body
}

/// The target holds nothing: no object, no session folder, no lock file.
fn assert_untouched(target: &SessionCatalog) {
    assert_eq!(object_count(target), 0);
    let entries: Vec<_> = fs::read_dir(target.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(entries, [".locks"]);
    assert_eq!(
        fs::read_dir(target.dir().join(".locks")).unwrap().count(),
        0
    );
}

/// Imports `bytes` into `target` and expects an Export error; returns its message.
fn rejected(target: &SessionCatalog, file: &Path, bytes: &[u8]) -> String {
    fs::write(file, bytes).unwrap();
    match import(target, file, Some("copy"), NO_MODELS.as_ref(), None) {
        Err(e @ SessionError::Export { .. }) => {
            let msg = e.to_string();
            assert!(!msg.contains('\n'), "{msg}");
            assert!(msg.contains(&file.display().to_string()), "{msg}");
            msg
        }
        other => panic!("expected an Export error, got {other:?}"),
    }
}

#[test]
fn export_import_round_trip_under_another_name() {
    let fx = fixture();
    let (file, bytes) = fx.export();
    assert_eq!(mode_of(&file).unwrap(), 0o600);
    // The format is exactly the documented one, manifest bytes as stored.
    assert_eq!(bytes, encode(&fx.manifest_bytes(), &fx.objects, None));

    let (_t, target) = catalog();
    assert_eq!(
        import(&target, &file, Some("copy"), NO_MODELS.as_ref(), None).unwrap(),
        "copy"
    );
    let mut expected = fx.orig.clone();
    expected.name = "copy".into();
    // No model of that fingerprint here: the path is left for --model to settle.
    expected.model.path = String::new();
    assert_eq!(target.read_manifest("copy").unwrap(), expected);
    for (id, kind, payload) in &fx.objects {
        let mut got = Vec::new();
        assert_eq!(target.store().read_into(id, &mut got).unwrap() as u8, *kind);
        assert_eq!(&got, payload);
    }
    assert_eq!(object_count(&target), 4);

    // Without a name the file's own name is used; an existing name is refused.
    assert_eq!(
        import(&target, &file, None, NO_MODELS.as_ref(), None).unwrap(),
        "orig"
    );
    expected.name = "orig".into();
    assert_eq!(target.read_manifest("orig").unwrap(), expected);
    let err = import(&target, &file, None, NO_MODELS.as_ref(), None).unwrap_err();
    assert!(matches!(err, SessionError::Exists { .. }), "{err}");

    // Into the source catalog: its objects are already there, nothing is duplicated.
    let before = object_count(&fx.src);
    let err = import(&fx.src, &file, Some("other"), NO_MODELS.as_ref(), None).unwrap_err();
    assert!(matches!(err, SessionError::Exists { .. }), "{err}");
    assert_eq!(
        import(&fx.src, &file, Some("again"), NO_MODELS.as_ref(), None).unwrap(),
        "again"
    );
    assert_eq!(object_count(&fx.src), before);

    let _held = target.lock("busy").unwrap();
    let err = import(&target, &file, Some("busy"), NO_MODELS.as_ref(), None).unwrap_err();
    assert!(matches!(err, SessionError::InUse { .. }), "{err}");
    assert!(!target.exists("busy").unwrap());
    assert!(
        import(&target, &file, Some("bad/name"), NO_MODELS.as_ref(), None)
            .unwrap_err()
            .is_usage()
    );
}

#[test]
fn every_truncation_is_rejected_and_writes_nothing() {
    let fx = fixture();
    let (_, bytes) = fx.export();
    let (_t, target) = catalog();
    let file = fx.path("cut.kvrexp");
    for len in 0..bytes.len() {
        rejected(&target, &file, &bytes[..len]);
    }
    let mut longer = bytes.clone();
    longer.push(0);
    rejected(&target, &file, &longer);
    assert_untouched(&target);
    // Sanity: the untruncated file does import.
    fs::write(&file, &bytes).unwrap();
    import(&target, &file, Some("copy"), NO_MODELS.as_ref(), None).unwrap();
}

#[test]
fn bit_flips_are_rejected_and_write_nothing() {
    let fx = fixture();
    let (_, bytes) = fx.export();
    let (_t, target) = catalog();
    let file = fx.path("flip.kvrexp");
    // One flip in every byte, cycling through the bit positions...
    for i in 0..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 1 << (i % 8);
        rejected(&target, &file, &bad);
    }
    // ...and random pairs of flips (xorshift, fixed seed: reproducible).
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..300 {
        let mut bad = bytes.clone();
        for _ in 0..2 {
            let r = next();
            bad[(r % bytes.len() as u64) as usize] ^= 1 << ((r >> 32) % 8);
        }
        if bad != bytes {
            rejected(&target, &file, &bad);
        }
    }
    assert_untouched(&target);
}

#[test]
fn well_checksummed_but_inconsistent_files_are_rejected() {
    let fx = fixture();
    let manifest = fx.manifest_bytes();
    let objs = &fx.objects;
    let (_t, target) = catalog();
    let file = fx.path("crafted.kvrexp");
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (encode(&manifest, &objs[..3], None), "does not hold"),
        (
            encode(
                &manifest,
                &[objs.clone(), vec![(ObjectId([9; 32]), 3, vec![1, 2, 3])]].concat(),
                None,
            ),
            "is not referenced",
        ),
        (
            encode(
                &manifest,
                &[objs.clone(), vec![objs[1].clone()]].concat(),
                None,
            ),
            "appears twice",
        ),
        (encode(&manifest, objs, Some(u32::MAX)), "object count"),
        (encode(&manifest, objs, Some(5)), "runs past the end"),
        (encode(&manifest, objs, Some(3)), "unexpected bytes"),
        (
            encode(
                &manifest,
                &[
                    vec![(objs[0].0, 0x07, objs[0].2.clone())],
                    objs[1..].to_vec(),
                ]
                .concat(),
                None,
            ),
            "unknown kind",
        ),
        (
            encode(b"kvrun-session 1 00\n{}", &[], None),
            "manifest: malformed checksum",
        ),
        (
            encode(b"", &[], None),
            "manifest: no `kvrun-session` header",
        ),
        (seal(b"KVREXP02rest".to_vec()), "export format 02"),
        (b"PK\x03\x04 a zip file, say".to_vec(), "bad magic"),
    ];
    for (bytes, want) in cases {
        let msg = rejected(&target, &file, &bytes);
        assert!(msg.contains(want), "want {want:?}: {msg}");
    }

    // Lengths far beyond the file, with a valid file checksum: refused before allocating.
    let mut body = EXPORT_MAGIC.to_vec();
    body.extend(u64::MAX.to_le_bytes());
    body.extend([0u8; 64]);
    let msg = rejected(&target, &file, &seal(body));
    assert!(msg.contains("manifest length"), "{msg}");
    let mut huge_payload = encode(&manifest, &objs[..1], None);
    huge_payload.truncate(huge_payload.len() - 32);
    let at = 8 + 8 + manifest.len() + 4 + 33;
    huge_payload[at..at + 8].copy_from_slice(&(u64::MAX - 7).to_le_bytes());
    let msg = rejected(&target, &file, &seal(huge_payload));
    assert!(msg.contains("payload length"), "{msg}");

    // A payload that does not match its own checksum, file checksum recomputed.
    let mut body = encode(&manifest, objs, None);
    body.truncate(body.len() - 32);
    let at = 8 + 8 + manifest.len() + 4 + 41;
    body[at] ^= 0xff;
    let msg = rejected(&target, &file, &seal(body));
    assert!(msg.contains("payload checksum mismatch"), "{msg}");
    assert!(msg.contains(&objs[0].0.to_string()), "{msg}");
    assert_untouched(&target);
}

#[test]
fn export_of_a_damaged_session_fails_without_a_file() {
    let fx = fixture();
    let tail = fx.objects[3].0;
    fx.src.store().remove(&tail).unwrap();
    let file = fx.path("out.kvrexp");
    let err = export(&fx.src, "orig", &file).unwrap_err();
    assert!(matches!(err, SessionError::Object { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("'orig'") && msg.contains(&tail.to_string()),
        "{msg}"
    );
    assert!(!file.exists());
    // Only the home folder: no temp file left beside the destination.
    assert_eq!(fs::read_dir(fx.tmp.path()).unwrap().count(), 1);
    assert!(matches!(
        export(&fx.src, "nope", &file),
        Err(SessionError::NotFound { .. })
    ));
}

#[test]
fn an_export_whose_log_does_not_match_its_pages_is_refused() {
    let fx = fixture();
    let (_t, target) = catalog();
    let file = fx.path("planted.kvrexp");
    // "Paris" over "Rome": one token of the log edited, every checksum recomputed.
    let mut planted = fx.orig.clone();
    planted.tokens[20] += 1;
    let manifest = super::super::manifest_file::encode_manifest(&planted).unwrap();
    let msg = rejected(&target, &file, &encode(&manifest, &fx.objects, None));
    assert!(msg.contains("not those of its token log"), "{msg}");
    assert!(msg.contains("page 1"), "{msg}");
    // Two page ids swapped in the manifest (and the objects listed to match).
    let mut swapped = fx.orig.clone();
    swapped.snapshot.as_mut().unwrap().pages.swap(0, 1);
    let manifest = super::super::manifest_file::encode_manifest(&swapped).unwrap();
    let msg = rejected(&target, &file, &encode(&manifest, &fx.objects, None));
    assert!(msg.contains("page 0"), "{msg}");
    assert_untouched(&target);
}

#[test]
fn an_imported_model_path_is_never_used_and_special_files_are_refused() {
    let fx = fixture();
    let (_t, target) = catalog();
    let mut crafted = fx.orig.clone();
    crafted.model.path = "/etc/shadow".into();
    let manifest = super::super::manifest_file::encode_manifest(&crafted).unwrap();
    let file = fx.path("crafted.kvrexp");
    fs::write(&file, encode(&manifest, &fx.objects, None)).unwrap();
    import(&target, &file, Some("copy"), NO_MODELS.as_ref(), None).unwrap();
    assert_eq!(target.read_manifest("copy").unwrap().model.path, "");

    // A FIFO is refused at once (no writer would ever come), and so is a device.
    let fifo = fx.path("fifo.kvrexp");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.unwrap().success());
    let (_t2, other) = catalog();
    for special in [fifo.as_path(), "/dev/zero".as_ref()] {
        let err = import(&other, special, Some("x"), NO_MODELS.as_ref(), None).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }
    assert_untouched(&other);
}

#[test]
fn random_mutations_of_an_export_never_panic_nor_scan_as_another_session() {
    use crate::kv::blob::fake_cache::for_a_while;
    let fx = fixture();
    let (_file, bytes) = fx.export();
    let file = fx.path("mutated.kvrexp");
    for_a_while(std::time::Duration::from_secs(2), |rng| {
        fs::write(&file, rng.mutate(&bytes)).unwrap();
        if let Ok(scanned) = scan(&file) {
            assert_eq!(scanned.manifest, fx.orig);
            let ids: Vec<_> = scanned.objects.iter().map(|o| o.id).collect();
            assert_eq!(ids, distinct_objects(&fx.orig));
        }
    });
}

/// gc run in the window between an import's objects and its manifest (the objects stored,
/// no manifest naming them yet) waits for the import's shared lock and removes nothing the
/// session names.
#[test]
fn gc_racing_an_import_between_objects_and_manifest_removes_nothing_named() {
    let fx = fixture();
    let (file, _) = fx.export();
    let (tmp, target) = catalog();
    let home = tmp.path().join("home");
    let (sent, gc) = std::sync::mpsc::channel();
    race_point::set(
        "raced",
        Box::new(move || {
            let racer = std::thread::spawn(move || {
                let other = SessionCatalog::open(&crate::paths::Paths::under(&home)).unwrap();
                other.gc().unwrap()
            });
            // Long enough for an unlocked gc of a few objects to finish its deletes.
            std::thread::sleep(std::time::Duration::from_millis(300));
            sent.send(racer).unwrap();
        }),
    );
    import(&target, &file, Some("raced"), NO_MODELS.as_ref(), None).unwrap();
    let report = gc.recv().unwrap().join().unwrap();
    assert_eq!(report.removed, 0, "{report:?}");
    let manifest = target.read_manifest("raced").unwrap();
    let named = distinct_objects(&manifest);
    assert_eq!(named.len(), 4);
    for id in named {
        target.store().read_into(&id, &mut Vec::new()).unwrap();
    }
}
