//! Tests for [`super::SessionCatalog`] (kept apart so catalog.rs stays readable).

use super::super::test_support::{catalog, manifest, object_count, put_object};
use super::*;
use crate::store::fsutil::mode_of;

fn assert_one_line_naming(err: &SessionError, name: &str) {
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "{msg}");
    assert!(msg.contains(&format!("'{name}'")), "{msg}");
}

/// Overwrites a session's manifest file with `bytes` (the folder is created if needed).
fn plant(catalog: &SessionCatalog, name: &str, bytes: &[u8]) {
    fs::create_dir_all(catalog.session_dir(name)).unwrap();
    fs::write(catalog.manifest_path(name), bytes).unwrap();
}

fn corrupt_detail(catalog: &SessionCatalog, name: &str) -> String {
    match catalog.read_manifest(name) {
        Err(e @ SessionError::Corrupt { .. }) => {
            assert_one_line_naming(&e, name);
            e.reason()
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

/// A manifest file with a correct checksum over arbitrary JSON.
fn with_header(format: &str, json: &[u8]) -> Vec<u8> {
    let mut out = format!("kvrun-session {format} {}\n", blake3::hash(json).to_hex()).into_bytes();
    out.extend_from_slice(json);
    out
}

/// Sessions saved before kvrun recorded the chat template (or the last cache miss) load,
/// with both unknown; recorded ones come back as written.
#[test]
fn manifests_without_the_later_fields_load() {
    let (_tmp, cat) = catalog();
    let m = manifest("old", &[], &[], None);
    let mut json = serde_json::to_value(&m).unwrap();
    let fields = json.as_object_mut().unwrap();
    for key in ["chat_template", "cache_miss"] {
        assert!(
            fields.remove(key).is_none(),
            "{key} is written when unknown"
        );
    }
    plant(&cat, "old", &with_header("1", json.to_string().as_bytes()));
    let read = cat.read_manifest("old").unwrap();
    assert_eq!((read.chat_template, read.cache_miss), (None, None));

    let mut recorded = m.clone();
    recorded.name = "new".into();
    recorded.chat_template = Some(crate::template::TemplateIdentity {
        name: "tokenizer.chat_template".into(),
        hash: "0123456789abcdef".into(),
    });
    recorded.cache_miss = Some(crate::session::CacheMiss {
        position: 7,
        byte: 30,
        before: "<|im_start|>assistant\n<think>".into(),
        after: "<|im_start|>assistant\nok".into(),
        reason: crate::session::MissReason::HistoryRewritten,
    });
    cat.write_manifest(&recorded).unwrap();
    assert_eq!(cat.read_manifest("new").unwrap(), recorded);
}

#[test]
fn manifest_round_trip_layout_and_permissions() {
    let (_tmp, cat) = catalog();
    let (p, t) = (put_object(&cat, 2, 300), put_object(&cat, 3, 50));
    let m = manifest("work-1.a_b", &[p], &[(0, p)], Some(t));
    assert!(!cat.exists("work-1.a_b").unwrap());
    cat.write_manifest(&m).unwrap();
    assert!(cat.exists("work-1.a_b").unwrap());
    assert_eq!(cat.read_manifest("work-1.a_b").unwrap(), m);

    let raw = fs::read(cat.manifest_path("work-1.a_b")).unwrap();
    let header = format!(
        "kvrun-session {MANIFEST_FORMAT} {}\n",
        blake3::hash(&raw[raw.iter().position(|&b| b == b'\n').unwrap() + 1..]).to_hex()
    );
    assert!(raw.starts_with(header.as_bytes()));

    // Rewrite in place: still one file, no temp file left behind.
    let mut m2 = m.clone();
    m2.tokens.push(7);
    cat.write_manifest(&m2).unwrap();
    assert_eq!(cat.read_manifest("work-1.a_b").unwrap(), m2);
    let names: Vec<_> = fs::read_dir(cat.session_dir("work-1.a_b"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![MANIFEST_FILE]);

    // A manifest this kvrun could not read back is refused, not written.
    let mut future = m2.clone();
    future.format = MANIFEST_FORMAT + 1;
    let err = cat.write_manifest(&future).unwrap_err();
    assert!(err.to_string().contains("refusing"), "{err}");
    assert_eq!(cat.read_manifest("work-1.a_b").unwrap(), m2);

    let _lock = cat.lock("work-1.a_b").unwrap();
    assert_eq!(mode_of(cat.dir()).unwrap(), 0o700);
    assert_eq!(mode_of(&cat.dir().join(LOCK_DIR)).unwrap(), 0o700);
    assert_eq!(mode_of(&cat.session_dir("work-1.a_b")).unwrap(), 0o700);
    assert_eq!(mode_of(&cat.manifest_path("work-1.a_b")).unwrap(), 0o600);
    assert_eq!(mode_of(&cat.lock_path("work-1.a_b")).unwrap(), 0o600);
}

#[test]
fn names_are_validated_everywhere() {
    for ok in ["a", "A9", "my-session_1.2", "x.", &"n".repeat(64)] {
        validate_name(ok).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for bad in [
        "",
        ".",
        "..",
        ".hidden",
        "-flag",
        "a/b",
        "../x",
        "a b",
        "tab\t",
        "ü",
        "a\nb",
        &"n".repeat(65),
    ] {
        let err = validate_name(bad).unwrap_err();
        assert!(err.is_usage(), "{bad}");
        assert!(!err.to_string().contains('\n'), "{err}");
    }
    let (_tmp, cat) = catalog();
    assert!(cat.read_manifest("../etc").unwrap_err().is_usage());
    assert!(cat.exists("a/b").unwrap_err().is_usage());
    assert!(cat.lock(".locks").unwrap_err().is_usage());
    assert!(cat.remove("").unwrap_err().is_usage());
    assert!(cat.fork("a", "-b").unwrap_err().is_usage());
    let mut m = manifest("x", &[], &[], None);
    m.name = "bad name".into();
    assert!(cat.write_manifest(&m).unwrap_err().is_usage());
}

#[test]
fn missing_session_is_not_found() {
    let (_tmp, cat) = catalog();
    let err = cat.read_manifest("nope").unwrap_err();
    assert!(matches!(err, SessionError::NotFound { .. }));
    assert_eq!(
        err.to_string(),
        "no session named 'nope'; `kvrun session ls` lists them"
    );
    assert!(!err.is_usage());
    assert!(matches!(
        cat.remove("nope"),
        Err(SessionError::NotFound { .. })
    ));
    // A typo does not leave a lock file behind.
    assert!(!cat.lock_path("nope").exists());
}

#[test]
fn corrupt_manifests_are_detected() {
    let (_tmp, cat) = catalog();
    let good = encode_manifest(&manifest("s", &[], &[], None)).unwrap();
    plant(&cat, "s", &good);
    cat.read_manifest("s").unwrap();

    // A flipped byte in the JSON, and one in the checksum itself.
    let mut flipped = good.clone();
    let last = flipped.len() - 3;
    flipped[last] ^= 0x01;
    plant(&cat, "s", &flipped);
    assert!(corrupt_detail(&cat, "s").contains("checksum mismatch"));
    let mut flipped = good.clone();
    flipped[20] = if flipped[20] == b'0' { b'1' } else { b'0' };
    plant(&cat, "s", &flipped);
    assert!(corrupt_detail(&cat, "s").contains("checksum"));

    // Truncations: every prefix is rejected, none panics.
    for len in 0..good.len() {
        plant(&cat, "s", &good[..len]);
        corrupt_detail(&cat, "s");
    }

    plant(&cat, "s", b"{\"format\": 1}");
    assert!(corrupt_detail(&cat, "s").contains("header"));
    plant(
        &cat,
        "s",
        &with_header("1", b"{\"format\": 1}").replace_prefix(b"kvrun-sesion"),
    );
    assert!(corrupt_detail(&cat, "s").contains("header"));
    plant(&cat, "s", &with_header("+1", b"{}"));
    assert!(corrupt_detail(&cat, "s").contains("format"));
    plant(&cat, "s", &with_header("1", b"{ not json"));
    assert!(corrupt_detail(&cat, "s").contains("invalid manifest"));

    // A checksummed manifest in the wrong folder.
    plant(
        &cat,
        "s",
        &encode_manifest(&manifest("other", &[], &[], None)).unwrap(),
    );
    assert!(corrupt_detail(&cat, "s").contains("\"other\""));

    // Header and JSON disagree on the format.
    let json =
        String::from_utf8(good[good.iter().position(|&b| b == b'\n').unwrap() + 1..].to_vec())
            .unwrap();
    plant(&cat, "s", &with_header("2", json.as_bytes()));
    assert!(corrupt_detail(&cat, "s").contains("format 2"));
}

#[test]
fn newer_format_is_too_new() {
    let (_tmp, cat) = catalog();
    plant(
        &cat,
        "s",
        &with_header("7", br#"{"format": 7, "name": "s", "whatever": []}"#),
    );
    let err = cat.read_manifest("s").unwrap_err();
    assert!(
        matches!(err, SessionError::TooNew { format: 7, .. }),
        "{err}"
    );
    assert_one_line_naming(&err, "s");
    assert!(err.to_string().contains("upgrade kvrun"));
}

trait ReplacePrefix {
    fn replace_prefix(self, with: &[u8]) -> Vec<u8>;
}

impl ReplacePrefix for Vec<u8> {
    fn replace_prefix(mut self, with: &[u8]) -> Vec<u8> {
        self.splice(..with.len(), with.iter().copied());
        self
    }
}

#[test]
fn list_survives_a_corrupt_session() {
    let (_tmp, cat) = catalog();
    let (p1, p2, t) = (
        put_object(&cat, 2, 1000),
        put_object(&cat, 4, 1000),
        put_object(&cat, 5, 10),
    );
    cat.write_manifest(&manifest("b", &[p1, p2], &[], Some(t)))
        .unwrap();
    cat.write_manifest(&manifest("a", &[], &[], None)).unwrap();
    plant(&cat, "c", b"garbage");
    // Not sessions: a folder without a manifest, a stray file, an invalid name.
    fs::create_dir(cat.session_dir("empty")).unwrap();
    fs::write(cat.dir().join("file"), b"x").unwrap();
    fs::create_dir(cat.dir().join(".trash")).unwrap();

    let rows = cat.list().unwrap();
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert_eq!(rows[0].objects, 0);
    assert_eq!(rows[0].bytes, 0);
    let b = &rows[1];
    assert_eq!(b.error, None);
    assert_eq!((b.tokens, b.kv_tokens, b.pages, b.objects), (37, 36, 2, 3));
    assert_eq!(b.model, "tiny");
    assert_eq!(b.updated_unix, 1_700_000_100);
    assert_eq!(b.bytes, 96 * 3 + 2010);
    assert_eq!((b.shared_bytes, b.missing_objects), (0, 0));
    let c = &rows[2];
    assert!(
        c.error.as_deref().unwrap().contains("'c' is corrupt"),
        "{c:?}"
    );
    assert_eq!(c.bytes, 0);
}

#[test]
fn refcounts_and_shared_bytes() {
    let (_tmp, cat) = catalog();
    let (p1, p2) = (put_object(&cat, 2, 1000), put_object(&cat, 4, 2000));
    let (t1, t2) = (put_object(&cat, 5, 10), put_object(&cat, 7, 20));
    // `a` names p1 twice (page and sliding-window page): still one reference.
    cat.write_manifest(&manifest("a", &[p1, p2], &[(0, p1)], Some(t1)))
        .unwrap();
    cat.write_manifest(&manifest("b", &[p1, p2], &[], Some(t2)))
        .unwrap();
    let refs = cat.refcounts().unwrap();
    assert_eq!(refs.len(), 4);
    assert_eq!((refs[&p1], refs[&p2], refs[&t1], refs[&t2]), (2, 2, 1, 1));
    assert_eq!(cat.live_set().unwrap(), HashSet::from([p1, p2, t1, t2]));

    let rows = cat.list().unwrap();
    assert_eq!(rows[0].objects, 3);
    assert_eq!(rows[0].bytes, 1096 + 2096 + 106);
    assert_eq!(rows[0].shared_bytes, 1096 + 2096);
    assert_eq!(rows[1].bytes, 1096 + 2096 + 116);
    assert_eq!(rows[1].shared_bytes, 1096 + 2096);

    // A missing object is counted, not fatal.
    cat.store().remove(&t2).unwrap();
    let rows = cat.list().unwrap();
    assert_eq!((rows[1].missing_objects, rows[1].bytes), (1, 1096 + 2096));
}

#[test]
fn fork_copies_no_object_and_is_independent() {
    let (_tmp, cat) = catalog();
    let (p, t) = (put_object(&cat, 2, 500), put_object(&cat, 3, 10));
    let src = manifest("src", &[p], &[], Some(t));
    cat.write_manifest(&src).unwrap();
    let before = object_count(&cat);

    let forked = cat.fork("src", "dst").unwrap();
    assert_eq!(object_count(&cat), before);
    assert_eq!(cat.read_manifest("dst").unwrap(), forked);
    assert_eq!(forked.name, "dst");
    assert!(forked.created_unix >= src.updated_unix);
    let mut expected = src.clone();
    expected.name = "dst".into();
    expected.created_unix = forked.created_unix;
    expected.updated_unix = forked.updated_unix;
    assert_eq!(forked, expected);

    let mut changed = forked.clone();
    changed.tokens.truncate(3);
    changed.snapshot = None;
    cat.write_manifest(&changed).unwrap();
    assert_eq!(cat.read_manifest("src").unwrap(), src);
    assert_eq!(cat.refcounts().unwrap()[&p], 1);

    assert!(matches!(
        cat.fork("src", "dst"),
        Err(SessionError::Exists { .. })
    ));
    assert!(matches!(
        cat.fork("src", "src"),
        Err(SessionError::Exists { .. })
    ));
    assert!(matches!(
        cat.fork("nope", "x"),
        Err(SessionError::NotFound { .. })
    ));
    let _held = cat.lock("src").unwrap();
    let err = cat.fork("src", "x").unwrap_err();
    assert!(matches!(err, SessionError::InUse { .. }), "{err}");
    assert!(!cat.exists("x").unwrap());
}

#[test]
fn remove_keeps_shared_pages_and_deletes_the_rest() {
    let (_tmp, cat) = catalog();
    let shared = put_object(&cat, 2, 800);
    let (only_a, tail_a) = (put_object(&cat, 4, 800), put_object(&cat, 5, 10));
    let tail_b = put_object(&cat, 7, 10);
    cat.write_manifest(&manifest("a", &[shared, only_a], &[], Some(tail_a)))
        .unwrap();
    cat.write_manifest(&manifest("b", &[shared], &[], Some(tail_b)))
        .unwrap();

    let report = cat.remove("a").unwrap();
    let gc = report.gc.unwrap();
    assert_eq!((gc.removed, gc.kept), (2, 2));
    assert_eq!(gc.bytes_freed, 896 + 106);
    assert!(!cat.session_dir("a").exists());
    assert!(cat.lock_path("a").exists(), "lock files are never deleted");
    assert!(!cat.exists("a").unwrap());
    assert!(cat.store().contains(&shared).unwrap());
    assert!(cat.store().contains(&tail_b).unwrap());
    assert!(!cat.store().contains(&only_a).unwrap());
    assert!(!cat.store().contains(&tail_a).unwrap());
    let names: Vec<_> = cat.list().unwrap().into_iter().map(|r| r.name).collect();
    assert_eq!(names, ["b"]);

    // A corrupt session can be removed; a session in use cannot.
    plant(&cat, "bad", b"junk");
    cat.remove("bad").unwrap().gc.unwrap();
    let _held = cat.lock("b").unwrap();
    let err = cat.remove("b").unwrap_err();
    assert!(matches!(err, SessionError::InUse { .. }), "{err}");
    assert!(cat.exists("b").unwrap());
}

#[test]
fn an_unreadable_manifest_is_skipped_and_hurts_no_other_session() {
    let (_tmp, cat) = catalog();
    let kept = put_object(&cat, 2, 100);
    let orphan = put_object(&cat, 4, 100);
    let gone = put_object(&cat, 6, 100);
    cat.write_manifest(&manifest("a", &[kept], &[], None))
        .unwrap();
    cat.write_manifest(&manifest("b", &[gone], &[], None))
        .unwrap();
    plant(&cat, "broken", b"kvrun-session 1 00\n{}");

    assert_eq!(cat.live_set().unwrap(), [kept, gone].into_iter().collect());
    assert_eq!(cat.refcounts().unwrap().len(), 2);
    let rows = cat.list().unwrap();
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().any(|r| r.name == "broken" && r.error.is_some()));
    assert!(rows
        .iter()
        .filter(|r| r.error.is_none())
        .all(|r| r.objects == 1));
    assert_eq!(cat.collect_unreferenced(&[orphan]).unwrap().removed, 1);
    // Removing another session still collects its pages.
    let report = cat.remove("b").unwrap();
    assert_eq!(report.gc.unwrap().removed, 1);
    assert!(!cat.store().contains(&gone).unwrap());
    assert!(cat.store().contains(&kept).unwrap());
    assert_eq!(cat.read_manifest("a").unwrap().name, "a");

    let msg = SessionError::Unreadable {
        name: "broken".into(),
        detail: "checksum mismatch".into(),
    };
    assert_one_line_naming(&msg, "broken");
    cat.remove("broken").unwrap().gc.unwrap();
    assert_eq!(cat.gc().unwrap().removed, 0);
}

#[test]
fn collect_unreferenced_deletes_only_unnamed_candidates() {
    let (_tmp, cat) = catalog();
    let (live, old, other) = (
        put_object(&cat, 2, 100),
        put_object(&cat, 4, 100),
        put_object(&cat, 6, 100),
    );
    cat.write_manifest(&manifest("a", &[live], &[], None))
        .unwrap();
    let report = cat.collect_unreferenced(&[live, old, old]).unwrap();
    assert_eq!(
        (report.removed, report.kept, report.bytes_freed),
        (1, 1, 196)
    );
    assert!(cat.store().contains(&live).unwrap());
    assert!(!cat.store().contains(&old).unwrap());
    // Not a candidate: left for a full gc.
    assert!(cat.store().contains(&other).unwrap());
    assert_eq!(cat.collect_unreferenced(&[]).unwrap(), GcReport::default());
}

#[test]
fn second_lock_holder_gets_in_use_with_pid() {
    let (_tmp, cat) = catalog();
    let held = cat.lock("s").unwrap();
    let err = cat.lock("s").unwrap_err();
    assert!(matches!(err, SessionError::InUse { .. }));
    assert_eq!(
        err.to_string(),
        format!(
            "session 's' is in use by another kvrun process: held by kvrun (pid {})",
            std::process::id()
        )
    );
    // Another session is independent.
    let _other = cat.lock("t").unwrap();
    drop(held);
    cat.lock("s").unwrap();
}

#[test]
fn store_errors_lift_disk_full() {
    let path = PathBuf::from("/x/y");
    let err = SessionError::from(StoreError::DiskFull { path: path.clone() });
    assert!(matches!(err, SessionError::DiskFull { .. }));
    assert!(err.to_string().starts_with("disk full while writing /x/y;"));
    let err = SessionError::io(&path, io::Error::from_raw_os_error(28));
    assert!(matches!(err, SessionError::DiskFull { .. }));
}

#[test]
fn a_symlinked_lock_folder_is_refused_and_nothing_lands_where_it_points() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(home.join("sessions")).unwrap();
    fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, home.join("sessions").join(LOCK_DIR)).unwrap();
    let err = SessionCatalog::open(&Paths::under(&home)).unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(!err.to_string().contains('\n'), "{err}");
    // Replaced after the catalog was opened: taking a lock refuses it too.
    let (_tmp, cat) = catalog();
    let locks = cat.dir.join(LOCK_DIR);
    fs::remove_dir(&locks).unwrap();
    std::os::unix::fs::symlink(&outside, &locks).unwrap();
    let err = cat.lock("s").unwrap_err();
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
}
