//! Which model to run, and checking it before llama.cpp sees it.
//!
//! MODEL resolves in this order: the command-line argument, `KVRUN_MODEL`, the config
//! file's `model`, then the pulled default model. An argument is a path to a `.gguf` file
//! or the name of one in the models folder (with or without `.gguf`).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use crate::config::FileConfig;
use crate::gguf;
use crate::paths::Paths;
use crate::pull::DEFAULT_MODEL;

/// Where the chosen model came from; decides what to say when it is missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    Argument,
    Env,
    Config,
    Default,
}

#[derive(Debug, Clone)]
pub struct ModelChoice {
    pub path: PathBuf,
    pub source: ModelSource,
}

impl ModelChoice {
    pub fn is_default(&self) -> bool {
        self.source == ModelSource::Default
    }
}

/// Picks the model path (without checking that it exists).
pub fn choose(arg: Option<&str>, config: &FileConfig, paths: &Paths) -> ModelChoice {
    let env = std::env::var("KVRUN_MODEL").ok().filter(|v| !v.is_empty());
    let (spec, source) = if let Some(a) = arg {
        (a.to_string(), ModelSource::Argument)
    } else if let Some(e) = env {
        (e, ModelSource::Env)
    } else if let Some(c) = &config.model {
        (c.clone(), ModelSource::Config)
    } else {
        return ModelChoice {
            path: default_model_path(paths),
            source: ModelSource::Default,
        };
    };
    ModelChoice {
        path: locate(&spec, &paths.models),
        source,
    }
}

/// The default model's place in the models folder.
pub fn default_model_path(paths: &Paths) -> PathBuf {
    paths.models.join(DEFAULT_MODEL.file_name)
}

/// A path as given, else a name in the models folder.
fn locate(spec: &str, models_dir: &Path) -> PathBuf {
    let as_path = PathBuf::from(spec);
    if as_path.exists() || spec.contains(std::path::MAIN_SEPARATOR) {
        return as_path;
    }
    for candidate in [
        models_dir.join(spec),
        models_dir.join(format!("{spec}.gguf")),
    ] {
        if candidate.exists() {
            return candidate;
        }
    }
    as_path
}

/// Checks that the file exists and is a well-formed GGUF (header, metadata, tensor table)
/// before llama.cpp, which aborts the process on some malformed files, ever opens it.
pub fn validate(choice: &ModelChoice) -> Result<gguf::ModelInfo> {
    let path = &choice.path;
    if !path.exists() {
        match choice.source {
            ModelSource::Default => bail!(
                "the default model is not downloaded yet ({}); run `kvrun pull` first",
                path.display()
            ),
            ModelSource::Env => bail!(
                "model file {} (from KVRUN_MODEL) does not exist",
                path.display()
            ),
            ModelSource::Config => bail!(
                "model file {} (from the config file) does not exist",
                path.display()
            ),
            ModelSource::Argument => bail!(
                "model file {} does not exist (give a .gguf path or a name from `kvrun models`)",
                path.display()
            ),
        }
    }
    if path.is_dir() {
        bail!("{} is a folder, not a .gguf model file", path.display());
    }
    let file = gguf::read_header(path)
        .and_then(|file| file.check_loadable().map(|()| file))
        .with_context(|| format!("{} is not a usable GGUF model", path.display()))?;
    Ok(file.info())
}
