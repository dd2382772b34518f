//! A real `kvrun serve` stack in-process for the HTTP tests: the service engine on a model,
//! the server's router on 127.0.0.1:0, and a ureq client that reports every status.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kvrun::models::{ModelChoice, ModelSource};
use kvrun::server::AppState;
use kvrun::service::{EngineThread, ServiceHandle, ServiceOptions};
use kvrun::settings::{EngineSettings, FlashAttn, KvType};
use serde_json::Value;

pub struct Server {
    pub url: String,
    pub handle: ServiceHandle,
    engine: Option<EngineThread>,
    runtime: Option<tokio::runtime::Runtime>,
    stop_http: Option<tokio::sync::oneshot::Sender<()>>,
    agent: ureq::Agent,
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub headers: ureq::http::HeaderMap,
    pub body: String,
}

impl Answer {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}), status {}: {}", self.status, self.body))
    }

    /// The body as SSE events: (event name, data).
    pub fn events(&self) -> Vec<(Option<String>, String)> {
        let mut events = Vec::new();
        for block in self.body.split("\n\n") {
            let mut name = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(n) = line.strip_prefix("event:") {
                    name = Some(n.trim().to_string());
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push(d.strip_prefix(' ').unwrap_or(d).to_string());
                }
            }
            if !data.is_empty() {
                events.push((name, data.join("\n")));
            }
        }
        events
    }

    /// The JSON data of every event (OpenAI's `[DONE]` left out).
    pub fn event_data(&self) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|(_, d)| d != "[DONE]")
            .map(|(_, d)| serde_json::from_str(&d).unwrap_or_else(|e| panic!("{e}: {d}")))
            .collect()
    }
}

impl Server {
    pub fn start(home: &Path, model: &Path, ctx_size: u32) -> Self {
        let paths = kvrun::paths::Paths::under(home);
        let options = ServiceOptions {
            paths: paths.clone(),
            model: ModelChoice {
                path: model.to_path_buf(),
                source: ModelSource::Argument,
            },
            engine: EngineSettings {
                ctx_size,
                threads: 2,
                gpu_layers: 0,
                batch_size: 256,
                kv_type: KvType::F16,
                flash_attn: FlashAttn::Auto,
            },
            tiers: Default::default(),
            parallel: 2,
            max_queue: 8,
            chat_template: None,
            alias: Some("test-model".into()),
        };
        let (handle, engine) = kvrun::service::start(options).unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        while handle.info().is_none() {
            assert!(!engine.is_finished(), "the engine ended while loading");
            assert!(Instant::now() < deadline, "the engine did not get ready");
            std::thread::sleep(Duration::from_millis(20));
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let app = kvrun::server::router(AppState::new(handle.clone(), Arc::new(paths)));
        let (stop_http, stopped) = tokio::sync::oneshot::channel::<()>();
        runtime.spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = stopped.await;
                })
                .await
                .unwrap();
        });
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(600)))
            .build()
            .new_agent();
        Self {
            url,
            handle,
            engine: Some(engine),
            runtime: Some(runtime),
            stop_http: stop_http.into(),
            agent,
        }
    }

    pub fn tiny(home: &Path) -> Self {
        Self::start(home, &crate::common::tiny_model(), 4096)
    }

    fn answer(response: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Answer {
        let mut response = response.expect("the connection must not fail");
        Answer {
            status: response.status().as_u16(),
            headers: response.headers().clone(),
            body: response
                .body_mut()
                .with_config()
                .limit(64 << 20)
                .read_to_string()
                .unwrap(),
        }
    }

    pub fn post(&self, path: &str, body: &Value, headers: &[(&str, &str)]) -> Answer {
        self.post_raw(path, &body.to_string(), headers)
    }

    pub fn post_raw(&self, path: &str, body: &str, headers: &[(&str, &str)]) -> Answer {
        let mut request = self
            .agent
            .post(format!("{}{path}", self.url))
            .header("content-type", "application/json");
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        Self::answer(request.send(body))
    }

    pub fn get(&self, path: &str) -> Answer {
        Self::answer(self.agent.get(format!("{}{path}", self.url)).call())
    }

    pub fn delete(&self, path: &str) -> Answer {
        Self::answer(self.agent.delete(format!("{}{path}", self.url)).call())
    }

    /// Stops HTTP, then the engine (which saves every conversation).
    pub fn stop(mut self) {
        self.shut_down();
    }

    fn shut_down(&mut self) {
        if let Some(stop) = self.stop_http.take() {
            let _ = stop.send(());
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
        if let Some(engine) = self.engine.take() {
            self.handle.shutdown();
            engine.join().unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shut_down();
    }
}
