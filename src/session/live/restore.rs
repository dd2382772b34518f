//! Restoring a saved session from its pages: the snapshot is bound to the token log (the
//! log wins where the manifest's ids disagree), pages are read through the warm pool and
//! verified, and the furthest restore point they support is loaded without prefill.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::{Context as _, Result};

use super::page_read::{read_pages, PageRequest};
use super::{LiveSession, RestoreReport};
use crate::engine::Context;
use crate::kv::layout::{BASE, SWA};
use crate::kv::{KvLayout, TailRecord};
use crate::sequence::Sequence;
use crate::session::capture::{self, RestoreSection};
use crate::session::identity::bind_snapshot;
use crate::session::manifest::{KvSnapshot, SessionManifest};
use crate::store::ObjectId;

impl LiveSession<'_> {
    /// Loads the saved snapshot into the (fresh) context. Damaged or missing pages are
    /// reported and the affected part of the log is left for prefill.
    pub fn restore(&mut self, ctx: &mut Context<'_>) -> Result<(Sequence, RestoreReport)> {
        let started = Instant::now();
        let mut report = RestoreReport::default();
        let Some(m) = self.saved.clone() else {
            return Ok((Sequence::new(), report));
        };
        self.check_compatible(ctx)?;
        // Whatever is not restored is recomputed in the batches it was first decoded in.
        let seq_id = self.slot.seq;
        let replay = m
            .snapshot
            .as_ref()
            .map(|s| s.batch_starts.for_replay(s.kv_len))
            .unwrap_or_default();
        let open = move |tokens, restored| {
            Sequence::restored(tokens, restored)
                .in_seq(seq_id)
                .with_batch_starts(replay)
        };
        if m.snapshot.is_none() {
            return Ok((open(m.tokens, 0), report));
        };
        let stored = match m.kv.layout.as_deref().map(KvLayout::decode) {
            Some(Ok(l)) => l,
            Some(Err(e)) => {
                report
                    .warnings
                    .push(format!("session '{}': {e}", self.name));
                return Ok((open(m.tokens, 0), report));
            }
            None => return Ok((open(m.tokens, 0), report)),
        };
        // The stored layout is trusted only as far as its checksum and the checks above go:
        // llama.cpp validates every type and row size again, and a refusal falls back to
        // prefill. (No probe decode here: it would cost a forward pass per restore.)
        self.layout = Some(stored);
        let restored = self.load_snapshot(ctx, &m, &mut report)?;
        report.restored_tokens = restored;
        report.restore_ms = started.elapsed().as_secs_f64() * 1e3;
        Ok((open(m.tokens, restored), report))
    }

    /// Loads the snapshot as its token log names it: every id is recomputed from the log
    /// ([`bind_snapshot`]), and where the manifest's list disagrees the log wins (with a
    /// warning), so only pages that are the KV of these very tokens can be loaded.
    fn load_snapshot(
        &mut self,
        ctx: &mut Context<'_>,
        m: &SessionManifest,
        report: &mut RestoreReport,
    ) -> Result<usize> {
        let bound = match bind_snapshot(m) {
            None => return Ok(0),
            Some(Ok(bound)) => bound,
            Some(Err(e)) => {
                report.warnings.push(format!(
                    "session '{}': {e}; recomputing it from the token log by prefill",
                    self.name
                ));
                return Ok(0);
            }
        };
        if let Some(first) = bound.mismatches.first() {
            report.warnings.push(format!(
                "session '{}': the manifest's KV ids do not match its token log ({first}{}); \
                 using only pages that match the log, the rest is recomputed",
                self.name,
                match bound.mismatches.len() {
                    1 => String::new(),
                    n => format!(", and {} more", n - 1),
                }
            ));
        }
        self.load_pages(ctx, &bound.snapshot, report)
    }

    /// Reads and verifies pages, picks the furthest restore point they support, assembles
    /// the blob and loads it. Returns the number of tokens now in the cache.
    pub(super) fn load_pages(
        &mut self,
        ctx: &mut Context<'_>,
        snap: &KvSnapshot,
        report: &mut RestoreReport,
    ) -> Result<usize> {
        let layout = self.layout.clone().context("internal: KV layout unknown")?;
        let p = self.page_tokens;
        let name = self.name.clone();
        let mut damaged = Vec::new();
        let mut fetched = self.fetch_pages(snap, &layout, report);
        // Full-attention pages, up to the first damaged one.
        let mut base: Vec<Vec<u8>> = Vec::with_capacity(snap.pages.len());
        for (i, (id, read)) in snap.pages.iter().zip(fetched.base.drain(..)).enumerate() {
            match read {
                Ok(rows) => base.push(rows),
                Err(e) => {
                    damaged.push(*id);
                    report.warnings.push(format!(
                        "session '{name}': page {i} ({id}) is unusable ({e:#}); recomputing \
                         from token {} by prefill",
                        i * p
                    ));
                    break;
                }
            }
        }
        let full = base.len();
        // The tail, only if every page before it is fine.
        let mut tail = None;
        if let (true, Some(id), Some(bytes)) = (full == snap.pages.len(), snap.tail, fetched.tail) {
            let swa_per_cell = if layout.is_iswa() {
                layout.bytes_per_token(SWA)
            } else {
                0
            };
            if bytes.is_err() {
                damaged.push(id);
            }
            match bytes.and_then(|b| {
                Ok(TailRecord::decode(
                    &b,
                    layout.bytes_per_token(BASE),
                    swa_per_cell,
                )?)
            }) {
                Ok(t) if full * p + t.n_cells as usize == snap.kv_len => tail = Some(t),
                Ok(_) => {
                    damaged.push(id);
                    report.warnings.push(format!(
                        "session '{name}': the tail record does not match the token log; \
                         recomputing it by prefill"
                    ))
                }
                Err(e) => report.warnings.push(format!(
                    "session '{name}': the tail record ({id}) is unusable ({e:#}); \
                     recomputing it by prefill"
                )),
            }
        }
        // Sliding-window rows by page index (iSWA only).
        let mut swa_rows: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
        for ((k, id), read) in snap.swa_pages.iter().zip(fetched.swa) {
            match read {
                Ok(rows) => {
                    swa_rows.insert(*k, rows);
                }
                Err(e) => {
                    damaged.push(*id);
                    report.warnings.push(format!(
                        "session '{name}': sliding-window rows of page {k} ({id}) are \
                         unusable ({e:#})"
                    ))
                }
            }
        }
        for id in damaged {
            // Missing or damaged alike: the next save writes it anew.
            self.present.remove(&id);
            self.damaged.insert(id);
        }
        // Candidate restore points, furthest first: the snapshot's end, then page
        // boundaries (a unified cache can stop at any; an iSWA cache needs its window).
        let mut candidates = Vec::new();
        if let Some(t) = &tail {
            candidates.push(full * p + t.n_cells as usize);
        }
        candidates.extend((1..=full).rev().map(|k| k * p));
        for end in candidates {
            let pages = (end / p).min(full);
            let tail_cells = end - pages * p;
            let mut sections = vec![RestoreSection {
                first_pos: 0,
                count: end,
                chunks: base[..pages].iter().map(Vec::as_slice).collect(),
            }];
            if tail_cells > 0 {
                if let Some(t) = &tail {
                    sections[0].chunks.push(&t.base);
                }
            }
            let swa_slices;
            if layout.is_iswa() {
                let start = end.saturating_sub(self.n_swa as usize);
                let mut pieces = Vec::new();
                let mut complete = true;
                for k in start / p..pages {
                    let lo = (k * p).max(start) - k * p;
                    match swa_rows.get(&k) {
                        Some(rows) if lo == 0 => pieces.push(rows.clone()),
                        Some(rows) => pieces.push(crate::kv::layout::slice_cells(
                            &layout.sections[SWA],
                            rows,
                            p,
                            lo..p,
                        )),
                        None => {
                            complete = false;
                            break;
                        }
                    }
                }
                if !complete {
                    continue;
                }
                if tail_cells > 0 {
                    if let Some(t) = &tail {
                        pieces.push(t.swa.clone());
                    }
                }
                swa_slices = pieces;
                sections.push(RestoreSection {
                    first_pos: start,
                    count: end - start,
                    chunks: swa_slices.iter().map(Vec::as_slice).collect(),
                });
            }
            let loaded =
                capture::restore_into(ctx, self.slot, &layout, &sections, &mut report.phases);
            tracing::debug!("session '{name}': restore phases {:?}", report.phases);
            match loaded {
                Ok(()) => {
                    for id in snap.pages.iter().take(pages) {
                        self.present.insert(*id);
                    }
                    if end < snap.kv_len {
                        report.warnings.push(format!(
                            "session '{name}': restored {end} of {} tokens from pages; the rest \
                             is recomputed from the token log",
                            snap.kv_len
                        ));
                    }
                    return Ok(end);
                }
                Err(e) => {
                    report.warnings.push(format!(
                        "session '{name}': llama.cpp refused the restored KV ({e:#}); \
                         recomputing by prefill"
                    ));
                    return Ok(0);
                }
            }
        }
        if snap.kv_len > 0 {
            report.warnings.push(format!(
                "session '{name}': no usable restore point; recomputing all {} tokens by \
                 prefill",
                snap.kv_len
            ));
        }
        Ok(0)
    }
}

