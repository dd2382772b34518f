//! The devices llama.cpp offloads to, and the check that a context's KV fits the memory
//! they have free before llama.cpp is asked for it.

use super::{backend, LlamaError, Model};
use crate::settings::LlamaSettings;

/// A GPU (or other accelerator) as llama.cpp's backend reports it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GpuDevice {
    pub name: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
}

/// The GPUs llama.cpp can use, with their memory figures (empty on a CPU-only build).
pub fn gpu_devices() -> Vec<GpuDevice> {
    if backend().is_err() {
        return Vec::new();
    }
    use llama_cpp_2::LlamaBackendDeviceType as T;
    llama_cpp_2::list_llama_ggml_backend_devices()
        .into_iter()
        .filter(|d| matches!(d.device_type, T::Gpu | T::IntegratedGpu | T::Accelerator))
        .map(|d| GpuDevice {
            name: if d.description.is_empty() {
                d.name
            } else {
                d.description
            },
            total_bytes: d.memory_total as u64,
            free_bytes: d.memory_free as u64,
        })
        .collect()
}

/// Whether this build has a GPU backend compiled in.
pub fn gpu_offload_supported() -> bool {
    backend().map(|b| b.supports_gpu_offload()).unwrap_or(false)
}

/// Refuses a context of `cells` cells whose KV cannot fit the free memory of the devices
/// its offloaded layers put it on. llama.cpp would fail the allocation or, on some backends,
/// abort the process (Vulkan aborts when one layer's cache outgrows the device's largest
/// storage buffer). Where the model's KV size is not plain from its metadata, or no device
/// reports its memory, llama.cpp decides alone.
pub(super) fn check_kv_fits_devices(
    model: &Model,
    settings: &LlamaSettings,
    cells: u32,
) -> Result<(), LlamaError> {
    let facts = model.facts();
    let n_layer = facts.n_layer.max(1);
    let offloaded = settings.gpu_layers.min(n_layer);
    let Some(values) = facts.kv_values_per_cell else {
        return Ok(());
    };
    if offloaded == 0 || !gpu_offload_supported() {
        return Ok(());
    }
    let gpus: Vec<GpuDevice> = gpu_devices()
        .into_iter()
        .filter(|g| g.total_bytes > 0)
        .collect();
    if gpus.is_empty() {
        return Ok(());
    }
    let free: u64 = gpus.iter().map(|g| g.free_bytes).sum();
    let bytes_per_value = settings.kv_type.value_bytes();
    let needed = f64::from(cells) * values as f64 * bytes_per_value * f64::from(offloaded)
        / f64::from(n_layer);
    if needed <= free as f64 {
        return Ok(());
    }
    let names: Vec<&str> = gpus.iter().map(|g| g.name.as_str()).collect();
    Err(LlamaError::DeviceMemory {
        cells,
        needed: needed as u64,
        free,
        devices: names.join(", "),
    })
}
