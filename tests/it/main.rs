//! kvrun's integration tests, in one binary so that llama.cpp is linked once and the
//! tests share the model files, the pulled models and the built `kvrun`. Each module is one
//! area; run one with `cargo test --release --test it <module>::`.
//!
//! The tests run the real binary and the real llama.cpp on the default models and on tiny
//! random-weight models the project writes ([`kvrun::synth`]); server tests speak real HTTP
//! with the official SDKs.

mod common;

mod bad_input;
mod bad_models;
mod bad_settings;
mod chat;
mod chat_templates;
// Only a GPU build has a device to test; `.ci/vulkan` runs these on a software one.
#[cfg(any(feature = "vulkan", feature = "cuda", feature = "metal"))]
mod device;
mod generated_files;
mod kv_blob_real;
mod kv_types;
mod memory_kinds;
mod run;
mod serve;
mod serve_agents;
mod serve_api;
mod serve_durability;
mod serve_edge;
mod serve_malformed;
mod serve_models;
mod serve_ollama;
mod serve_ollama_clients;
mod serve_oversized;
mod serve_sdk;
mod service;
mod service_elastic;
mod service_many;
mod service_save;
mod session_gc;
mod session_identity;
mod session_reliability;
mod sessions;
mod special_tokens;
mod template_fidelity;
mod tiers;
mod tools;
mod tui_e2e;
