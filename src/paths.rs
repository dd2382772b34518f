//! Where kvrun keeps its state.
//!
//! `KVRUN_HOME` puts everything (models, sessions, KV pages, config, logs) under one folder,
//! which is what the tests use. Without it, the platform's folders from `directories` apply
//! (XDG on Linux, `~/Library/Application Support` on macOS, `%APPDATA%` on Windows).

use std::path::{Path, PathBuf};

/// The resolved set of folders kvrun reads and writes.
#[derive(Debug, Clone)]
pub struct Paths {
    /// Downloaded and listed models (`*.gguf`).
    pub models: PathBuf,
    /// Persistent state: sessions and the KV page store.
    pub data: PathBuf,
    /// `config.toml`.
    pub config_file: PathBuf,
    /// Log files (the TUI writes its log here instead of onto the screen).
    pub logs: PathBuf,
}

/// The platform gives no home folder (and `KVRUN_HOME` is not set).
#[derive(Debug, thiserror::Error)]
#[error("cannot determine a home folder for kvrun's state; set KVRUN_HOME to choose one")]
pub struct NoHomeFolder;

impl Paths {
    /// Resolves the folders from `KVRUN_HOME` or the platform defaults. Creates nothing.
    pub fn resolve() -> Result<Self, NoHomeFolder> {
        match std::env::var_os("KVRUN_HOME").filter(|v| !v.is_empty()) {
            Some(home) => Ok(Self::under(Path::new(&home))),
            None => {
                let dirs = directories::ProjectDirs::from("", "", "kvrun").ok_or(NoHomeFolder)?;
                Ok(Self {
                    models: dirs.data_dir().join("models"),
                    data: dirs.data_dir().to_path_buf(),
                    config_file: dirs.config_dir().join("config.toml"),
                    logs: dirs.cache_dir().join("logs"),
                })
            }
        }
    }

    /// Everything under one root folder (the `KVRUN_HOME` layout).
    pub fn under(home: &Path) -> Self {
        Self {
            models: home.join("models"),
            data: home.to_path_buf(),
            config_file: home.join("config.toml"),
            logs: home.join("logs"),
        }
    }

    /// Session manifests live here, one folder per session.
    pub fn sessions(&self) -> PathBuf {
        self.data.join("sessions")
    }

    /// The content-addressed KV object store (pages and tails).
    pub fn objects(&self) -> PathBuf {
        self.data.join("kv").join("objects")
    }
}
