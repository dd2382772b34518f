//! A KV object is used only as the KV of the tokens its session's log holds: swapped or
//! copied page files, swapped ids, edited logs and damaged objects of every kind are caught,
//! recomputed exactly as the undamaged session would compute, and repaired. One session's
//! damage never hurts another, and nothing inside the home is followed out of it.

use std::path::Path;

use crate::common::inproc::{uninterrupted, THREADS};
use crate::common::*;

fn turn(home: &Home, model: &Path, text: &str) -> std::process::Output {
    turn_with(home, model, text, &[])
}

fn turn_with(home: &Home, model: &Path, text: &str, extra: &[&str]) -> std::process::Output {
    greedy_session_turn(home, model, "s", text, "6", extra)
}

fn check(home: &Home, name: &str) -> std::process::Output {
    home.run(&[
        "session", "restore", name, "--check", "--json", "-t", THREADS,
    ])
}

/// A copy of a whole home (sessions, store), so one prefill serves several damaged copies.
fn copy_home(src: &Home) -> Home {
    fn copy_dir(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_dir(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), &target).unwrap();
            }
        }
    }
    let home = Home::new();
    copy_dir(src.path(), home.path());
    home
}

/// The object ids of session `s`: pages, sliding-window rows, tail.
fn snapshot_ids(home: &Home) -> (Vec<String>, Vec<String>, Option<String>) {
    let m = manifest_json(home, "s");
    let snap = &m["snapshot"];
    let ids = |v: &serde_json::Value| v.as_str().unwrap().to_string();
    (
        snap["pages"].as_array().unwrap().iter().map(ids).collect(),
        snap["swa_pages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| ids(&p[1]))
            .collect(),
        snap["tail"].as_str().map(str::to_string),
    )
}

/// Rewrites session `s`'s manifest JSON through `edit`, with a correct header checksum.
fn edit_manifest(home: &Home, edit: impl FnOnce(&mut serde_json::Value)) {
    let mut m = manifest_json(home, "s");
    edit(&mut m);
    let json = serde_json::to_vec(&m).unwrap();
    let mut bytes = format!("kvrun-session 1 {}\n", blake3::hash(&json).to_hex()).into_bytes();
    bytes.extend_from_slice(&json);
    std::fs::write(home.path().join("sessions/s/session.kvrun"), bytes).unwrap();
}

fn json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", stderr(out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A session of several pages on `model`, saved by one turn.
fn saved_session(model: &Path) -> Home {
    let home = Home::new();
    json(&turn(&home, model, &long_text(2)));
    home
}

/// The greedy tokens and log-probabilities a recovered turn must equal, bit for bit.
struct Expected {
    tokens: Vec<i64>,
    logprobs: Vec<f32>,
}

/// Damages a copy of `base` with `damage`, then checks that `--check` reports it, that the
/// next turn equals `expected` exactly where the damage lost an object (`recomputes`: it
/// recomputes more than the undamaged session's turn `reference` did) and `reference`
/// exactly where it did not, and that the save after it repaired the store (the next check
/// is clean).
fn recovers_like_undamaged(
    base: &Home,
    model: &Path,
    expected: &Expected,
    reference: &serde_json::Value,
    what: &str,
    recomputes: bool,
    damage: impl FnOnce(&Home),
) {
    let home = copy_home(base);
    damage(&home);
    let out = check(&home, "s");
    assert!(!out.status.success(), "{what}: --check missed it");
    let err = stderr(&out);
    assert!(err.contains("session 's'"), "{what}: {err}");
    let v = json(&turn(&home, model, " and then"));
    // Damage that loses nothing (ids put right from the log) restores as the undamaged
    // session does.
    let undamaged = Expected {
        tokens: tokens(reference),
        logprobs: logprobs(reference),
    };
    let expected = if recomputes { expected } else { &undamaged };
    assert_eq!(
        tokens(&v),
        expected.tokens,
        "{what}: recovery changed the answer"
    );
    // `run --json` lists no log-probability for an end-of-generation token.
    let ours = logprobs(&v);
    let diff = max_diff(&ours, &expected.logprobs[..ours.len()]);
    assert_eq!(diff, 0.0, "{what}: log-probabilities differ");
    if recomputes {
        assert!(
            v["prefilled_tokens"].as_u64() > reference["prefilled_tokens"].as_u64(),
            "{what}: nothing was recomputed"
        );
    }
    let out = check(&home, "s");
    assert!(
        out.status.success(),
        "{what}: not repaired: {}",
        stderr(&out)
    );
    assert!(json(&out)["warnings"].as_array().unwrap().is_empty());
}

/// The undamaged restore is bit-identical to the uninterrupted run (a sliding window lands in
/// the slots that run had), and recovery equals both: on a sliding-window cache it
/// recomputes the whole log in its recorded batches.
fn damage_at_every_kind_of_object(model: &Path) {
    let base = saved_session(model);
    let reference = json(&turn(&copy_home(&base), model, " and then"));
    let n_ctx = reference["n_ctx"].as_u64().unwrap() as u32;
    let turns = [long_text(2), " and then".to_string()];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let (tokens_2, logprobs_2) = uninterrupted(model, n_ctx, true, &turns, 6).pop().unwrap();
    let expected = Expected {
        tokens: tokens_2.iter().map(|&t| t.into()).collect(),
        logprobs: logprobs_2,
    };
    assert_eq!(tokens(&reference), expected.tokens);
    let ours = logprobs(&reference);
    let restore_diff = max_diff(&ours, &expected.logprobs[..ours.len()]);
    assert_eq!(restore_diff, 0.0, "undamaged restore");
    let (pages, swa, tail) = snapshot_ids(&base);
    assert!(pages.len() >= 3, "the test needs a few pages");
    recovers_like_undamaged(
        &base,
        model,
        &expected,
        &reference,
        "copied page",
        true,
        |h| {
            // A valid page over another: the checksum holds, the identity does not.
            std::fs::copy(object_path(h, &pages[0]), object_path(h, &pages[1])).unwrap();
        },
    );
    recovers_like_undamaged(
        &base,
        model,
        &expected,
        &reference,
        "flipped page",
        true,
        |h| flip_last_byte(&object_path(h, &pages[1])),
    );
    recovers_like_undamaged(
        &base,
        model,
        &expected,
        &reference,
        "swapped ids",
        false,
        |h| {
            edit_manifest(h, |m| {
                let p = m["snapshot"]["pages"].as_array_mut().unwrap();
                p.swap(0, 1);
            })
        },
    );
    if let Some(tail) = &tail {
        recovers_like_undamaged(&base, model, &expected, &reference, "tail", true, |h| {
            flip_last_byte(&object_path(h, tail))
        });
    }
    if let Some(last) = swa.last() {
        recovers_like_undamaged(
            &base,
            model,
            &expected,
            &reference,
            "window rows",
            true,
            |h| flip_last_byte(&object_path(h, last)),
        );
    }
}

#[test]
fn damage_at_every_kind_of_object_recovers_tiny() {
    damage_at_every_kind_of_object(&tiny_model());
}

#[test]
fn damage_at_every_kind_of_object_recovers_default_model() {
    damage_at_every_kind_of_object(&default_model());
}

/// A session decoded with `-b 64` (four batches a page) and continued with `-b 256` after
/// losing a page recomputes that page in its four original batches, so the answer is exactly
/// the undamaged session's (llama.cpp rounds a batch of 64 and one of 256 differently).
#[test]
fn a_session_recovers_exactly_under_another_batch_size() {
    let model = tiny_model();
    let base = Home::new();
    json(&turn_with(&base, &model, &long_text(2), &["-b", "64"]));
    let next = |home: &Home| json(&turn_with(home, &model, " and then", &["-b", "256"]));
    let reference = next(&copy_home(&base));
    let (pages, _, _) = snapshot_ids(&base);
    let damaged = copy_home(&base);
    flip_last_byte(&object_path(&damaged, &pages[1]));
    let v = next(&damaged);
    assert_eq!(v["restored_tokens"], 256, "{v}");
    assert_eq!(tokens(&v), tokens(&reference));
    assert_eq!(logprobs(&v), logprobs(&reference));
}

#[test]
fn an_edited_token_in_the_log_is_never_served_old_pages() {
    let model = tiny_model();
    let base = saved_session(&model);
    let edited = copy_home(&base);
    edit_manifest(&edited, |m| {
        let t = &mut m["tokens"][600];
        *t = (t.as_i64().unwrap() + 1).into();
    });
    let out = check(&edited, "s");
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("do not match its token log"), "{err}");
    assert!(err.contains("page 2"), "{err}");
    // Only pages 0 and 1 (tokens before the edit, up to the batch start at 512) still
    // serve; the rest is prefilled from the log.
    let v = json(&turn(&edited, &model, " and then"));
    assert_eq!(v["restored_tokens"], 512, "{v}");
}

