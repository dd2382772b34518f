//! Requests as the benchmark programs feed them to a [`ServiceHarness`]: greedy, anonymous,
//! their replies timed as they arrive.

use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};

use crate::llama::TokenId;
use crate::service::harness::ServiceHarness;
use crate::service::protocol::{Ask, CancelToken, ConversationKey, Reply, Request, Usage};

/// `prompt` submitted for `max_tokens` greedy tokens.
pub(super) fn submit(
    service: &ServiceHarness,
    prompt: &[TokenId],
    max_tokens: usize,
) -> Result<Stream> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let cancel = CancelToken::new();
    service
        .handle()
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
pub(super) fn streams(
    service: &ServiceHarness,
    prompts: &[Vec<TokenId>],
    decode: usize,
) -> Result<f64> {
    let streams = prompts
        .iter()
        .map(|p| submit(service, p, decode))
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
    service: &ServiceHarness,
    others: &[Vec<TokenId>],
    late: &[TokenId],
    decode: usize,
) -> Result<Duration> {
    let mut streams = others
        .iter()
        .map(|p| submit(service, p, decode))
        .collect::<Result<Vec<_>>>()?;
    for s in &mut streams {
        s.first_token()?;
    }
    let usage = submit(service, late, 1)?.usage()?;
    for s in streams {
        s.cancel.cancel();
        s.usage()?;
    }
    Ok(usage.queued + usage.time_to_first_token)
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
