//! `kvrun models`: the GGUF files in the models folder, read from their headers.

pub(super) mod pull;

use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::cli::ModelsArgs;
use crate::env::Env;
use crate::format::human_bytes;
use crate::gguf;
use crate::models::Purpose;
use crate::pull::{known_model, DEFAULT_MODELS};

#[derive(Serialize)]
struct ModelRow {
    name: String,
    path: String,
    size: u64,
    architecture: Option<String>,
    context_length: Option<u64>,
    quantization: Option<String>,
    /// The commands this model is the default of (`chat`, `run`, `serve`).
    default_for: Vec<&'static str>,
    /// Set when the file is not a valid GGUF model.
    error: Option<String>,
}

pub fn run(env: &Env, args: ModelsArgs) -> Result<ExitCode> {
    let mut rows = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&env.paths.models) {
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "gguf") && p.is_file())
            .collect();
        paths.sort();
        for path in paths {
            let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
            let name = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let mut row = ModelRow {
                name,
                path: path.display().to_string(),
                size,
                architecture: None,
                context_length: None,
                quantization: None,
                default_for: default_for(env, &path),
                error: None,
            };
            match gguf::read_header(&path) {
                Ok(file) => {
                    let info = file.info();
                    row.architecture = Some(info.architecture);
                    row.context_length = info.context_length;
                    row.quantization = Some(info.quantization);
                }
                Err(e) => row.error = Some(e.to_string()),
            }
            rows.push(row);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        env.ui.note(format!(
            "no models in {}; `kvrun pull` fetches the default models",
            env.paths.models.display()
        ));
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:<36} {:>10} {:<12} {:>8} {:<8} DEFAULT FOR",
        "NAME", "SIZE", "ARCH", "CONTEXT", "QUANT"
    );
    for row in rows {
        let dash = || "-".to_string();
        match row.error {
            Some(e) => println!(
                "{:<36} {:>10} invalid: {e}",
                row.name,
                human_bytes(row.size)
            ),
            None => println!(
                "{:<36} {:>10} {:<12} {:>8} {:<8} {}",
                row.name,
                human_bytes(row.size),
                row.architecture.unwrap_or_else(dash),
                row.context_length
                    .map(|c| c.to_string())
                    .unwrap_or_else(dash),
                row.quantization.unwrap_or_else(dash),
                row.default_for.join(", "),
            ),
        }
    }
    let missing: Vec<&str> = DEFAULT_MODELS
        .iter()
        .filter(|m| !crate::models::known_model_path(&env.paths, m).exists())
        .map(|m| m.short_name)
        .collect();
    if !missing.is_empty() {
        env.ui.note(format!(
            "not pulled yet: {} (`kvrun pull` fetches them)",
            missing.join(", ")
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// The commands a file in the models folder is the default model of (under the name
/// `kvrun pull` gives it, or its short name).
fn default_for(env: &Env, path: &std::path::Path) -> Vec<&'static str> {
    path.file_stem()
        .and_then(|name| known_model(&name.to_string_lossy()))
        .filter(|model| crate::models::known_model_path(&env.paths, model) == path)
        .map(|model| Purpose::defaulted_to(&model))
        .unwrap_or_default()
}
