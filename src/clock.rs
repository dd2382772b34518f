//! The wall clock as kvrun records it: seconds since the Unix epoch in manifests, catalogs
//! and API objects, nanoseconds where a fresh id or seed needs a changing input. A clock set
//! before 1970 reads as 0 rather than failing.

use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds since the Unix epoch.
pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Nanoseconds since the Unix epoch (ids and seeds, not time arithmetic).
pub fn unix_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}
