//! The devices the tiers live on (VRAM, RAM, NVMe), as `kvrun stats` and `kvrun top`
//! print them.

use crate::format::human_bytes;
use crate::llama::GpuDevice;
use crate::tiers::Devices;

/// Where the hot tier lives: the GPUs' VRAM, or RAM without one.
pub(super) fn hot_device(gpus: &[GpuDevice]) -> &'static str {
    if gpus.is_empty() {
        "RAM (no GPU)"
    } else {
        "VRAM"
    }
}

/// The three devices, one line each: VRAM per GPU (or "no GPU"), RAM (with `process`'s
/// share when it is a server's), NVMe (the store's filesystem).
pub(super) fn print_devices(devices: &Devices, with_process: bool) {
    let system = &devices.system;
    if devices.gpus.is_empty() {
        println!("VRAM  no GPU: the hot tier lives in RAM");
    }
    for g in &devices.gpus {
        println!(
            "VRAM  {}: {} used of {} ({} free)",
            g.name,
            human_bytes(g.total_bytes.saturating_sub(g.free_bytes)),
            human_bytes(g.total_bytes),
            human_bytes(g.free_bytes)
        );
    }
    let kvrun = if with_process {
        format!("kvrun {} · ", human_bytes(system.process_rss))
    } else {
        String::new()
    };
    println!(
        "RAM   {kvrun}system {} used of {} ({} available)",
        human_bytes(system.ram_total.saturating_sub(system.ram_available)),
        human_bytes(system.ram_total),
        human_bytes(system.ram_available)
    );
    println!(
        "NVMe  {} used of {} ({} free)",
        human_bytes(system.disk_total.saturating_sub(system.disk_free)),
        human_bytes(system.disk_total),
        human_bytes(system.disk_free)
    );
}
