//! Which model to run, and checking it before llama.cpp sees it.
//!
//! MODEL resolves in this order: the command-line argument, `KVRUN_MODEL`, the config
//! file's `model`, then the pulled default model for the command's [`Purpose`]. An argument
//! is a path to a `.gguf` file, the name of one in the models folder (with or without
//! `.gguf`), or a default model's short name (`smollm2`, `gemma3`).

use std::path::{Path, PathBuf};

use crate::config::FileConfig;
use crate::gguf;
use crate::paths::Paths;
use crate::pull::{known_model, KnownModel, GEMMA3, SMOLLM2};

/// What a command runs a model for, which decides its default model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// `chat` and `run`: a conversation with a person, so an instruct model that chats.
    Chat,
    /// `serve` and the benchmarks: agents' prompts (Claude Code's first is about 21,000
    /// tokens), so the default model with the longest context.
    Serve,
}

impl Purpose {
    /// The pulled model this purpose defaults to.
    pub fn default_model(self) -> KnownModel {
        match self {
            Purpose::Chat => SMOLLM2,
            Purpose::Serve => GEMMA3,
        }
    }

    /// The purposes whose default `model` is.
    pub fn defaulted_to(model: &KnownModel) -> Vec<&'static str> {
        let mut uses = Vec::new();
        if Purpose::Chat.default_model() == *model {
            uses.extend(["chat", "run"]);
        }
        if Purpose::Serve.default_model() == *model {
            uses.push("serve");
        }
        uses
    }
}

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
    /// The default model it is, when it is one (by source, or by short name).
    pub known: Option<KnownModel>,
}

impl ModelChoice {
    /// A model file named on the command line (or found some other way, such as a session's
    /// recorded model): its path as given.
    pub fn argument(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            source: ModelSource::Argument,
            known: None,
        }
    }

    pub fn is_default(&self) -> bool {
        self.source == ModelSource::Default
    }
}

/// Picks the model path (without checking that it exists).
pub fn choose(
    arg: Option<&str>,
    config: &FileConfig,
    paths: &Paths,
    purpose: Purpose,
) -> ModelChoice {
    let env = std::env::var("KVRUN_MODEL").ok().filter(|v| !v.is_empty());
    let (spec, source) = if let Some(a) = arg {
        (a.to_string(), ModelSource::Argument)
    } else if let Some(e) = env {
        (e, ModelSource::Env)
    } else if let Some(c) = &config.model {
        (c.clone(), ModelSource::Config)
    } else {
        let known = purpose.default_model();
        return ModelChoice {
            path: known_model_path(paths, &known),
            source: ModelSource::Default,
            known: Some(known),
        };
    };
    let path = locate(&spec, &paths.models);
    // A short name (`smollm2`) names a default model's file, pulled or not.
    let known = known_model(&spec).filter(|_| !path.exists());
    match known {
        Some(known) => ModelChoice {
            path: known_model_path(paths, &known),
            source,
            known: Some(known),
        },
        None => ModelChoice {
            path,
            source,
            known: None,
        },
    }
}

/// A known model's place in the models folder: the file `kvrun pull` writes, or, where
/// that is absent, one named after its short name (`smollm2.gguf`, a link a user made).
pub fn known_model_path(paths: &Paths, model: &KnownModel) -> PathBuf {
    let pulled = paths.models.join(model.descriptor.file_name);
    let named = paths.models.join(format!("{}.gguf", model.short_name));
    if !pulled.exists() && named.is_file() {
        named
    } else {
        pulled
    }
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
    #[error("{title} is not downloaded yet; run `kvrun pull {short_name}` first")]
    KnownMissing {
        title: &'static str,
        short_name: &'static str,
    },
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
        if let (Some(known), false) = (choice.known, choice.is_default()) {
            return Err(ModelError::KnownMissing {
                title: known.title,
                short_name: known.short_name,
            });
        }
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
