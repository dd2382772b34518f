//! The service run in the caller's own process, the way the integration tests and the
//! benchmarks drive it: one builder (as uv's `TestContext::new(..).with_…()`) over
//! [`ServiceOptions`], and the running service it starts, which waits for the model to load
//! and is stopped and joined when dropped. A front end starts the service itself; this is
//! for the programs that measure or check it.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::engine::ContextSizing;
use super::protocol::Request;
use super::{EngineThread, ServiceHandle, ServiceOptions, ServiceStats};
use crate::llama::{Model, TokenId};
use crate::models::ModelChoice;
use crate::paths::Paths;
use crate::settings::{FlashAttn, KvType, LlamaSettings, TierSettings, DEFAULT_BATCH_SIZE};

/// How long a model may take to load before [`HarnessBuilder::start`] gives up.
const READY_DEADLINE: Duration = Duration::from_secs(120);

/// A service started by [`ServiceHarness::new`]`(..).start()`.
pub struct ServiceHarness {
    handle: ServiceHandle,
    thread: Option<EngineThread>,
}

/// What a [`ServiceHarness`] starts with. The defaults suit a test: a fixed context of
/// 4,096 cells, one sequence, 16 requests queued, two threads, f16 KV, no GPU.
pub struct HarnessBuilder {
    options: ServiceOptions,
    queued: Vec<Request>,
}

impl ServiceHarness {
    /// A service on the model file `model`, with its folders under `home`.
    pub fn new(home: &Path, model: &Path) -> HarnessBuilder {
        HarnessBuilder {
            options: ServiceOptions {
                paths: Paths::under(home),
                model: ModelChoice::argument(model.to_path_buf()),
                llama: LlamaSettings {
                    ctx_size: 4096,
                    threads: 2,
                    gpu_layers: 0,
                    batch_size: DEFAULT_BATCH_SIZE,
                    kv_type: KvType::F16,
                    flash_attn: FlashAttn::Auto,
                },
                sizing: ContextSizing::Fixed,
                tiers: TierSettings::default(),
                parallel: 1,
                max_queue: 16,
                chat_template: None,
                alias: None,
                warm: None,
                prefetch: None,
                keep_latest_hot: false,
            },
            queued: Vec::new(),
        }
    }

    pub fn handle(&self) -> &ServiceHandle {
        &self.handle
    }

    /// The loaded model (for tokenizing).
    pub fn model(&self) -> Arc<Model> {
        self.handle
            .model()
            .expect("loaded before start returned")
            .clone()
    }

    pub fn tokenize(&self, text: &str) -> Vec<TokenId> {
        self.model().tokenize_prompt(text)
    }

    /// The service's figures now.
    pub fn stats(&self) -> Result<ServiceStats> {
        Ok(self.handle.stats_blocking()?)
    }

    /// Stops the service and waits for its thread.
    pub fn stop(mut self) -> Result<()> {
        self.handle.shutdown();
        if let Some(thread) = self.thread.take() {
            thread.join()?;
        }
        Ok(())
    }

    /// Stops the service once the saves it started have landed (a minute at most), so that
    /// their time is counted; its figures from then.
    pub fn stop_when_saved(self) -> Result<ServiceStats> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let stats = loop {
            let stats = self.stats()?;
            let heard = stats.saves_landed + stats.save_failures;
            if heard >= stats.saves || Instant::now() > deadline {
                break stats;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        self.stop()?;
        Ok(stats)
    }
}

impl Drop for ServiceHarness {
    fn drop(&mut self) {
        if let Some(thread) = self.thread.take() {
            self.handle.shutdown();
            let _ = thread.join();
        }
    }
}

impl HarnessBuilder {
    /// A model chosen as the CLI chooses one, instead of a file.
    pub fn with_model(mut self, model: ModelChoice) -> Self {
        self.options.model = model;
        self
    }

    /// llama.cpp's settings, instead of the test defaults.
    pub fn with_llama(mut self, llama: LlamaSettings) -> Self {
        self.options.llama = llama;
        self
    }

    /// A fixed context of `cells`.
    pub fn with_ctx_size(mut self, cells: u32) -> Self {
        self.options.llama.ctx_size = cells;
        self
    }

    /// An elastic context (`--ctx-size auto`) that grows from its floor to `ceiling` cells.
    pub fn with_elastic(mut self, ceiling: u32) -> Self {
        self.options.llama.ctx_size = ceiling;
        self.options.sizing = ContextSizing::Elastic {
            ceiling: Some(ceiling),
        };
        self
    }

    /// Sequences decoded together.
    pub fn with_parallel(mut self, parallel: usize) -> Self {
        self.options.parallel = parallel;
        self
    }

    /// Requests that may wait beyond the parallel ones.
    pub fn with_max_queue(mut self, max_queue: usize) -> Self {
        self.options.max_queue = max_queue;
        self
    }

    pub fn with_tiers(mut self, tiers: TierSettings) -> Self {
        self.options.tiers = tiers;
        self
    }

    /// Requests submitted before the model has loaded, so that the engine admits them all
    /// in its first step, whatever the machine's load.
    pub fn with_queued(mut self, requests: Vec<Request>) -> Self {
        self.queued = requests;
        self
    }

    pub fn options(&self) -> &ServiceOptions {
        &self.options
    }

    /// Starts the service and returns once its model is loaded and its context made.
    pub fn start(self) -> Result<ServiceHarness> {
        let (handle, thread) = super::start(self.options)?;
        for request in self.queued {
            handle.submit(request)?;
        }
        let deadline = Instant::now() + READY_DEADLINE;
        while handle.info().is_none() {
            if thread.is_finished() {
                thread.join()?;
                bail!("the service ended while loading its model");
            }
            if Instant::now() > deadline {
                bail!("the service did not load its model within {READY_DEADLINE:?}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(ServiceHarness {
            handle,
            thread: Some(thread),
        })
    }
}
