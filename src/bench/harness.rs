//! What several benchmarks share: the prompt text as tokens, a prefilled session on disk,
//! a child `kvrun` process (a JSON command, or a server with its HTTP calls), and dropping
//! the page cache so that a read is cold.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use serde_json::{json, Value};

use super::synthetic::RAW_SESSION;
use crate::llama::{Context, Model, TokenId};
use crate::models::ModelChoice;
use crate::sequence::{NoObserver, Sequence};
use crate::session::catalog::SessionCatalog;
use crate::session::live::{SaveReport, SessionObserver};
use crate::session::SessionBinding;
use crate::settings::{LlamaSettings, SamplingSettings};

/// The middle value (the upper one of an even count); NaN for none.
pub(super) fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `n` tokens of English prose (the bench text, repeated).
pub(super) fn bench_tokens(model: &Model, n: usize) -> Vec<TokenId> {
    let mut tokens = model.tokenize_prompt(BENCH_TEXT);
    let body = model.tokenize(BENCH_TEXT, false);
    while tokens.len() < n {
        tokens.extend_from_slice(&body);
    }
    tokens.truncate(n);
    tokens
}

/// Prefills `tokens` into a new raw session under `home` and saves it; returns the
/// prefill's seconds and the save's report.
pub(super) fn prefill_session(
    model: &Model,
    model_path: &Path,
    ctx: &mut Context<'_>,
    catalog: &SessionCatalog,
    name: &str,
    llama: &LlamaSettings,
    tokens: &[TokenId],
) -> Result<(f64, SaveReport)> {
    let lock = catalog.lock(name)?;
    let sessions = SessionBinding::new(catalog, model_path, model, ctx, llama.clone())?;
    let mut live = sessions.open(name, lock, None, SamplingSettings::greedy());
    let mut seq = Sequence::new();
    seq.append(tokens);
    let mut restore = live.reuse_prefix(ctx, &mut seq)?;
    restore.warnings.clear();
    let started = Instant::now();
    {
        let mut observer = SessionObserver {
            session: &mut live,
            inner: &mut NoObserver,
        };
        seq.sync(ctx, false, &mut observer)?;
    }
    let prefill_s = started.elapsed().as_secs_f64();
    let saved = live.save(ctx, &seq, RAW_SESSION)?;
    Ok((prefill_s, saved))
}

