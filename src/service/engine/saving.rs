//! Saving conversations without stalling the others. A save's engine-thread half (capture
//! and slicing) runs here; its commit (objects, fsyncs, the manifest) runs on the session's
//! writer thread while the engine decodes on. Outcomes come back between batch steps.
//!
//! - The end of a reply queues its save and goes on; the outcome reaches the client's next
//!   Save (a chat, `run --session`) or the log (the HTTP APIs). With `serve --durability
//!   before` the writer sends the reply's Done once the commit landed, with its outcome.
//! - A client's Save waits for the session's earlier commit (so that it sees that commit's
//!   outcome and repairs what it lost), then queues its own; the reply is sent from the
//!   writer once the manifest is durable. While others decode, the Save waits parked, not
//!   the engine thread.
//! - What reads the store as a whole (gc, removing a session, shutdown) first waits for
//!   every queued commit.
//! - A commit that found pages missing (a gc that ignored the writer's lease took them)
//!   still saved the log; while the conversation's KV is in the context, a repair save
//!   writes those pages again, between batch steps and at shutdown.

use super::parked::ParkedSave;
use std::time::Instant;

use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::oneshot;

use super::conversations::MAX_UNHEARD_WARNINGS;
use super::Engine;
use crate::llama::Context;
use crate::service::handle::Saved;
use crate::service::protocol::{Reply, SaveStatus, ServiceError, Transcript, Usage};
use crate::session::live::{CommitNotice, CommitOutcome, SaveOrigin, SaveReport};
use crate::template::TemplateIdentity;

impl<'c, 'm> Engine<'c, 'm> {
    /// Queues the save that ends a reply in conversation `index` and marks it idle. With
    /// `done` (`--durability before`), the reply's Done is sent once the save is durable or
    /// has failed, with that outcome.
    pub(super) fn save_reply(
        &mut self,
        ctx: &mut Context<'m>,
        index: usize,
        prompt_len: usize,
        interrupted: bool,
        (transcript, template): (Option<&Transcript>, Option<TemplateIdentity>),
        done: Option<(UnboundedSender<Reply>, Usage)>,
    ) {
        self.conversations.end_request(index);
        let open = &mut self.conversations[index];
        open.prompt_len = prompt_len;
        open.last_used = Instant::now();
        open.last_used_unix = crate::clock::unix_now();
        open.live.set_prompt_tokens(prompt_len);
        open.live.set_interrupted(interrupted);
        // A client that keeps the messages (a chat, `run --session`) saves them right after
        // and hears this save's warnings, or its failure, from that save; the HTTP APIs'
        // clients keep no messages, so the log is where they show.
        let client_saves = transcript.is_some();
        let raw = Transcript::raw();
        let state = transcript.unwrap_or(&raw).state(template);
        let origin = SaveOrigin::ReplyEnd { client_saves };
        let notice = done.map(|(replies, usage)| done_once_saved(replies, usage));
        let planned = open
            .live
            .save_in_background(ctx, &open.seq, state, origin, notice);
        match planned {
            Ok(engine_ms) => self.counters.record_save_queued(engine_ms),
            Err(e) => {
                report_failure(&open.live.name, client_saves, &e);
                self.counters.record_save_failed();
            }
        }
    }

    /// Saves session `name` now, recording `transcript` with its log; `reply` hears once
    /// the manifest is durable. Waits (parked) for the session's commit in flight first.
    pub(super) fn save_now(
        &mut self,
        ctx: &mut Context<'m>,
        name: &str,
        transcript: Transcript,
        reply: oneshot::Sender<Result<Saved, ServiceError>>,
    ) {
        let index = match self.open_index(name) {
            Ok(i) => i,
            Err(e) => {
                let _ = reply.send(Err(e));
                return;
            }
        };
        if self.conversations[index].live.commits_in_flight() > 0 {
            if !self.schedule.none_decoding() {
                self.parked_saves.push(ParkedSave {
                    name: name.to_string(),
                    transcript,
                    reply,
                });
                return;
            }
            // Nothing decodes: waiting here stalls no one.
            self.wait_for_commits_of(index);
        }
        self.route_outcomes(index);
        let open = &mut self.conversations[index];
        // The template of the last reply's request, which its save recorded.
        let template = open.live.latest().and_then(|m| m.chat_template.clone());
        let unheard = std::mem::take(&mut open.unheard_warnings);
        let session = name.to_string();
        let notice = Box::new(
            move |result: &Result<SaveReport, crate::session::LiveError>| {
                let answer = match result {
                    Ok(report) => Ok(saved(unheard, report)),
                    Err(e) => Err(ServiceError::Internal(format!(
                        "saving session '{session}': {}",
                        crate::format::one_line_of(e)
                    ))),
                };
                let _ = reply.send(answer);
            },
        );
        let state = transcript.state(template);
        let planned = open.live.save_in_background(
            ctx,
            &open.seq,
            state,
            SaveOrigin::Requested,
            Some(notice),
        );
        match planned {
            Ok(engine_ms) => self.counters.record_save_queued(engine_ms),
            Err(_) => self.counters.record_save_failed(),
        }
        self.enforce_cold_budget(ctx);
    }

