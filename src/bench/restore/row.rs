//! The figures `bench restore` takes for one session length, as [`super::measure`] fills
//! them and [`super::tables`] prints them.

use crate::bench::harness::median;
use crate::session::live::SavePhases;

/// One session length's figures.
pub(super) struct Row {
    pub(super) tokens: usize,
    /// Not a number for a synthetic session, which has no prefill.
    pub(super) prefill_s: f64,
    pub(super) save_ms: f64,
    pub(super) save: SaveColumns,
    pub(super) snapshot_bytes: u64,
    pub(super) incremental_save_ms: f64,
    pub(super) llama: LlamaFile,
    /// Each restore figure's median over the rounds.
    pub(super) restore: RestoreSample,
}

/// llama.cpp's own one-file save of the same sequence.
pub(super) struct LlamaFile {
    pub(super) save_ms: f64,
    /// The save plus one fsync of its file (and its directory), the durable equivalent of
    /// kvrun's save.
    pub(super) save_fsync_ms: f64,
    pub(super) bytes: u64,
}

/// The full save's phases and what it wrote.
pub(super) struct SaveColumns {
    pub(super) phases: SavePhases,
    pub(super) objects: usize,
    pub(super) bytes: u64,
    /// Stored by the background writer during the prefill (not in the save's time).
    pub(super) early_objects: usize,
    pub(super) early_bytes: u64,
}

/// One round of restore measurements of session "bench", each from a cold page cache.
#[derive(Clone, Copy)]
pub(super) struct RestoreSample {
    pub(super) llama_load_ms: f64,
    /// kvrun's restore timed as llama.cpp's load is: in this process, into the same fresh
    /// context, from a cold page cache (milliseconds, and its read phase).
    pub(super) in_process_restore_ms: f64,
    pub(super) in_process_read_ms: f64,
    /// CPU time of this process (all its threads) during that restore, and during
    /// llama.cpp's load: on a machine with few cores, what bounds a restore from the page
    /// cache's reads.
    pub(super) in_process_cpu_ms: f64,
    pub(super) llama_load_cpu_ms: f64,
    pub(super) warm: WarmCache,
    /// A plain read of the snapshot's files from a cold page cache (MB/s).
    pub(super) read_mb_s: f64,
    /// The fresh process's `restore_ms`, `restore_phases` (read with verify overlapped,
    /// verify, assemble, load) and `first_token_ms`.
    pub(super) restore_ms: f64,
    pub(super) phases: [f64; 4],
    pub(super) first_token_ms: f64,
}

/// The same restore and load with every byte already in the page cache, and the rate of a
/// plain read of the snapshot's files from there: no disk, only what the cores and memory
/// allow (milliseconds; the read in MB/s).
#[derive(Clone, Copy, Default)]
pub(super) struct WarmCache {
    pub(super) restore_ms: f64,
    pub(super) restore_cpu_ms: f64,
    pub(super) llama_load_ms: f64,
    pub(super) read_mb_s: f64,
}

impl RestoreSample {
    /// Each figure's median over the rounds.
    pub(super) fn medians(samples: &[RestoreSample]) -> RestoreSample {
        let m = |f: fn(&RestoreSample) -> f64| median(&samples.iter().map(f).collect::<Vec<_>>());
        RestoreSample {
            llama_load_ms: m(|s| s.llama_load_ms),
            in_process_restore_ms: m(|s| s.in_process_restore_ms),
            in_process_read_ms: m(|s| s.in_process_read_ms),
            in_process_cpu_ms: m(|s| s.in_process_cpu_ms),
            llama_load_cpu_ms: m(|s| s.llama_load_cpu_ms),
            warm: WarmCache {
                restore_ms: m(|s| s.warm.restore_ms),
                restore_cpu_ms: m(|s| s.warm.restore_cpu_ms),
                llama_load_ms: m(|s| s.warm.llama_load_ms),
                read_mb_s: m(|s| s.warm.read_mb_s),
            },
            read_mb_s: m(|s| s.read_mb_s),
            restore_ms: m(|s| s.restore_ms),
            phases: [0, 1, 2, 3]
                .map(|i| median(&samples.iter().map(|s| s.phases[i]).collect::<Vec<_>>())),
            first_token_ms: m(|s| s.first_token_ms),
        }
    }
}
