//! Checks shared by the tests that leave a chat in the middle of a reply: the process goes
//! away, the session keeps the user's message and the partial reply, and its lock is free.

use std::io::{Read, Write};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use super::{default_model, manifest_json, path_str, stderr, Home};

/// A prompt the default model (a base model) answers at length, so a reply is still
/// streaming when the test leaves.
pub const LONG_REPLY_PROMPT: &str = "Write a long story about a dragon.";

/// Far more than any test waits for: the reply never ends by itself.
pub const ENDLESS: &str = "100000";

/// How long a stopped chat may take to save and exit. A bound against hangs on a loaded
/// machine, not a measurement: kvrun stops within a token and saves in milliseconds.
pub const GONE_WITHIN: Duration = Duration::from_secs(30);

/// Whether process `pid` still runs (a zombie has finished).
pub fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

/// Polls until `pid` is gone; panics naming `what` if it outlives [`GONE_WITHIN`].
pub fn wait_gone(pid: u32, what: &str) {
    let started = Instant::now();
    while running(pid) {
        assert!(
            started.elapsed() < GONE_WITHIN,
            "kvrun (pid {pid}) still runs {GONE_WITHIN:?} after {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The session holds `message` and a partial reply marked interrupted, and its lock is
/// free: `kvrun run --session` works on it right away.
pub fn assert_kept_and_free(home: &Home, session: &str, message: &str) {
    let manifest = manifest_json(home, session);
    let messages = manifest["messages"].as_array().expect("messages");
    assert!(
        messages
            .iter()
            .any(|m| m["role"] == "user" && m["content"] == message),
        "the user's message was lost: {manifest}"
    );
    assert_eq!(
        messages.last().map(|m| m["role"].clone()),
        Some("assistant".into()),
        "{manifest}"
    );
    assert_eq!(manifest["interrupted"], true, "{manifest}");
    let show = super::stdout(&home.run(&["session", "show", session]));
    assert!(show.contains("the last reply was interrupted"), "{show}");
    let model = default_model();
    let out = home.run(&[
        "run",
        "--session",
        session,
        path_str(&model),
        "-p",
        "And then?",
        "-n",
        "2",
        "--temp",
        "0",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "the session is not free right after: {}",
        stderr(&out)
    );
    // The completed turn clears the mark.
    assert!(manifest_json(home, session).get("interrupted").is_none());
}

/// Runs kvrun with `args` (writing `message` as a line on stdin, which then stays open: on
/// a pipe the end of input would let the reply finish), waits until the reply streams on
/// stdout, sends `signal` (e.g. "INT") and returns the output once kvrun is gone.
pub fn signal_while_streaming(
    home: &Home,
    args: &[&str],
    message: Option<&str>,
    signal: &str,
) -> Output {
    let mut child = home
        .cmd()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    if let Some(message) = message {
        writeln!(stdin, "{message}").unwrap();
    }
    let mut stdout = child.stdout.take().unwrap();
    let mut streamed = Vec::new();
    let mut buf = [0u8; 256];
    while streamed.len() < 40 {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "the reply ended before the test could interrupt it");
        streamed.extend_from_slice(&buf[..n]);
    }
    let pid = child.id();
    assert!(std::process::Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap()
        .success());
    // Keep reading, so a full pipe cannot block kvrun's last writes.
    let drain = std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = stdout.read_to_end(&mut rest);
        streamed.extend(rest);
        streamed
    });
    wait_gone(pid, &format!("SIG{signal}"));
    let mut out = child.wait_with_output().unwrap();
    out.stdout = drain.join().unwrap();
    drop(stdin);
    out
}
