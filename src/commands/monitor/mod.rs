//! `kvrun stats` and `kvrun top`: what kvrun holds where, on this machine or in a running
//! server ([`remote`] is the HTTP client of `/v1/kvrun/*`, also used by `session ls
//! --connect`); [`devices`] prints the memory figures both show.

pub mod devices;
pub mod remote;
pub mod stats;
pub mod top;
