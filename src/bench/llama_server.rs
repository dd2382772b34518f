//! llama.cpp's `llama-server` as a child of this process, for `bench serve --llama-server`:
//! started the way kvrun serve is (same model file, threads and context, one slot, greedy),
//! with a folder for its slot files so that a slot can be saved and restored by hand.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use serde_json::{json, Value};

use super::harness::{post_ok, stream_chat, Call, READY_DEADLINE};

pub(super) struct LlamaServer {
    child: Child,
    url: String,
    agent: ureq::Agent,
}

impl LlamaServer {
    /// `binary -m model` on a free port; `extra` goes last (e.g. batch sizes). Its log goes
    /// to `log`. Returns once `/health` answers 200 (the model loaded).
    pub(super) fn start(
        binary: &Path,
        model: &Path,
        threads: u32,
        ctx: u32,
        slots: &Path,
        log: &Path,
        extra: &[&str],
    ) -> Result<Self> {
        // llama-server takes no port 0: pick a free one and hand it over.
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log_file =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = Command::new(binary)
            .arg("-m")
            .arg(model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["-t", &threads.to_string(), "-c", &ctx.to_string()])
            .args(["-np", "1", "--temp", "0", "--jinja", "--no-webui"])
            .arg("--slot-save-path")
            .arg(slots)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone()?)
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let mut server = Self {
            child,
            url: format!("http://127.0.0.1:{port}"),
            agent,
        };
        let started = Instant::now();
        loop {
            if let Some(status) = server.child.try_wait()? {
                bail!(
                    "llama-server exited with {status} before it was ready; its log: {}",
                    log.display()
                );
            }
            let health = server.agent.get(format!("{}/health", server.url)).call();
            if health.is_ok_and(|r| r.status() == 200) {
                return Ok(server);
            }
            if started.elapsed() > READY_DEADLINE {
                bail!("llama-server was not ready within {READY_DEADLINE:?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One streamed chat completion, timed at the client as kvrun's are.
    pub(super) fn stream(&self, messages: &Value, tools: &Value, max_tokens: u32) -> Result<Call> {
        stream_chat(&self.agent, &self.url, messages, tools, max_tokens)
    }

    /// `POST /slots/0?action=save|restore` of `file` (under --slot-save-path); how long the
    /// call took.
    pub(super) fn slot(&self, action: &str, file: &str) -> Result<Duration> {
        let started = Instant::now();
        let path = format!("/slots/0?action={action}");
        post_ok(&self.agent, &self.url, &path, &json!({"filename": file}))
            .with_context(|| format!("llama-server slot {action}"))?;
        Ok(started.elapsed())
    }

    /// SIGTERM and wait.
    pub(super) fn stop(mut self) -> Result<()> {
        use rustix::process::{kill_process, Pid, Signal};
        kill_process(Pid::from_child(&self.child), Signal::TERM)?;
        self.child.wait()?;
        Ok(())
    }
}

impl Drop for LlamaServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
