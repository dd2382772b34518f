//! The service engine as the benchmark programs drive it: started on a model into a
//! folder of its own, fed requests, stopped once its saves have landed.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};

use crate::llama::TokenId;
use crate::paths::Paths;
use crate::service::protocol::{Ask, CancelToken, ConversationKey, Reply, Request, Usage};
use crate::service::{ServiceHandle, ServiceOptions};
use crate::settings::LlamaSettings;

/// An engine of its own, for one benchmark run.
pub(super) struct Service {
    handle: ServiceHandle,
    thread: crate::service::EngineThread,
}

impl Service {
    pub(super) fn start(
        choice: &crate::models::ModelChoice,
        llama: &LlamaSettings,
        paths: Paths,
        parallel: usize,
    ) -> Result<Self> {
        let options = ServiceOptions {
            paths,
            model: choice.clone(),
            llama: llama.clone(),
            sizing: crate::service::engine::ContextSizing::Fixed,
            tiers: Default::default(),
            parallel,
            max_queue: parallel,
            chat_template: None,
            alias: None,
            warm: None,
            prefetch: None,
            keep_latest_hot: false,
        };
        let (handle, thread) = crate::service::start(options)?;
        while handle.info().is_none() {
            if thread.is_finished() {
                thread.join()?;
                bail!("the engine ended while loading");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(Self { handle, thread })
    }

    /// The loaded model (for tokenizing).
    pub(super) fn model(&self) -> std::sync::Arc<crate::llama::Model> {
        self.handle
            .model()
            .expect("loaded before start returned")
            .clone()
    }

    pub(super) fn submit(&self, prompt: &[TokenId], max_tokens: usize) -> Result<Stream> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = CancelToken::new();
        self.handle
            .submit(Request {
                id: 0,
                ask: Ask::new(ConversationKey::Anonymous, prompt.to_vec(), max_tokens),
                transcript: None,
                progress: false,
                cancel: cancel.clone(),
                replies: tx,
                received: Instant::now(),
                save_before_done: false,
            })
            .map_err(anyhow::Error::from)?;
        Ok(Stream {
            replies: rx,
            cancel,
        })
    }

    /// Aggregate tokens/s while all `prompts` generate at once: tokens that arrived between
    /// the moment the last stream started generating and the moment the first one ended.
    pub(super) fn streams(&self, prompts: &[Vec<TokenId>], decode: usize) -> Result<f64> {
        let streams = prompts
            .iter()
            .map(|p| self.submit(p, decode))
            .collect::<Result<Vec<_>>>()?;
        let arrivals: Vec<Vec<Instant>> = std::thread::scope(|s| {
            let joins: Vec<_> = streams
                .into_iter()
                .map(|stream| s.spawn(move || stream.arrivals()))
                .collect();
            joins
                .into_iter()
                .map(|j| j.join().expect("collector thread"))
                .collect::<Result<Vec<_>>>()
        })?;
        let start = arrivals.iter().filter_map(|a| a.first()).max().copied();
        let end = arrivals.iter().filter_map(|a| a.last()).min().copied();
        let (Some(start), Some(end)) = (start, end) else {
            bail!("a stream generated nothing");
        };
        let tokens = arrivals
            .iter()
            .flatten()
            .filter(|&&t| t > start && t <= end)
            .count();
        Ok(tokens as f64 / end.saturating_duration_since(start).as_secs_f64().max(1e-9))
    }

    /// Time to first token of `late` submitted once every one of `others` generates.
    pub(super) fn late_arrival(
        &self,
        others: &[Vec<TokenId>],
        late: &[TokenId],
        decode: usize,
    ) -> Result<Duration> {
        let mut streams = others
            .iter()
            .map(|p| self.submit(p, decode))
            .collect::<Result<Vec<_>>>()?;
        for s in &mut streams {
            s.first_token()?;
        }
        let usage = self.submit(late, 1)?.usage()?;
        for s in streams {
            s.cancel.cancel();
            s.usage()?;
        }
        Ok(usage.queued + usage.time_to_first_token)
    }

    /// The engine's figures now.
    pub(super) fn stats(&self) -> Result<crate::service::ServiceStats> {
        Ok(self.handle.stats_blocking()?)
    }

    /// Stops the engine once the last replies' commits have landed (so that their time is
    /// counted); returns its stats from then.
    pub(super) fn stop(self) -> Result<crate::service::ServiceStats> {
        let deadline = Instant::now() + Duration::from_secs(60);
        let stats = loop {
            let stats = self.handle.stats_blocking()?;
            let heard = stats.saves_landed + stats.save_failures;
            if heard >= stats.saves || Instant::now() > deadline {
                break stats;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        self.handle.shutdown();
        self.thread.join()?;
        Ok(stats)
    }
}

pub(super) struct Stream {
    replies: tokio::sync::mpsc::UnboundedReceiver<Reply>,
    cancel: CancelToken,
}

impl Stream {
    pub(super) fn next(&mut self) -> Result<Reply> {
        let reply = self
            .replies
            .blocking_recv()
            .context("the engine dropped a request")?;
        if let Reply::Failed(e) = &reply {
            bail!("a benchmark request failed: {e}");
        }
        Ok(reply)
    }

    pub(super) fn first_token(&mut self) -> Result<()> {
        while !matches!(self.next()?, Reply::Token(_)) {}
        Ok(())
    }

    /// When each token arrived.
    pub(super) fn arrivals(mut self) -> Result<Vec<Instant>> {
        let mut at = Vec::new();
        loop {
            match self.next()? {
                Reply::Token(_) => at.push(Instant::now()),
                Reply::Done(_) => return Ok(at),
                _ => {}
            }
        }
    }

    pub(super) fn usage(mut self) -> Result<Usage> {
        loop {
            if let Reply::Done(u) = self.next()? {
                return Ok(u);
            }
        }
    }
}
