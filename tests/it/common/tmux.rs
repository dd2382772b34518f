//! `kvrun chat`'s TUI in a real terminal: tmux runs it, the tests type into it and read
//! its screen.

use std::process::Command;
use std::time::{Duration, Instant};

/// A detached tmux session running one command, on a tmux server of its own.
pub struct Tmux {
    name: String,
}

/// A tmux client of the test's own server (`-L`): tests then never share a server, which
/// exits when its last session ends and could take a neighbour's new session with it.
fn tmux_on(server: &str) -> Command {
    let mut command = Command::new("tmux");
    command.args(["-L", server]);
    command
}

impl Tmux {
    fn tmux(&self) -> Command {
        tmux_on(&self.name)
    }

    /// Runs `command` in a new detached tmux session; `tag` keeps parallel tests apart. The
    /// pane stays after the command exits, so its exit status can be read.
    pub fn start(tag: &str, command: &str) -> Self {
        let name = format!("kvrun-e2e-{}-{tag}", std::process::id());
        let ok = tmux_on(&name)
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
                ";",
                "set-option",
                "-t",
                &name,
                "remain-on-exit",
                "on",
            ])
            .status()
            .expect("tmux is needed for this test (.ci/setup --tests installs it)")
            .success();
        assert!(ok, "tmux failed to start");
        Self { name }
    }

    pub fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-t", &self.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A pane format variable, e.g. `pane_pid` or `pane_dead_status`.
    pub fn pane(&self, variable: &str) -> String {
        let out = self
            .tmux()
            .args([
                "display-message",
                "-p",
                "-t",
                &self.name,
                &format!("#{{{variable}}}"),
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    pub fn kill(&self) {
        assert!(self
            .tmux()
            .args(["kill-session", "-t", &self.name])
            .status()
            .unwrap()
            .success());
    }

    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.name];
        args.extend_from_slice(keys);
        assert!(self.tmux().args(&args).status().unwrap().success());
    }

    /// Waits until the screen satisfies `ok`, returning it; panics with the screen on timeout.
    pub fn wait_for(&self, what: &str, timeout: Duration, ok: impl Fn(&str) -> bool) -> String {
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
        // Quietly: a test may have killed it already.
        let _ = self
            .tmux()
            .args(["kill-server"])
            .stderr(std::process::Stdio::null())
            .status();
    }
}
