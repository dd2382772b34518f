//! Engine and sampling settings: out-of-range values are usage errors (exit 2) naming the
//! range, whether they come from a flag, the config file or a session manifest; small batch
//! and context sizes work on every path (session save, run --session, chat) or say the
//! document does not fit, instead of aborting llama.cpp.

use crate::common::*;

const BAD_FLAGS: &[(&str, &str, &str)] = &[
    ("--top-p", "2", "at most 1"),
    ("--min-p", "-0.1", "at least 0"),
    ("--repeat-penalty", "0", "above 0"),
    ("--temp", "-1", "at least 0"),
    ("--top-k", "-1", "at least 0"),
    ("--temp", "NaN", "at least 0"),
    ("-b", "0", "at least 1"),
    ("-c", "0", "at least 1"),
    ("-t", "0", "at least 1"),
];

#[test]
fn out_of_range_flags_are_usage_errors_with_the_range() {
    let home = Home::new();
    let model = tiny_model();
    for &(flag, value, range) in BAD_FLAGS {
        // `--flag=VALUE`, since clap reads a separate "-0.1" as a flag of its own.
        let arg = format!("{flag}={value}");
        let arg = arg.as_str();
        for cmd in [
            vec!["run", path_str(&model), "-p", "hi", arg],
            vec!["run", path_str(&model), "--session", "s", "-p", "hi", arg],
            vec!["chat", path_str(&model), "--plain", arg],
        ] {
            let out = home.run(&cmd);
            let err = stderr(&out);
            assert_eq!(out.status.code(), Some(2), "{cmd:?}: {err}");
            assert!(
                err.contains("out of range") && err.contains(range),
                "{cmd:?}: {err}"
            );
        }
    }
    // Nothing was created by the refused session runs.
    assert!(!home.path().join("sessions/s").exists());
}

#[test]
fn out_of_range_config_values_are_usage_errors_with_the_range() {
    let home = Home::new();
    for (line, range) in [
        ("top-p = 2.0", "at most 1"),
        ("repeat-penalty = 0.0", "above 0"),
        ("min-p = -0.5", "at least 0"),
        ("batch-size = 0", "at least 1"),
    ] {
        std::fs::write(home.path().join("config.toml"), format!("{line}\n")).unwrap();
        let out = home.run(&["run", path_str(&tiny_model()), "-p", "hi"]);
        assert_one_line_error(&out, 2, range);
        assert!(stderr(&out).contains(line.split(' ').next().unwrap()));
    }
}

/// Rewrites a session's manifest JSON and its checksum line, as a crafted file would.
fn edit_manifest(home: &Home, name: &str, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = home.path().join(format!("sessions/{name}/session.kvrun"));
    let text = std::fs::read_to_string(&path).unwrap();
    let (header, json) = text.split_once('\n').unwrap();
    let mut value: serde_json::Value = serde_json::from_str(json).unwrap();
    edit(&mut value);
    let json = serde_json::to_string(&value).unwrap();
    let format = header.split(' ').nth(1).unwrap();
    let hash = blake3::hash(json.as_bytes()).to_hex();
    std::fs::write(&path, format!("kvrun-session {format} {hash}\n{json}")).unwrap();
}

fn save_small_session(home: &Home, name: &str, extra: &[&str]) -> std::process::Output {
    let doc = home.path().join("doc.txt");
    std::fs::write(&doc, "one two three four five six seven eight nine ten").unwrap();
    let model = tiny_model();
    let mut args = vec![
        "session",
        "save",
        name,
        path_str(&model),
        "--raw",
        "--file",
        path_str(&doc),
    ];
    args.extend_from_slice(extra);
    home.run(&args)
}

#[test]
fn out_of_range_manifest_values_are_refused_on_use_and_on_import() {
    let home = Home::new();
    let out = save_small_session(&home, "s", &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (section, key, value, range) in [
        ("engine", "batch_size", serde_json::json!(0), "at least 1"),
        ("sampling", "top_p", serde_json::json!(2.0), "at most 1"),
        (
            "sampling",
            "repeat_penalty",
            serde_json::json!(0.0),
            "above 0",
        ),
    ] {
        let name = format!("bad-{key}");
        let out = home.run(&["session", "fork", "s", &name]);
        assert!(out.status.success(), "{}", stderr(&out));
        edit_manifest(&home, &name, |m| m[section][key] = value);
        let out = home.run(&["run", "--session", &name, "--continue", "-n", "2"]);
        assert_one_line_error(&out, 2, range);
        assert!(stderr(&out).contains(&format!("session '{name}'")));

        let file = home.path().join(format!("{name}.kvrun-export"));
        let out = home.run(&["session", "export", &name, path_str(&file)]);
        assert!(out.status.success(), "{}", stderr(&out));
        let other = Home::new();
        let out = other.run(&["session", "import", path_str(&file), "--name", "copy"]);
        assert_one_line_error(&out, 2, range);
        assert!(!other.path().join("sessions/copy").exists());
    }
}

#[test]
fn batch_size_one_works_on_every_session_path() {
    let home = Home::new();
    let model = tiny_model();
    let out = save_small_session(&home, "s", &["-b", "1"]);
    assert!(out.status.success(), "session save -b 1: {}", stderr(&out));
    let out = home.run(&[
        "run",
        "--session",
        "s",
        "-p",
        " eleven",
        "-n",
        "3",
        "-b",
        "1",
        "--temp",
        "0",
    ]);
    assert!(out.status.success(), "run --session -b 1: {}", stderr(&out));
    let out = home.run_with_stdin(
        &[
            "chat",
            path_str(&model),
            "--plain",
            "-b",
            "1",
            "-n",
            "3",
            "--temp",
            "0",
        ],
        "hello\n",
    );
    assert!(out.status.success(), "chat -b 1: {}", stderr(&out));
    assert!(!stdout(&out).is_empty());
}

#[test]
fn a_context_too_small_for_the_document_says_it_does_not_fit() {
    let home = Home::new();
    let doc = long_text(1);
    let path = home.path().join("long.txt");
    std::fs::write(&path, &doc).unwrap();
    for c in ["1", "16", "64"] {
        let out = home.run(&[
            "session",
            "save",
            &format!("c{c}"),
            path_str(&tiny_model()),
            "--raw",
            "--file",
            path_str(&path),
            "-c",
            c,
        ]);
        assert_one_line_error(&out, 1, "does not fit");
    }
    // Short in bytes but long in tokens: refused after tokenizing, by the same rule.
    std::fs::write(&path, "x ".repeat(100)).unwrap();
    let out = home.run(&[
        "session",
        "save",
        "short",
        path_str(&tiny_model()),
        "--raw",
        "--file",
        path_str(&path),
        "-c",
        "64",
    ]);
    assert_one_line_error(&out, 1, "this message does not fit the context");
}
