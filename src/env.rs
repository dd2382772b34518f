//! What every command and benchmark may need: folders, the config file, the user's
//! terminal, and the model load with its chat template override.

use std::time::Instant;

use anyhow::{Context as _, Result};

use crate::config::FileConfig;
use crate::exit::usage;
use crate::llama::Model;
use crate::models::ModelChoice;
use crate::paths::Paths;
use crate::ui::Ui;

/// Validates the chosen model file and loads it, returning the load time in ms.
/// The chat template to use instead of the model's own: the flag, else the config file's.
pub(crate) fn chat_template_override<'a>(
    arg: &'a crate::cli::ModelArg,
    env: &'a Env,
) -> Option<&'a str> {
    arg.chat_template
        .as_deref()
        .or(env.config.chat_template.as_deref())
}

/// Applies `--chat-template` (or the config key) to a loaded model.
pub(crate) fn apply_chat_template(
    model: &mut Model,
    arg: &crate::cli::ModelArg,
    env: &Env,
) -> Result<()> {
    if let Some(spec) = chat_template_override(arg, env) {
        model.set_chat_template(spec)?;
    }
    Ok(())
}

pub(crate) fn load_model(choice: &ModelChoice, gpu_layers: u32) -> Result<(Model, f64)> {
    crate::models::validate(choice)?;
    let started = Instant::now();
    let model = Model::load(&choice.path, gpu_layers)
        .with_context(|| format!("loading {}", choice.path.display()))?;
    Ok((model, started.elapsed().as_secs_f64() * 1e3))
}

/// Sessions keep a scratch sequence next to the main one to read page ranges.
pub(crate) const SESSION_SEQS: u32 = 2;

/// What every command may need: folders, the config file, and how to talk to the user.
pub struct Env {
    pub paths: Paths,
    pub config: FileConfig,
    pub ui: Ui,
}

impl Env {
    pub(crate) fn load(quiet: bool) -> Result<Self> {
        let paths = Paths::resolve()?;
        let config = FileConfig::load(&paths.config_file).map_err(|e| usage(e.to_string()))?;
        Ok(Self {
            paths,
            config,
            ui: Ui::new(quiet),
        })
    }
}