    /// Between batch steps: hands landed commits' outcomes to their clients or the log,
    /// and runs the parked Saves whose session has no commit in flight any more (all of
    /// them once nothing decodes).
    pub(super) fn settle_saves(&mut self, ctx: &mut Context<'m>) {
        self.route_all_outcomes();
        self.repair_saves(ctx);
        if self.parked_saves.is_empty() {
            return;
        }
        let parked = std::mem::take(&mut self.parked_saves);
        for save in parked {
            let in_flight = self
                .conversations
                .find(&save.name)
                .map_or(0, |i| self.conversations[i].live.commits_in_flight());
            if in_flight > 0 && !self.schedule.none_decoding() {
                self.parked_saves.push(save);
            } else {
                self.save_now(ctx, &save.name, save.transcript, save.reply);
            }
        }
    }

    /// Queues a repair save for every idle conversation whose last manifest landed with
    /// pages missing, while the context still holds them (a cooled one restores by
    /// recomputing them instead).
    pub(super) fn repair_saves(&mut self, ctx: &mut Context<'m>) {
        for open in self.conversations.iter_mut() {
            let holds_kv = open.hot().is_some() && open.seq.kv_len() > 0;
            if open.is_busy()
                || !holds_kv
                || open.live.commits_in_flight() > 0
                || !open.live.needs_repair()
            {
                continue;
            }
            tracing::info!(
                "session '{}': writing again the pages its last save found missing",
                open.live.name
            );
            match open.live.repair_in_background(ctx, &open.seq) {
                Ok(engine_ms) => self.counters.record_save_queued(engine_ms),
                Err(e) => {
                    report_failure(&open.live.name, false, &e);
                    self.counters.record_save_failed();
                }
            }
        }
    }

    /// Waits for conversation `index`'s queued writes (the time counts as the engine
    /// thread's save time).
    pub(super) fn wait_for_commits_of(&mut self, index: usize) {
        let started = Instant::now();
        self.conversations[index].live.wait_for_commits();
        self.counters
            .record_save_wait(started.elapsed().as_secs_f64() * 1e3);
        self.route_outcomes(index);
    }

    /// Waits for every conversation's queued writes: before a gc reads the manifests, or
    /// the engine ends.
    pub(super) fn wait_for_all_commits(&mut self) {
        for index in 0..self.conversations.len() {
            self.wait_for_commits_of(index);
        }
    }

    /// After a gc: pages written early and not yet named by a manifest may be gone.
    pub(super) fn forget_unnamed_writes(&mut self) {
        for open in self.conversations.iter_mut() {
            open.live.forget_unnamed_writes();
        }
    }

    /// Hands every landed commit's outcome to its client or the log, and counts it.
    pub(super) fn route_all_outcomes(&mut self) {
        for index in 0..self.conversations.len() {
            self.route_outcomes(index);
        }
    }

    fn route_outcomes(&mut self, index: usize) {
        let open = &mut self.conversations[index];
        for outcome in open.live.take_outcomes() {
            let CommitOutcome { origin, result, .. } = outcome;
            match &result {
                Ok(report) => {
                    let p = &report.phases;
                    let writer_ms = report.save_ms - p.plan_ms - p.queue_ms;
                    self.counters.record_save_landed(writer_ms.max(0.0));
                }
                Err(_) => self.counters.record_save_failed(),
            }
            let SaveOrigin::ReplyEnd { client_saves } = origin else {
                // A client's own Save: its reply channel has heard.
                continue;
            };
            match result {
                Ok(report) if client_saves => {
                    let room = MAX_UNHEARD_WARNINGS.saturating_sub(open.unheard_warnings.len());
                    open.unheard_warnings
                        .extend(report.warnings.into_iter().take(room));
                }
                Ok(report) => report.warnings.iter().for_each(|w| tracing::warn!("{w}")),
                Err(e) => report_failure(&open.live.name, client_saves, &e),
            }
        }
    }
}

/// A failed end-of-reply save: a client that saves next hears of it from its own save,
/// which repairs what this one lost; for the others it goes to the log.
fn report_failure(name: &str, client_saves: bool, e: &crate::session::LiveError) {
    if client_saves {
        tracing::debug!(
            "saving session '{name}' failed; the client's save tries again: {}",
            crate::format::one_line_of(e)
        );
    } else {
        tracing::error!(
            "saving session '{name}' failed (its previous save is intact; the next one \
             writes what this one lacked): {}",
            crate::format::one_line_of(e)
        );
    }
}

/// Sends a reply's Done with its save's outcome, on the writer thread once the commit
/// landed (or at once, when the save failed before it was queued).
fn done_once_saved(replies: UnboundedSender<Reply>, mut usage: Usage) -> CommitNotice {
    Box::new(
        move |result: &Result<SaveReport, crate::session::LiveError>| {
            usage.saved = Some(match result {
                Ok(_) => SaveStatus::Saved,
                // The client sees this line: it names the session and what failed, never the
                // server's folders.
                Err(e) => SaveStatus::Failed(crate::format::without_paths(&format!(
                    "saving session '{}' failed: {}",
                    usage.session,
                    crate::format::one_line_of(e)
                ))),
            });
            let _ = replies.send(Reply::Done(usage));
        },
    )
}

/// A save's report as the client hears it, after the warnings it had not heard yet.
pub fn saved(mut warnings: Vec<String>, report: &SaveReport) -> Saved {
    warnings.extend(report.warnings.iter().cloned());
    Saved {
        bytes: report.bytes_written,
        ms: report.save_ms,
        warnings,
    }
}
