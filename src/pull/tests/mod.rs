//! Offline tests against a local HTTP server.

mod direct;
mod server;
mod wheels;

use std::sync::Mutex;

use sha2::{Digest, Sha256};

use super::PullReporter;

/// Deterministic incompressible bytes, long enough to span several 64 KiB copy chunks.
fn fake_bytes(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u8
        })
        .collect()
}

/// Permission bits of a file or folder.
fn mode_of(path: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

fn sha_hex(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Records what the library reports, to check progress adds up.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<String>>,
    advanced: Mutex<u64>,
}

impl Recorder {
    fn advanced(&self) -> u64 {
        self.advanced.lock().map(|a| *a).unwrap_or(0)
    }
    fn events(&self) -> Vec<String> {
        self.events.lock().map(|e| e.clone()).unwrap_or_default()
    }
}

impl PullReporter for Recorder {
    fn begin(&self, label: &str, total_bytes: Option<u64>) {
        if let Ok(mut e) = self.events.lock() {
            e.push(format!("begin {label} {total_bytes:?}"));
        }
    }
    fn advance(&self, bytes: u64) {
        if let Ok(mut a) = self.advanced.lock() {
            *a += bytes;
        }
    }
    fn finish(&self) {
        if let Ok(mut e) = self.events.lock() {
            e.push("finish".into());
        }
    }
    fn note(&self, message: &str) {
        if let Ok(mut e) = self.events.lock() {
            e.push(format!("note {message}"));
        }
    }
}
