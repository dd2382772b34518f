//! Which model to run, and checking it before llama.cpp sees it.
//!
//! MODEL resolves in this order: the command-line argument, `KVRUN_MODEL`, the config
//! file's `model`, then the pulled default model. An argument is a path to a `.gguf` file
//! or the name of one in the models folder (with or without `.gguf`).

use std::path::{Path, PathBuf};

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

/// Why a model cannot be used, before llama.cpp ever sees it.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the default model is not downloaded yet ({}); run `kvrun pull` first", .0.display())]
    DefaultMissing(PathBuf),
    #[error("model file {} (from KVRUN_MODEL) does not exist", .0.display())]
    EnvMissing(PathBuf),
    #[error("model file {} (from the config file) does not exist", .0.display())]
    ConfigMissing(PathBuf),
    #[error(
        "model file {} does not exist (give a .gguf path or a name from `kvrun models`)",
        .0.display()
    )]
    ArgumentMissing(PathBuf),
    #[error("{} is a folder, not a .gguf model file", .0.display())]
    Folder(PathBuf),
    #[error("{} is not a usable GGUF model: {source}", path.display())]
    NotGguf {
        path: PathBuf,
        #[source]
        source: gguf::GgufError,
    },
}

/// Checks that the file exists and is a well-formed GGUF (header, metadata, tensor table)
/// before llama.cpp, which aborts the process on some malformed files, ever opens it.
pub fn validate(choice: &ModelChoice) -> Result<gguf::ModelInfo, ModelError> {
    let path = &choice.path;
    if !path.exists() {
        let path = path.clone();
        return Err(match choice.source {
            ModelSource::Default => ModelError::DefaultMissing(path),
            ModelSource::Env => ModelError::EnvMissing(path),
            ModelSource::Config => ModelError::ConfigMissing(path),
            ModelSource::Argument => ModelError::ArgumentMissing(path),
        });
    }
    if path.is_dir() {
        return Err(ModelError::Folder(path.clone()));
    }
    let file = gguf::read_header(path)
        .and_then(|file| file.check_loadable().map(|()| file))
        .map_err(|source| ModelError::NotGguf {
            path: path.clone(),
            source,
        })?;
    Ok(file.info())
}
