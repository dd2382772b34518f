//! indicatif bars behind the library's reporting traits.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::Ui;
use crate::pull::PullReporter;
use crate::sequence::SyncObserver;

/// Download progress in bytes.
pub struct BytesBar {
    ui: Ui,
    bar: Mutex<Option<ProgressBar>>,
}

impl BytesBar {
    pub fn new(ui: Ui) -> Self {
        Self {
            ui,
            bar: Mutex::new(None),
        }
    }
}

impl PullReporter for BytesBar {
    fn begin(&self, label: &str, total_bytes: Option<u64>) {
        if !self.ui.bars {
            self.ui.note(format!("{label} ..."));
            return;
        }
        let bar = match total_bytes {
            Some(total) => ProgressBar::new(total),
            None => ProgressBar::new_spinner(),
        };
        bar.set_draw_target(ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template(
                "{msg:24!} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        bar.set_message(label.to_string());
        if let Ok(mut slot) = self.bar.lock() {
            *slot = Some(bar);
        }
    }

    fn advance(&self, bytes: u64) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.inc(bytes);
            }
        }
    }

    fn finish(&self) {
        if let Ok(mut slot) = self.bar.lock() {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        }
    }

    fn note(&self, message: &str) {
        if let Ok(slot) = self.bar.lock() {
            if let Some(bar) = slot.as_ref() {
                bar.suspend(|| self.ui.note(message));
                return;
            }
        }
        self.ui.note(message);
    }
}

/// Prefill progress in tokens, shown only for prompts long enough to take a while. It also
/// stops the prefill when Ctrl-C was pressed.
pub struct PrefillBar<'a> {
    bar: Option<ProgressBar>,
    cancel: &'a AtomicBool,
}

/// Below this many tokens a prefill is quick enough that a bar would only flicker.
const PREFILL_BAR_MIN_TOKENS: usize = 1024;

impl<'a> PrefillBar<'a> {
    pub fn new(ui: Ui, tokens: usize, cancel: &'a AtomicBool) -> Self {
        let bar = (ui.bars && tokens >= PREFILL_BAR_MIN_TOKENS).then(|| {
            let bar = ProgressBar::new(tokens as u64);
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template(
                    "prefill [{bar:30}] {pos}/{len} tokens {per_sec} ETA {eta}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar
        });
        Self { bar, cancel }
    }
}

impl SyncObserver for PrefillBar<'_> {
    fn progress(&mut self, done: usize, total: usize) -> ControlFlow<()> {
        if let Some(bar) = &self.bar {
            bar.set_position(done as u64);
            if done >= total {
                bar.finish_and_clear();
            }
        }
        if self.cancel.load(Ordering::Relaxed) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

impl Drop for PrefillBar<'_> {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
