//! Memory tiers: hot (the llama.cpp context), warm (kvrun's RAM pool of pages) and cold (the
//! on-disk object store), with budgets, and the device figures they are shown against.
//!
//! [`evict`] decides what each tier drops; the engine thread moves hot conversations, the
//! [`WarmPool`] holds the warm pages, and the store (`crate::store`) holds the cold ones.

pub mod evict;
mod system;
mod tier;
mod warm;

pub use system::{parse_bytes, parse_duration, resident_bytes, Devices, SystemMemory};
pub use tier::Tier;
pub use warm::{WarmPool, WarmStats};
