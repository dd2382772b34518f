//! The name of a memory tier, as lists and panels show where a session's KV is.

use serde::{Deserialize, Serialize};

/// A memory tier.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Resident in the llama.cpp context (VRAM when layers are offloaded, else RAM).
    Hot,
    /// Pages in kvrun's RAM pool.
    Warm,
    /// Pages in the on-disk store.
    #[default]
    Cold,
    /// Not cached anywhere: recomputed from the token log.
    Prefill,
}

impl Tier {
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Hot => "hot",
            Tier::Warm => "warm",
            Tier::Cold => "cold",
            Tier::Prefill => "prefill",
        }
    }

    /// The tier the engine's figures name ("hot", "warm"); anything else is the store's.
    pub fn from_engine(name: &str) -> Self {
        match name {
            "hot" => Tier::Hot,
            "warm" => Tier::Warm,
            _ => Tier::Cold,
        }
    }
}
