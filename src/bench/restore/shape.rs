//! The generated models of `bench restore --shape`: a real model's KV layout with random
//! weights, written once into a folder and reused.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::cli::BenchShape;
use crate::env::Env;
use crate::synth::{GraniteSpec, Qwen35Spec, TinyLlamaSpec};

/// What a `--shape` model is written from.
enum Shape {
    Llama(TinyLlamaSpec),
    Qwen35(Qwen35Spec),
    Granite(GraniteSpec),
}

/// The generated model of `shape` in `dir`: reused when a loadable one is there, else
/// written (streamed, atomically: an interrupted write leaves no half model behind).
pub(super) fn shaped_model(env: &Env, shape: BenchShape, dir: &Path) -> Result<PathBuf> {
    let (name, writer) = match shape {
        BenchShape::Tiny => (
            "tiny-f16",
            Shape::Llama(TinyLlamaSpec {
                context_length: 65536,
                ..TinyLlamaSpec::default()
            }),
        ),
        BenchShape::Llama8b => (
            "llama-8b-q4_0",
            Shape::Llama(TinyLlamaSpec::llama_8b_shape()),
        ),
        BenchShape::Llama8bNarrowFfn => (
            "llama-8b-narrow-ffn-q4_0",
            Shape::Llama(TinyLlamaSpec::llama_8b_narrow_ffn()),
        ),
        BenchShape::Qwen35_27bCache => (
            "qwen35-27b-cache-f16",
            Shape::Qwen35(Qwen35Spec::qwen35_27b_cache()),
        ),
        BenchShape::Granite4HSmallCache => (
            "granite-4-h-small-cache-f16",
            Shape::Granite(GraniteSpec::granite_4_h_small_cache()),
        ),
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(format!("kvrun-bench-{name}.gguf"));
    if crate::gguf::read_header(&path).is_ok_and(|f| f.check_loadable().is_ok()) {
        return Ok(path);
    }
    env.ui.note(format!(
        "writing a random-weight {name} model to {} ...",
        path.display()
    ));
    let started = Instant::now();
    let writer = match writer {
        Shape::Llama(spec) => crate::synth::tiny_llama_writer(&spec)?,
        Shape::Qwen35(spec) => crate::synth::qwen35_writer(&spec, 1),
        Shape::Granite(spec) => crate::synth::granite_writer(&spec, 1),
    };
    crate::store::write_atomic_with(&path, |w| writer.write_to(w))?;
    crate::gguf::read_header(&path)?.check_loadable()?;
    env.ui.note(format!(
        "wrote {} in {:.1} s",
        crate::format::human_bytes(std::fs::metadata(&path)?.len()),
        started.elapsed().as_secs_f64()
    ));
    Ok(path)
}
