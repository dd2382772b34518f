//! The real TUI end to end: `kvrun chat` on the default model inside tmux. Type a prompt,
//! read the answer and the memory panel off the screen, quit, and check that the terminal
//! came back and the session was saved.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

struct Tmux {
    name: String,
}

impl Tmux {
    fn start(command: &str) -> Self {
        let name = format!("kvrun-e2e-{}", std::process::id());
        let ok = Command::new("tmux")
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "110",
                "-y",
                "32",
                command,
            ])
            .status()
            .expect("tmux is needed for this test (apt-get install tmux; .ci/run installs it)")
            .success();
        assert!(ok, "tmux failed to start");
        Self { name }
    }

    fn screen(&self) -> String {
        let out = Command::new("tmux")
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        assert!(Command::new("tmux").args(&args).status().unwrap().success());
    }

    /// Waits until the screen satisfies `ok`, returning it; panics with the screen on timeout.
    fn wait_for(&self, what: &str, timeout: Duration, ok: impl Fn(&str) -> bool) -> String {
        let started = Instant::now();
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            assert!(
                started.elapsed() < timeout,
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["kill-session", "-t", &self.name])
            .status();
    }
}

#[test]
fn chat_tui_answers_shows_the_tiers_and_restores_the_terminal() {
    let home = Home::new();
    let model = default_model();
    let command = format!(
        "env KVRUN_HOME={} {} chat {} --session e2e -n 12 --temp 0; echo EXITED-$?; sleep 60",
        path_str(home.path()),
        env!("CARGO_BIN_EXE_kvrun"),
        path_str(&model)
    );
    let tmux = Tmux::start(&command);
    let ready = tmux.wait_for("the memory panel", Duration::from_secs(60), |s| {
        s.contains("NVMe")
    });
    assert!(ready.contains("RAM") && ready.contains("memory"), "{ready}");
    assert!(
        ready.contains("VRAM") || ready.contains("no GPU"),
        "{ready}"
    );

    tmux.keys(&["Name a colour.", "Enter"]);
    let answered = tmux.wait_for("the answer and the save", Duration::from_secs(120), |s| {
        s.contains("model") && s.contains("saved 'e2e'")
    });
    assert!(answered.contains("Name a colour."), "{answered}");

    tmux.keys(&["/quit", "Enter"]);
    let after = tmux.wait_for("kvrun to exit", Duration::from_secs(30), |s| {
        s.contains("EXITED-")
    });
    assert!(after.contains("EXITED-0"), "{after}");
    // The alternate screen is gone: nothing of the TUI is left on the terminal.
    assert!(!after.contains("memory") && !after.contains('│'), "{after}");

    let out = home.run(&["session", "ls", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list[0]["name"], "e2e");
    assert!(list[0]["tokens"].as_u64().unwrap() > 12, "{list}");
}
