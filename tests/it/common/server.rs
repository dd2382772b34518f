//! A real `kvrun serve` child process for the HTTP tests: started on port 0, its port read
//! from the `listening on http://…` line, stopped by SIGTERM or killed.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

use super::Home;

/// Long enough for the default model to load on a busy 2-core machine.
const READY_DEADLINE: Duration = Duration::from_secs(180);

pub struct Server {
    child: Option<Child>,
    pub url: String,
    /// Every line the server wrote on stderr so far.
    pub log: Arc<Mutex<Vec<String>>>,
    agent: ureq::Agent,
}

/// A response as the tests look at it.
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(300)))
        .build()
        .into()
}

impl Server {
    /// `kvrun serve MODEL --port 0 ARGS…`, waiting until it is ready.
    pub fn start(home: &Home, model: &std::path::Path, args: &[&str]) -> Server {
        Self::start_with(home, Some(model), args)
    }

    /// `kvrun serve --port 0 ARGS…`: the models in the home's models folder.
    pub fn start_folder(home: &Home, args: &[&str]) -> Server {
        Self::start_with(home, None, args)
    }

    fn start_with(home: &Home, model: Option<&std::path::Path>, args: &[&str]) -> Server {
        let mut child = home
            .cmd()
            .arg("serve")
            .args(model)
            .args(["--port", "0", "-t", "2"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawning kvrun serve");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    if let Some(url) = line.strip_prefix("listening on ") {
                        let _ = tx.send(url.to_string());
                    }
                    log.lock().unwrap().push(line);
                }
            });
        }
        let started = Instant::now();
        let url = loop {
            if let Ok(url) = rx.recv_timeout(Duration::from_millis(100)) {
                break url;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "kvrun serve exited ({status}) before it was ready:\n{}",
                    log.lock().unwrap().join("\n")
                );
            }
            assert!(
                started.elapsed() < READY_DEADLINE,
                "kvrun serve not ready after {READY_DEADLINE:?}"
            );
        };
        Server {
            child: Some(child),
            url,
            log,
            agent: agent(),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// Runs a client program against this server; returns its stdout, failing with
    /// everything it and the server said when it exits non-zero.
    pub fn run_client(&self, mut command: std::process::Command, what: &str) -> String {
        let out = command
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{what} failed ({}):\n{stdout}\n{}\n--- server log ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            self.log_text()
        );
        stdout
    }

    pub fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut request = self.agent.get(format!("{}{path}", self.url));
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        reply(request.call())
    }

    pub fn delete(&self, path: &str) -> Reply {
        reply(self.agent.delete(format!("{}{path}", self.url)).call())
    }

    pub fn post(&self, path: &str, body: &serde_json::Value, headers: &[(&str, &str)]) -> Reply {
        self.post_bytes(path, body.to_string().into_bytes(), headers)
    }

    pub fn post_bytes(&self, path: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> Reply {
        let mut request = self
            .agent
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        reply(request.send(&body[..]))
    }

    /// SIGTERM, then waits (at most `deadline`) for the exit.
    pub fn terminate(mut self, deadline: Duration) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        signal(&child, Signal::TERM);
        let started = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                return status;
            }
            if started.elapsed() > deadline {
                let _ = child.kill();
                panic!(
                    "kvrun serve still running {deadline:?} after SIGTERM:\n{}",
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `kill -9`: nothing runs after it, not even a save.
    pub fn kill9(mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

fn signal(child: &Child, signal: Signal) {
    rustix::process::kill_process(Pid::from_child(child), signal)
        .unwrap_or_else(|e| panic!("kill({signal:?}) failed: {e}"));
}

fn reply(result: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Reply {
    let mut response = result.expect("the request got no response (dropped connection?)");
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    let body = response
        .body_mut()
        .with_config()
        .limit(64 << 20)
        .read_to_string()
        .unwrap_or_default();
    Reply {
        status,
        headers,
        body,
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
