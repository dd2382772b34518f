//! Diagnostics through `tracing`. Silent by default (warnings from kvrun only); `-v` adds
//! kvrun's info and llama.cpp's own log, `-vv` debug. `KVRUN_LOG` takes a full filter
//! instead (for example `KVRUN_LOG=kvrun=debug,llama-cpp-2=info`; llama.cpp logs under `llama-cpp-2`).
//!
//! Logs go to stderr, except while the TUI owns the terminal: then they go to a file in the
//! logs folder, never onto the screen being drawn.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::EnvFilter;

/// Where log lines go right now: stderr, or a file while the TUI runs.
static LOG_FILE: Mutex<Option<File>> = Mutex::new(None);

pub fn init(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "kvrun=warn,llama-cpp-2=off",
        (false, 1) => "kvrun=info,llama-cpp-2=info",
        (false, _) => "kvrun=debug,llama-cpp-2=debug",
    };
    let filter = std::env::var("KVRUN_LOG")
        .ok()
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Sink)
        .with_target(false)
        .without_time()
        .try_init();
}

/// Sends log lines to `dir/kvrun.log` until [`to_stderr`] (the TUI calls this).
pub fn to_file(dir: &Path) -> std::io::Result<std::path::PathBuf> {
    crate::store::create_private_dir_all(dir).map_err(std::io::Error::other)?;
    let path = dir.join("kvrun.log");
    let file = crate::store::private_file_options()
        .create(true)
        .append(true)
        .open(&path)?;
    *LOG_FILE.lock().unwrap_or_else(|e| e.into_inner()) = Some(file);
    Ok(path)
}

/// Sends log lines to stderr again.
pub fn to_stderr() {
    *LOG_FILE.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

struct Sink;

struct SinkWriter;

impl Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut file = LOG_FILE.lock().unwrap_or_else(|e| e.into_inner());
        match file.as_mut() {
            Some(f) => f.write(buf),
            None => std::io::stderr().write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Sink {
    type Writer = SinkWriter;

    fn make_writer(&'a self) -> Self::Writer {
        SinkWriter
    }
}
