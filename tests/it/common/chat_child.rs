//! A `kvrun chat` on pipes (line mode), driven a line at a time: for tests that hold a
//! session open in one process while another acts, or ask a running chat for `/stats`.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, ExitStatus, Stdio};

use super::Home;

pub struct ChatChild {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl ChatChild {
    /// Starts `kvrun chat ARGS` with stdin and stdout piped (stderr dropped).
    pub fn spawn(home: &Home, args: &[&str]) -> Self {
        let mut child = home
            .cmd()
            .arg("chat")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Self {
            child,
            stdin,
            stdout,
        }
    }

    /// Writes `text` and a newline (a message, a slash command, or several lines of them).
    pub fn send(&mut self, text: &str) {
        writeln!(self.stdin, "{text}").unwrap();
    }

    /// The next line the chat prints; panics if it exits first.
    pub fn next_line(&mut self) -> String {
        self.stdout
            .next()
            .expect("kvrun chat exited before printing a line")
            .unwrap()
    }

    /// Sends `/stats json` and returns the snapshot it prints.
    pub fn stats(&mut self) -> serde_json::Value {
        self.send("/stats json");
        loop {
            let line = self.next_line();
            if line.starts_with("{\"gpus\"") {
                return serde_json::from_str(&line).unwrap();
            }
        }
    }

    /// Ends the input, as a user's Ctrl-D does, and waits for the chat to save and exit.
    pub fn finish(self) -> ExitStatus {
        let Self {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        child.wait().unwrap()
    }
}