/// Empties the OS page cache (Linux, root only). Returns whether it worked.
pub(super) fn drop_page_cache() -> bool {
    // Flush dirty pages first (std has no sync(2)), then drop the clean ones.
    let _ = Command::new("sync").status();
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

/// Runs kvrun in a fresh process against `home` and parses its `--json` output.
pub(super) fn child_json(
    home: &Path,
    args: &[&str],
    llama: &LlamaSettings,
) -> Result<serde_json::Value> {
    let exe = std::env::current_exe().context("locating the kvrun binary")?;
    let out = Command::new(&exe)
        .env("KVRUN_HOME", home)
        .args(args)
        .args(["-t", &llama.threads.to_string()])
        // The same place for the KV as this process: host memory or the device.
        .args(["--gpu-layers", &llama.gpu_layers.to_string()])
        .output()
        // A rebuild during the run replaces the binary: the message names it.
        .with_context(|| format!("running {} for a child restore", exe.display()))?;
    if !out.status.success() {
        bail!(
            "kvrun {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(serde_json::from_slice(&out.stdout)?)
}

/// `kvrun serve` as a child of this process, on a free port, in its own home.
pub(super) struct ChildServer {
    child: Child,
    url: String,
    agent: ureq::Agent,
}

impl ChildServer {
    pub(super) fn start(
        home: &Path,
        choice: &ModelChoice,
        llama: &LlamaSettings,
        ctx: u32,
        parallel: u32,
    ) -> Result<Self> {
        let (ctx, parallel) = (ctx.to_string(), parallel.to_string());
        Self::spawn(home, choice, llama, &["-c", &ctx, "--parallel", &parallel])
    }

    /// `kvrun serve` with `args` added (the context's size and the parallel sequences).
    pub(super) fn spawn(
        home: &Path,
        choice: &ModelChoice,
        llama: &LlamaSettings,
        args: &[&str],
    ) -> Result<Self> {
        Self::spawn_serving(home, Some(&choice.path), llama, args)
    }

    /// `kvrun serve` of `model`, or of the home's models folder when None.
    pub(super) fn spawn_serving(
        home: &Path,
        model: Option<&Path>,
        llama: &LlamaSettings,
        args: &[&str],
    ) -> Result<Self> {
        let exe = std::env::current_exe().context("finding the kvrun binary")?;
        let mut child = std::process::Command::new(exe)
            .env("KVRUN_HOME", home)
            .env_remove("KVRUN_API_KEY")
            .args(["serve", "--port", "0", "--temp", "0"])
            .args(model)
            .args(["-t", &llama.threads.to_string(), "--request-timeout", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .context("starting kvrun serve")?;
        let stderr = child.stderr.take().context("the server's stderr")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("listening on ") {
                    let _ = tx.send(Ok(url.to_string()));
                } else if line.starts_with("error:") {
                    let _ = tx.send(Err(line));
                }
            }
        });
        let url = match rx.recv_timeout(READY_DEADLINE) {
            Ok(Ok(url)) => url,
            Ok(Err(line)) => bail!("kvrun serve failed: {line}"),
            Err(_) => bail!("kvrun serve was not ready within {READY_DEADLINE:?}"),
        };
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        Ok(Self { child, url, agent })
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(super) fn url(&self) -> &str {
        &self.url
    }

    pub(super) fn agent(&self) -> &ureq::Agent {
        &self.agent
    }

    /// GET `path`, as JSON.
    pub(super) fn get_json(&self, path: &str) -> Result<Value> {
        let mut response = self
            .agent
            .get(format!("{}{path}", self.url))
            .call()
            .map_err(|e| anyhow!("GET {path}: {e}"))?;
        response
            .body_mut()
            .read_json()
            .map_err(|e| anyhow!("GET {path}: {e}"))
    }

    /// A greedy completion of `prompt` (token ids), `max_tokens` long.
    pub(super) fn complete(&self, prompt: &[crate::llama::TokenId], max_tokens: u32) -> Result<()> {
        let body = json!({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0});
        post_ok(&self.agent, &self.url, "/v1/completions", &body)?;
        Ok(())
    }

    /// A greedy streamed completion of `prompt` (token ids), `max_tokens` long: when each
    /// piece of text arrived. `started` hears of the first one.
    pub(super) fn stream_times(
        &self,
        prompt: &[crate::llama::TokenId],
        max_tokens: u32,
        started: std::sync::mpsc::Sender<()>,
    ) -> Result<Vec<Instant>> {
        let body = json!({"prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
            "stream": true});
        let mut response = post_ok(&self.agent, &self.url, "/v1/completions", &body)?;
        let mut times = Vec::new();
        for chunk in sse_events(&mut response) {
            if chunk?["choices"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
            {
                if times.is_empty() {
                    let _ = started.send(());
                }
                times.push(Instant::now());
            }
        }
        Ok(times)
    }

    /// One streamed chat completion, timed at the client.
    pub(super) fn stream(&self, messages: &Value, tools: &Value, max_tokens: u32) -> Result<Call> {
        stream_chat(&self.agent, &self.url, messages, tools, max_tokens)
    }

    /// The same through Ollama's API.
    pub(super) fn stream_ollama(
        &self,
        messages: &Value,
        tools: &Value,
        max_tokens: u32,
    ) -> Result<Call> {
        stream_ollama_chat(&self.agent, &self.url, messages, tools, max_tokens)
    }

    /// `n` streams at once; the tokens they generated and the wall time.
    pub(super) fn concurrent(&self, n: usize, max_tokens: u32) -> Result<(u64, Duration)> {
        let started = Instant::now();
        let calls: Vec<_> = (0..n)
            .map(|i| {
                let (agent, url) = (self.agent.clone(), self.url.clone());
                std::thread::spawn(move || {
                    let messages = json!([{"role": "user", "content": format!("Stream {i}: tell a long story about the sea.")}]);
                    stream_chat(&agent, &url, &messages, &Value::Null, max_tokens)
                })
            })
            .collect();
        let mut tokens = 0;
        for call in calls {
            tokens += call
                .join()
                .map_err(|_| anyhow!("a stream thread panicked"))??
                .generated;
        }
        Ok((tokens, started.elapsed()))
    }

    /// SIGTERM and wait: the server saves every conversation before it exits.
    pub(super) fn stop(mut self) -> Result<()> {
        use rustix::process::{kill_process, Pid, Signal};
        kill_process(Pid::from_child(&self.child), Signal::TERM)?;
        let status = self.child.wait()?;
        if !status.success() {
            bail!("kvrun serve exited with {status}");
        }
        Ok(())
    }
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) const READY_DEADLINE: Duration = Duration::from_secs(600);

/// One call's figures, as the client measured them.
pub(super) struct Call {
    pub(super) prompt_tokens: u64,
    pub(super) cached_tokens: u64,
    pub(super) ttft: Duration,
    pub(super) generated: u64,
    /// From the first token to the last.
    pub(super) decode: Duration,
}

impl Call {
    pub(super) fn per_token_ms(&self) -> f64 {
        if self.generated > 1 {
            self.decode.as_secs_f64() * 1e3 / (self.generated - 1) as f64
        } else {
            f64::NAN
        }
    }
}

/// POST `body` to `url` + `path`; an answer other than 200 is an error with its text.
pub(super) fn post_ok(
    agent: &ureq::Agent,
    url: &str,
    path: &str,
    body: &Value,
) -> Result<ureq::http::Response<ureq::Body>> {
    let mut response = agent
        .post(format!("{url}{path}"))
        .send_json(body)
        .map_err(|e| anyhow!("POST {path}: {e}"))?;
    if response.status() != 200 {
        let text = response.body_mut().read_to_string().unwrap_or_default();
        bail!("the server answered {}: {text}", response.status());
    }
    Ok(response)
}

/// The JSON events of a server-sent event stream, up to `[DONE]`.
pub(super) fn sse_events(
    response: &mut ureq::http::Response<ureq::Body>,
) -> impl Iterator<Item = Result<Value>> + '_ {
    BufReader::new(response.body_mut().as_reader())
        .lines()
        .map_while(|line| match line {
            Err(e) => Some(Err(e.into())),
            Ok(line) => match line.strip_prefix("data: ") {
                Some("[DONE]") => None,
                Some(data) => Some(serde_json::from_str(data).map_err(Into::into)),
                None => Some(Ok(Value::Null)),
            },
        })
}

pub(super) fn stream_chat(
    agent: &ureq::Agent,
    url: &str,
    messages: &Value,
    tools: &Value,
    max_tokens: u32,
) -> Result<Call> {
    let mut body = json!({
        "model": "bench", "messages": messages, "max_tokens": max_tokens, "temperature": 0,
        "stream": true, "stream_options": {"include_usage": true},
    });
    if tools.is_array() {
        body["tools"] = tools.clone();
    }
    let sent = Instant::now();
    let mut response = post_ok(agent, url, "/v1/chat/completions", &body)?;
    let mut first = None;
    let mut last = sent;
    let mut usage = Value::Null;
    for chunk in sse_events(&mut response) {
        let chunk = chunk?;
        let delta = &chunk["choices"][0]["delta"];
        if delta["content"].as_str().is_some_and(|t| !t.is_empty())
            || delta["tool_calls"].is_array()
        {
            first.get_or_insert_with(Instant::now);
            last = Instant::now();
        }
        if chunk["usage"].is_object() {
            usage = chunk["usage"].clone();
        }
    }
    let first = first.unwrap_or(last);
    Ok(Call {
        prompt_tokens: usage["prompt_tokens"].as_u64().unwrap_or(0),
        cached_tokens: usage["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap_or(0),
        ttft: first - sent,
        generated: usage["completion_tokens"].as_u64().unwrap_or(0),
        decode: last - first,
    })
}

/// The same turn through Ollama's `/api/chat` (an NDJSON stream), timed at the client.
/// Ollama's `prompt_eval_count` counts the tokens evaluated; kvrun's final chunk adds
/// those restored.
pub(super) fn stream_ollama_chat(
    agent: &ureq::Agent,
    url: &str,
    messages: &Value,
    tools: &Value,
    max_tokens: u32,
) -> Result<Call> {
    let mut body = json!({
        "model": "bench", "messages": messages, "stream": true,
        "options": {"num_predict": max_tokens, "temperature": 0},
    });
    if tools.is_array() {
        body["tools"] = tools.clone();
    }
    let sent = Instant::now();
    let mut response = post_ok(agent, url, "/api/chat", &body)?;
    let (mut first, mut last) = (None, sent);
    let mut done = Value::Null;
    for line in BufReader::new(response.body_mut().as_reader()).lines() {
        let chunk: Value = serde_json::from_str(&line?)?;
        if let Some(error) = chunk["error"].as_str() {
            bail!("the server's stream failed: {error}");
        }
        let message = &chunk["message"];
        if message["content"].as_str().is_some_and(|t| !t.is_empty())
            || message["tool_calls"].is_array()
        {
            first.get_or_insert_with(Instant::now);
            last = Instant::now();
        }
        if chunk["done"] == true {
            done = chunk;
        }
    }
    let first = first.unwrap_or(last);
    let cached = done["kvrun"]["cached_tokens"].as_u64().unwrap_or(0);
    Ok(Call {
        prompt_tokens: done["prompt_eval_count"].as_u64().unwrap_or(0) + cached,
        cached_tokens: cached,
        ttft: first - sent,
        generated: done["eval_count"].as_u64().unwrap_or(0),
        decode: last - first,
    })
}

const BENCH_TEXT: &str = include_str!("../../assets/bench-prompt.txt");

/// About `chars` characters of the bench text (repeated as needed), cut at a word.
pub(super) fn bench_text(chars: usize) -> String {
    let mut text = String::with_capacity(chars + BENCH_TEXT.len());
    while text.len() < chars {
        text.push_str(BENCH_TEXT);
        text.push(' ');
    }
    let cut = text[..chars.min(text.len())]
        .rfind(char::is_whitespace)
        .unwrap_or(chars.min(text.len()));
    text.truncate(cut);
    text
}

/// Where a context's KV lives under `llama`: the device and the layers offloaded to it
/// (their KV goes with them), or host memory. Printed above a benchmark's tables, since
/// every figure in them depends on it.
pub(super) fn kv_memory(model: &Model, llama: &LlamaSettings) -> String {
    let n_layer = model.facts().n_layer;
    let layers = llama.gpu_layers.min(n_layer);
    match crate::llama::gpu_devices().first() {
        Some(gpu) if layers > 0 && crate::llama::gpu_offload_supported() => format!(
            "KV memory: {} ({} total), {layers} of {n_layer} layers offloaded",
            gpu.name,
            crate::format::human_bytes(gpu.total_bytes)
        ),
        _ => "KV memory: host RAM (no layer offloaded)".to_string(),
    }
}

/// A home under `work` with links to `models` in its models folder.
pub(super) fn home(work: &Path, name: &str, models: &[PathBuf]) -> Result<PathBuf> {
    let dir = home_of(work, name)?;
    std::fs::create_dir_all(dir.join("models"))?;
    for path in models {
        let link = dir.join("models").join(format!("{}.gguf", stem(path)));
        std::os::unix::fs::symlink(path.canonicalize()?, link)?;
    }
    Ok(dir)
}

pub(super) fn home_of(work: &Path, name: &str) -> Result<PathBuf> {
    let dir = work.join(name);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

pub(super) fn stem(path: &Path) -> String {
    path.file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}
