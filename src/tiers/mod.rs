//! Memory tiers: hot (the llama.cpp context), warm (kvrun's RAM pool of pages) and cold (the
//! on-disk object store), with budgets, and the device figures they are shown against.

mod system;
mod warm;

pub use system::{parse_bytes, parse_duration, resident_bytes, Devices, SystemMemory};
pub use warm::{WarmPool, WarmStats};