#[test]
fn a_symlinked_lock_file_is_not_followed_out_of_the_home() {
    let model = tiny_model();
    let home = saved_session(&model);
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("precious.txt");
    std::fs::write(&victim, b"keep me").unwrap();
    let lock = home.path().join("sessions/.locks/s.lock");
    let _ = std::fs::remove_file(&lock);
    std::os::unix::fs::symlink(&victim, &lock).unwrap();
    let out = check(&home, "s");
    assert_one_line_error(&out, 1, "symbolic link");
    assert_eq!(std::fs::read(&victim).unwrap(), b"keep me");
}

#[test]
fn one_damaged_or_hostile_manifest_hurts_no_other_session() {
    let model = tiny_model();
    let home = saved_session(&model);
    let s_tokens = manifest_json(&home, "s")["tokens"]
        .as_array()
        .unwrap()
        .len();
    // t: a manifest linked to /dev/zero; u: a sparse 10 GB manifest; v: one flipped byte.
    for (name, plant) in [("t", 0), ("u", 1), ("v", 2)] {
        let dir = home.path().join("sessions").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("session.kvrun");
        match plant {
            0 => std::os::unix::fs::symlink("/dev/zero", &path).unwrap(),
            1 => std::fs::File::create(&path)
                .unwrap()
                .set_len(10 << 30)
                .unwrap(),
            _ => {
                let mut b = std::fs::read(home.path().join("sessions/s/session.kvrun")).unwrap();
                let at = b.len() / 2;
                b[at] ^= 1;
                std::fs::write(&path, b).unwrap();
            }
        }
    }
    let ls = json(&home.run(&["session", "ls", "--json"]));
    let rows = ls.as_array().unwrap();
    assert_eq!(rows.len(), 4, "{ls}");
    for row in rows {
        let bad = row["name"] != "s";
        assert_eq!(row["error"].is_string(), bad, "{row}");
    }
    let out = home.run(&["session", "show", "s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = home.run(&["gc"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for name in ["'t'", "'u'", "'v'"] {
        assert!(stderr(&out).contains(name), "{}", stderr(&out));
    }
    // A turn on the intact session works, prints its output, and saves exactly once.
    let v = json(&turn(&home, &model, " more"));
    assert_eq!(tokens(&v).len(), 6);
    let now = manifest_json(&home, "s")["tokens"]
        .as_array()
        .unwrap()
        .len();
    assert!(now > s_tokens && now < s_tokens + 10, "{s_tokens} -> {now}");
    let out = check(&home, "s");
    assert!(out.status.success(), "{}", stderr(&out));
}