/// A snapshot's objects as read, in snapshot order.
struct Fetched {
    base: Vec<Result<Vec<u8>>>,
    swa: Vec<Result<Vec<u8>>>,
    /// `None` when the snapshot has no tail.
    tail: Option<Result<Vec<u8>>>,
}

impl LiveSession<'_> {
    /// Reads every object the snapshot names in one parallel pass (pages after a damaged
    /// one are read too: the reads overlap, and a restore rarely meets damage).
    fn fetch_pages(
        &self,
        snap: &KvSnapshot,
        layout: &KvLayout,
        report: &mut RestoreReport,
    ) -> Fetched {
        let p = self.page_tokens;
        let page = |id: &ObjectId, section| PageRequest {
            id: *id,
            expected_len: Some(p * layout.bytes_per_token(section)),
        };
        let mut requests: Vec<PageRequest> = snap.pages.iter().map(|id| page(id, BASE)).collect();
        let swa: &[(usize, ObjectId)] = if layout.is_iswa() {
            &snap.swa_pages
        } else {
            &[]
        };
        requests.extend(swa.iter().map(|(_, id)| page(id, SWA)));
        requests.extend(snap.tail.map(|id| PageRequest {
            id,
            expected_len: None,
        }));
        let reads = read_pages(self.catalog.store(), self.warm.as_deref(), &requests);
        report.phases.read_ms += reads.read_ms;
        report.phases.verify_ms += reads.verify_ms;
        let mut results = reads.results.into_iter();
        Fetched {
            base: results.by_ref().take(snap.pages.len()).collect(),
            swa: results.by_ref().take(swa.len()).collect(),
            tail: results.next(),
        }
    }
}
