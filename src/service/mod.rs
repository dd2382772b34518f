//! The engine as a service: one thread owns the model's llama.cpp context and serves
//! generation requests from any number of front ends (the HTTP server first), decoding
//! several conversations in one batch.
//!
//! Front ends speak only [`protocol`]: a [`protocol::Request`] carries its own id, its
//! conversation, its sampling settings, stop conditions and cancel token, and its replies
//! stream back on its own channel. Rendering and tokenizing happen on the caller's side
//! (the [`crate::llama::Model`] is shared read-only), so the engine thread only decodes.

pub mod engine;
pub mod fleet;
pub mod handle;
pub mod harness;
pub mod protocol;

pub use engine::{start, EngineThread, ServiceOptions};
pub use fleet::{Fleet, FleetError, Lease};
pub use handle::{Command, ServiceHandle, ServiceInfo, ServiceStats};
