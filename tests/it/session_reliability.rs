//! Sessions survive crashes, corruption, mismatched settings, concurrent use and a full
//! disk: the token log is the truth and the KV a cache that is checked before use.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use crate::common::chat_child::ChatChild;
use crate::common::inproc::THREADS;
use crate::common::*;

fn turn(home: &Home, model: &str, name: &str, text: &str) -> std::process::Output {
    home.run(&[
        "run",
        "--session",
        name,
        model,
        "--raw",
        "-p",
        text,
        "-n",
        "4",
        "--temp",
        "0",
        "-t",
        THREADS,
        "--json",
    ])
}

fn check(home: &Home, name: &str) -> std::process::Output {
    home.run(&[
        "session", "restore", name, "--check", "--json", "-t", THREADS,
    ])
}

#[test]
fn kill_9_at_random_moments_never_loses_a_session() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    // A first, completed turn.
    assert!(turn(&home, m, "crash", &long_text(1)).status.success());
    let mut known = session_tokens(&home, "crash");
    // A fixed pseudo-random schedule of kill delays (0..250 ms), so failures reproduce.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for i in 0..24 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let delay = Duration::from_millis(state % 250);
        let text = format!(" turn {i} adds some words to the log");
        let mut child = home
            .cmd()
            .args([
                "run",
                "--session",
                "crash",
                m,
                "--raw",
                "-p",
                &text,
                "-n",
                "4",
                "--temp",
                "0",
                "-t",
                THREADS,
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let out = check(&home, "crash");
        assert!(
            out.status.success(),
            "after kill {i} ({delay:?}): {}",
            stderr(&out)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(v["warnings"].as_array().unwrap().is_empty(), "{v}");
        let now = v["tokens"].as_u64().unwrap();
        // Either as before the turn, or with the whole turn (text + 4 generated tokens).
        // A whole turn adds its text and 4 generated tokens; nothing in between is visible.
        assert!(
            now == known || now >= known + 5,
            "kill {i}: {known} -> {now}"
        );
        assert_eq!(
            now as usize,
            v["restored_tokens"].as_u64().unwrap() as usize + 1
        );
        known = now;
    }
}

fn session_tokens(home: &Home, name: &str) -> u64 {
    let out = home.run(&["session", "show", name, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["tokens"].as_u64().unwrap()
}

/// Two homes with the same session; one gets damaged, the other is the reference.
fn damaged_and_reference() -> (Home, Home, PathBuf) {
    let model = tiny_model();
    let m = path_str(&model);
    let (a, b) = (Home::new(), Home::new());
    for home in [&a, &b] {
        assert!(turn(home, m, "s", &long_text(2)).status.success());
    }
    (a, b, model)
}

fn next_turn_matches(damaged: &Home, reference: &Home, model: &Path, expect_warning: &str) {
    let m = path_str(model);
    let bad = turn(damaged, m, "s", " and so on");
    let good = turn(reference, m, "s", " and so on");
    assert!(bad.status.success(), "{}", stderr(&bad));
    let warning = stderr(&bad);
    assert!(warning.contains("session 's'"), "{warning}");
    assert!(warning.contains(expect_warning), "{warning}");
    let (vb, vg): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&bad.stdout).unwrap(),
        serde_json::from_slice(&good.stdout).unwrap(),
    );
    assert_eq!(tokens(&vb), tokens(&vg), "recovery changed the output");
    assert!(vb["prefilled_tokens"].as_u64() > vg["prefilled_tokens"].as_u64());
}

#[test]
fn bit_flipped_page_is_detected_and_recomputed() {
    let (damaged, reference, model) = damaged_and_reference();
    // Flip one bit in the payload of the first full page (the largest objects are pages).
    let mut files = object_files(&damaged);
    files.sort_by_key(|p| std::fs::metadata(p).unwrap().len());
    let page = files.last().unwrap();
    let mut bytes = std::fs::read(page).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x10;
    std::fs::write(page, bytes).unwrap();
    next_turn_matches(&damaged, &reference, &model, "page");
}

#[test]
fn a_damaged_page_in_a_later_chunk_is_detected_and_recomputed() {
    // One page per chunk: the pages before the damaged one are loaded when its chunk's
    // read fails, and must be cleared for the recovery (which restores up to it).
    let model = tiny_model();
    let m = path_str(&model);
    let damaged = Home::new().with_env("KVRUN_RESTORE_CHUNK_BYTES", "1");
    let reference = Home::new();
    for home in [&damaged, &reference] {
        let out = turn(home, m, "s", &long_text(2));
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let manifest = manifest_json(&damaged, "s");
    let pages = manifest["snapshot"]["pages"].as_array().unwrap();
    assert!(pages.len() >= 4, "{} pages", pages.len());
    let id = pages[2].as_str().unwrap();
    let page = object_path(&damaged, id);
    let mut bytes = std::fs::read(&page).unwrap();
    let at = bytes.len() - 100;
    bytes[at] ^= 0x10;
    std::fs::write(&page, bytes).unwrap();
    next_turn_matches(&damaged, &reference, &model, "page 2");
}

#[test]
fn truncated_objects_are_detected_and_recomputed() {
    let (damaged, reference, model) = damaged_and_reference();
    for file in object_files(&damaged) {
        let len = std::fs::metadata(&file).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
    }
    next_turn_matches(&damaged, &reference, &model, "recomput");
}

#[test]
fn missing_objects_are_recomputed() {
    let (damaged, reference, model) = damaged_and_reference();
    for file in object_files(&damaged) {
        std::fs::remove_file(file).unwrap();
    }
    next_turn_matches(&damaged, &reference, &model, "recomput");
}

#[test]
fn corrupt_manifest_is_refused_clearly() {
    let home = Home::new();
    let model = tiny_model();
    assert!(turn(&home, path_str(&model), "s", "some text")
        .status
        .success());
    let manifest = home.path().join("sessions/s/session.kvrun");
    let mut bytes = std::fs::read(&manifest).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(&manifest, bytes).unwrap();
    let out = turn(&home, path_str(&model), "s", "more");
    assert_one_line_error(&out, 1, "session 's' is corrupt");
    // Truncated too.
    std::fs::write(&manifest, b"kvrun-session 1 ").unwrap();
    let out = check(&home, "s");
    assert_one_line_error(&out, 1, "session 's' is corrupt");
}

#[test]
fn export_import_round_trip_and_damage() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    assert!(turn(&home, m, "orig", &long_text(1)).status.success());
    let file = home.path().join("orig.kvx");
    let out = home.run(&["session", "export", "orig", path_str(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Another machine: a fresh home imports it and continues exactly like the original.
    let other = Home::new();
    let out = other.run(&["session", "import", path_str(&file), "--name", "copy"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let a = turn(&home, m, "orig", " next");
    let b = turn(&other, m, "copy", " next");
    let (va, vb): (serde_json::Value, serde_json::Value) = (
        serde_json::from_slice(&a.stdout).unwrap(),
        serde_json::from_slice(&b.stdout).unwrap(),
    );
    assert_eq!(tokens(&va), tokens(&vb));
    assert_eq!(va["restored_tokens"], vb["restored_tokens"]);
    // A damaged or truncated export is refused and writes nothing.
    let bytes = std::fs::read(&file).unwrap();
    let bad = home.path().join("bad.kvx");
    for damage in 0..2 {
        let mut b = bytes.clone();
        if damage == 0 {
            b[bytes.len() / 2] ^= 0x04;
        } else {
            b.truncate(bytes.len() - 7);
        }
        std::fs::write(&bad, &b).unwrap();
        let third = Home::new();
        let out = third.run(&["session", "import", path_str(&bad)]);
        assert_one_line_error(&out, 1, "bad.kvx");
        assert!(!third.path().join("sessions/orig").exists());
    }
}

/// An import into a home whose models folder lacks the model says so (naming no path it
/// never had); `import --model` binds the session to the model given, if it is that model.
#[test]
fn import_takes_the_model_and_says_when_it_has_none() {
    let home = Home::new();
    let model = tiny_model();
    assert!(turn(&home, path_str(&model), "orig", &long_text(1))
        .status
        .success());
    let file = home.path().join("orig.kvx");
    let out = home.run(&["session", "export", "orig", path_str(&file)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let other = Home::new();
    let out = other.run(&["session", "import", path_str(&file), "--name", "bare"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = other.run(&["session", "restore", "bare", "--check"]);
    assert_one_line_error(&out, 2, "which is not in the models folder");
    assert!(!stderr(&out).contains(" at ,"), "{}", stderr(&out));
    let out = other.run(&[
        "session",
        "import",
        path_str(&file),
        "--name",
        "bound",
        "--model",
        path_str(&model),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = other.run(&["session", "restore", "bound", "--check"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // Another model is refused, and nothing is imported.
    let wrong = chat_model();
    let out = other.run(&[
        "session",
        "import",
        path_str(&file),
        "--name",
        "wrong",
        "--model",
        path_str(&wrong),
    ]);
    assert_one_line_error(&out, 1, "is not the model the session was saved with");
    let listed = crate::common::run_json(&other, &["session", "ls"]);
    assert!(!listed.to_string().contains("\"wrong\""), "{listed}");
}

#[test]
fn mismatched_settings_are_refused_naming_the_mismatch() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    assert!(turn(&home, m, "s", &long_text(1)).status.success());
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--session", "s", "-p", "x", "-n", "1"];
        args.extend_from_slice(extra);
        home.run(&args)
    };
    assert_one_line_error(&run(&["--kv-type", "q8_0"]), 2, "--kv-type f16");
    assert_one_line_error(&run(&["--flash-attn", "off"]), 2, "--flash-attn auto");
    assert_one_line_error(&run(&["-c", "256"]), 2, "--ctx-size");
    let gemma = default_model();
    assert_one_line_error(
        &run(&[path_str(&gemma)]),
        2,
        "was saved with model kvrun-tiny-llama",
    );
}

#[test]
fn a_session_in_use_is_refused() {
    let home = Home::new();
    let model = tiny_model();
    let mut chat = ChatChild::spawn(
        &home,
        &[
            "--session",
            "busy",
            path_str(&model),
            "-n",
            "2",
            "--temp",
            "0",
        ],
    );
    // Once the first reply is out, the chat holds the session and waits for input.
    chat.send("hello");
    chat.next_line();
    let out = turn(&home, path_str(&model), "busy", "me too");
    // 75: EX_TEMPFAIL, the same command can succeed once the holder is done.
    assert_one_line_error(&out, 75, "in use");
    assert!(chat.finish().success());
    assert!(turn(&home, path_str(&model), "busy", "now free")
        .status
        .success());
}

/// A small tmpfs as the session folder; unmounted on drop.
struct SmallDisk(PathBuf);

impl SmallDisk {
    fn mount(dir: &Path, size: &str) -> Option<Self> {
        std::fs::create_dir_all(dir).ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .status()
            .ok()?
            .success();
        ok.then(|| SmallDisk(dir.to_path_buf()))
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// A small disk for a test, or None where one cannot be mounted (not root). Under CI
/// (`CI` set, as CI services do) that fails the test instead: CI runs as root, and a test
/// that quietly does nothing there proves nothing.
fn small_disk_or_skip(tag: &str) -> Option<(PathBuf, SmallDisk)> {
    let dir = std::env::temp_dir().join(format!("kvrun-full-{}-{tag}", std::process::id()));
    match SmallDisk::mount(&dir, "1200k") {
        Some(disk) => Some((dir, disk)),
        None => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false");
            assert!(
                !ci,
                "CI is set but a small tmpfs cannot be mounted (needs root): this test must run"
            );
            eprintln!("SKIPPED: cannot mount a small tmpfs here (not root?)");
            None
        }
    }
}

#[test]
fn a_full_disk_fails_clearly_and_keeps_the_previous_snapshot() {
    let Some((dir, _disk)) = small_disk_or_skip("run") else {
        return;
    };
    let model = tiny_model();
    let m = path_str(&model);
    let run = |text: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_kvrun"))
            .env("KVRUN_HOME", &dir)
            .args([
                "run",
                "--session",
                "s",
                m,
                "--raw",
                "-p",
                text,
                "-n",
                "2",
                "--temp",
                "0",
                "-t",
                THREADS,
            ])
            .output()
            .unwrap()
    };
    assert!(run("a short start").status.success());
    let out = run(&long_text(3));
    assert_one_line_error(&out, 1, "disk full");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kvrun"))
        .env("KVRUN_HOME", &dir)
        .args([
            "session", "restore", "s", "--check", "--json", "-t", THREADS,
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["tokens"].as_u64().unwrap() < 20,
        "the failed save changed the session: {v}"
    );
}

#[test]
fn a_failed_save_on_the_way_out_says_so_and_keeps_the_previous_snapshot() {
    let Some((dir, _disk)) = small_disk_or_skip("chat") else {
        return;
    };
    let model = tiny_model();
    let m = path_str(&model);
    let kvrun = |args: &[&str], stdin: Stdio| {
        std::process::Command::new(env!("CARGO_BIN_EXE_kvrun"))
            .env("KVRUN_HOME", &dir)
            .args(args)
            .args(["-t", THREADS])
            .stdin(stdin)
            .output()
            .unwrap()
    };
    let start = kvrun(
        &[
            "run",
            "--session",
            "s",
            m,
            "--raw",
            "-p",
            "a short start",
            "-n",
            "2",
        ],
        Stdio::null(),
    );
    assert!(start.status.success(), "{}", stderr(&start));
    // A turn too big for the disk: its save fails, and so does the one on the way out.
    let input = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(
        input.path(),
        format!("{}\n", long_text(3).replace('\n', " ")),
    )
    .unwrap();
    let chat = kvrun(
        &["chat", "--plain", "--session", "s", m, "-n", "2"],
        Stdio::from(std::fs::File::open(input.path()).unwrap()),
    );
    let err = stderr(&chat);
    assert_eq!(chat.status.code(), Some(1), "{err}");
    assert!(
        err.contains("saving session 's' failed (its previous save is intact)")
            && err.contains("disk full"),
        "{err}"
    );
    let check = kvrun(
        &["session", "restore", "s", "--check", "--json"],
        Stdio::null(),
    );
    assert!(check.status.success(), "{}", stderr(&check));
    let v: serde_json::Value = serde_json::from_slice(&check.stdout).unwrap();
    assert!(
        v["tokens"].as_u64().unwrap() < 20,
        "the failed save changed the session: {v}"
    );
}
