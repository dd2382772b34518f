//! Memory tiers in one chat process: sessions cycle through hot, warm and cold without
//! changing what they generate, budgets hold, and quantized KV behaves like f16.

use crate::common::chat_child::ChatChild;
use crate::common::inproc::{uninterrupted_with, THREADS};
use crate::common::*;
use kvrun::settings::{FlashAttn, KvType};

/// The token log of a session, read from its manifest.
fn session_log(home: &Home, name: &str) -> Vec<i64> {
    manifest_json(home, name)["tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_i64().unwrap())
        .collect()
}

fn memory_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .filter(|l| l.starts_with("{\"gpus\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn cycling_five_sessions_through_the_tiers_changes_nothing() {
    let model = default_model();
    let m = path_str(&model);
    let names: Vec<String> = (0..5).map(|i| format!("s{i}")).collect();
    let first = |i: usize| format!("Session {i}. Remember the number {}.", 17 * (i + 1));
    let second = |i: usize| format!("Which number for session {i}?");
    // Two sessions fit the context at a time and the RAM pool holds about one more: the
    // others are restored from disk on every switch.
    let warm_budget = "2MiB";
    let mut script = String::new();
    for (i, n) in names.iter().enumerate() {
        script += &format!("/session {n}\n{}\n/stats json\n", first(i));
    }
    for round in 0..2 {
        for (i, n) in names.iter().enumerate() {
            script += &format!(
                "/session {n}\n{}\n/stats json\n",
                if round == 0 {
                    second(i)
                } else {
                    "Thanks.".into()
                }
            );
        }
    }
    let cycled = Home::new();
    let out = cycled.run_with_stdin(
        &[
            "chat",
            m,
            "--plain",
            "-n",
            "12",
            "--temp",
            "0",
            "-t",
            THREADS,
            "--hot-sessions",
            "2",
            "--warm-budget",
            warm_budget,
        ],
        &script,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let snapshots = memory_lines(&stdout(&out));
    assert_eq!(snapshots.len(), 15);
    for s in &snapshots {
        // Budgets hold at every step.
        assert!(
            s["warm"]["used_bytes"].as_u64() <= s["warm"]["budget_bytes"].as_u64(),
            "{s}"
        );
        assert!(s["hot"]["sessions"].as_array().unwrap().len() <= 2, "{s}");
    }
    let last = snapshots.last().unwrap();
    assert!(
        last["cold"]["hit_tokens"].as_u64().unwrap() > 0,
        "nothing came back from disk: {last}"
    );
    // Reference: each session's three turns in its own process, never switched away from.
    let reference = Home::new();
    for (i, n) in names.iter().enumerate() {
        let out = reference.run_with_stdin(
            &[
                "chat",
                m,
                "--session",
                n,
                "--plain",
                "-n",
                "12",
                "--temp",
                "0",
                "-t",
                THREADS,
            ],
            &format!("{}\n{}\nThanks.\n", first(i), second(i)),
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(
            session_log(&cycled, n),
            session_log(&reference, n),
            "session {n} diverged"
        );
    }
}

#[test]
fn idle_sessions_leave_the_context() {
    let home = Home::new();
    let model = tiny_model();
    let mut chat = ChatChild::spawn(
        &home,
        &[
            path_str(&model),
            "--plain",
            "-n",
            "4",
            "--temp",
            "0",
            "--hot-idle",
            "1s",
        ],
    );
    chat.send("/session a\nhello\n/session b\nhi");
    // Session a may already have cooled here: on a loaded machine b's turn can outlast
    // the idle second. The current session stays, whatever its idle time.
    let before = chat.stats();
    let hot = before["hot"]["sessions"].as_array().unwrap();
    assert!(hot.contains(&serde_json::json!("b")), "{before}");
    // The hot budget has room for both: only the idle limit moves a out (within seconds;
    // the deadline only bounds a loaded machine).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let after = loop {
        std::thread::sleep(std::time::Duration::from_millis(500));
        let now = chat.stats();
        if now["hot"]["sessions"] == serde_json::json!(["b"]) {
            break now;
        }
        assert!(std::time::Instant::now() < deadline, "a stayed hot: {now}");
    };
    assert!(
        after["cold"]["sessions"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("a")),
        "{after}"
    );
    assert!(chat.finish().success());
}

#[test]
fn q8_0_sessions_save_restore_and_continue_deterministically() {
    let model = tiny_model();
    let m = path_str(&model);
    let turns = [long_text(1), " and then".to_string(), " more".to_string()];
    let turns: Vec<&str> = turns.iter().map(String::as_str).collect();
    let expected = uninterrupted_with(
        &model,
        4096,
        (KvType::Q8_0, FlashAttn::Auto),
        true,
        &turns,
        12,
    );
    let home = Home::new();
    for (i, t) in turns.iter().enumerate() {
        let v = run_json(
            &home,
            &[
                "run",
                "--session",
                "q",
                m,
                "--raw",
                "-p",
                t,
                "-n",
                "12",
                "--temp",
                "0",
                "-t",
                THREADS,
                "--kv-type",
                "q8_0",
                "--logprobs",
            ],
        );
        if i > 0 {
            assert!(v["restored_tokens"].as_u64().unwrap() > 0);
        }
        assert_eq!(
            tokens(&v),
            expected[i].0.iter().map(|&t| t as i64).collect::<Vec<_>>()
        );
        assert_eq!(max_diff(&logprobs(&v), &expected[i].1), 0.0);
    }
    // q8_0 pages are about half the size of f16 ones.
    let f16 = Home::new();
    run_json(
        &f16,
        &[
            "run",
            "--session",
            "q",
            m,
            "--raw",
            "-p",
            turns[0],
            "-n",
            "1",
            "-t",
            THREADS,
        ],
    );
    let q8 = Home::new();
    run_json(
        &q8,
        &[
            "run",
            "--session",
            "q",
            m,
            "--raw",
            "-p",
            turns[0],
            "-n",
            "1",
            "-t",
            THREADS,
            "--kv-type",
            "q8_0",
        ],
    );
    let ratio = object_bytes(&q8) as f64 / object_bytes(&f16) as f64;
    assert!(ratio < 0.6, "q8_0 uses {ratio:.2} of f16's bytes");
}

#[test]
fn pages_shared_by_two_sessions_stay_single_in_every_tier() {
    let home = Home::new();
    let model = tiny_model();
    let m = path_str(&model);
    let doc = long_text(2);
    run_json(
        &home,
        &[
            "run",
            "--session",
            "a",
            m,
            "--raw",
            "-p",
            &doc,
            "-n",
            "1",
            "-t",
            THREADS,
        ],
    );
    let b = run_json(
        &home,
        &[
            "run",
            "--session",
            "b",
            m,
            "--raw",
            "-p",
            &format!("{doc} More."),
            "-n",
            "1",
            "-t",
            THREADS,
        ],
    );
    assert!(b["reused_tokens"].as_u64().unwrap() > 0);
    let pages = |name: &str| -> Vec<String> {
        manifest_json(&home, name)["snapshot"]["pages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    };
    let (pa, pb) = (pages("a"), pages("b"));
    let shared = pa.iter().filter(|p| pb.contains(p)).count();
    assert!(shared > 0, "no shared pages");
    // Cold: one file per object id, so a shared page is one file.
    let out = home.run(&["stats", "--json"]);
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut all: Vec<String> = pa.iter().chain(&pb).cloned().collect();
    all.sort();
    all.dedup();
    assert!(stats["cold"]["objects"].as_u64().unwrap() < (pa.len() + pb.len()) as u64);
    // Warm and hot: cycling both through a one-session context keeps one copy of each page.
    let out = home.run_with_stdin(
        &[
            "chat",
            m,
            "--plain",
            "-n",
            "1",
            "--temp",
            "0",
            "--hot-sessions",
            "1",
        ],
        "/session a\n/session b\n/session a\n/stats json\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let snapshot = memory_lines(&stdout(&out)).pop().unwrap();
    let objects = stats["cold"]["objects"].as_u64().unwrap();
    assert!(
        snapshot["warm"]["pages"].as_u64().unwrap() <= objects,
        "{snapshot}"
    );
    assert_eq!(snapshot["hot"]["sessions"], serde_json::json!(["a"]));
}
