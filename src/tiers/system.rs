//! System memory and disk figures, and human byte sizes for budgets ("2GiB").

use std::path::Path;

/// RAM and disk as the OS reports them (zeros where a figure is unavailable).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SystemMemory {
    pub ram_total: u64,
    pub ram_available: u64,
    pub process_rss: u64,
    pub disk_total: u64,
    pub disk_free: u64,
}

impl SystemMemory {
    /// Reads `/proc` (Linux) and the filesystem holding `data_dir`.
    pub fn read(data_dir: &Path) -> Self {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let field = |name: &str| -> u64 {
            meminfo
                .lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
                .map_or(0, |kb| kb * 1024)
        };
        // The folder may not exist yet; measure the nearest existing ancestor.
        let mut dir = data_dir;
        while !dir.exists() {
            match dir.parent() {
                Some(parent) => dir = parent,
                None => break,
            }
        }
        Self {
            ram_total: field("MemTotal:"),
            ram_available: field("MemAvailable:"),
            process_rss: resident_bytes(Path::new("/proc/self")),
            disk_total: fs4::total_space(dir).unwrap_or(0),
            disk_free: fs4::available_space(dir).unwrap_or(0),
        }
    }
}

/// The three devices the tiers live on, as one process sees them: VRAM (each GPU; none on a
/// CPU-only machine, where the hot tier is in RAM), RAM and the disk (NVMe) of the store.
/// `kvrun serve` reports its own in `/v1/kvrun/stats` and `/metrics`, for `kvrun top` and
/// `kvrun stats --connect` to show.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Devices {
    pub gpus: Vec<crate::llama::GpuDevice>,
    #[serde(flatten)]
    pub system: SystemMemory,
}

impl Devices {
    /// This process's view: llama.cpp's GPUs, `/proc` and the filesystem of `data_dir`.
    pub fn read(data_dir: &Path) -> Self {
        Self {
            gpus: crate::llama::gpu_devices(),
            system: SystemMemory::read(data_dir),
        }
    }
}

/// Resident bytes of the process whose `/proc` folder is `proc_dir` (`/proc/self`,
/// `/proc/PID`); 0 where unavailable.
pub fn resident_bytes(proc_dir: &Path) -> u64 {
    let pages = std::fs::read_to_string(proc_dir.join("statm"))
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(0);
    pages * 4096
}

/// Parses a byte size: `512MiB`, `2GiB`, `1.5G`, `300000` (bytes). Decimal units (KB, MB,
/// GB) are powers of 1000; binary ones (KiB, MiB, GiB, or a bare K, M, G) powers of 1024.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid size {text:?}: expected a number and a unit like 2GiB"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024.0f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        other => return Err(format!("invalid size {text:?}: unknown unit {other:?}")),
    };
    Ok((value * scale) as u64)
}

/// Parses a duration: `90s`, `10m`, `2h`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: expected e.g. 30s, 10m or 2h"))?;
    let secs = match unit.trim() {
        "" | "s" => n,
        "m" | "min" => n * 60,
        "h" => n * 3600,
        other => return Err(format!("invalid duration {text:?}: unknown unit {other:?}")),
    };
    Ok(std::time::Duration::from_secs(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("2GiB").unwrap(), 2 << 30);
        assert_eq!(parse_bytes("512M").unwrap(), 512 << 20);
        assert_eq!(parse_bytes("1.5k").unwrap(), 1536);
        assert_eq!(parse_bytes("10MB").unwrap(), 10_000_000);
        assert_eq!(parse_bytes("42").unwrap(), 42);
        assert!(parse_bytes("lots").is_err());
        assert!(parse_bytes("3 parsecs").is_err());
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("90").unwrap().as_secs(), 90);
        assert_eq!(parse_duration("10m").unwrap().as_secs(), 600);
        assert_eq!(parse_duration("2h").unwrap().as_secs(), 7200);
        assert!(parse_duration("soon").is_err());
    }

    #[test]
    fn reads_something_on_linux() {
        let m = SystemMemory::read(Path::new("/"));
        if cfg!(target_os = "linux") {
            assert!(m.ram_total > 0 && m.disk_total > 0 && m.process_rss > 0);
        }
    }
}
