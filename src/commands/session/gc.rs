//! `kvrun gc`: delete KV objects that no session references.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::GcArgs;
use crate::env::Env;
use crate::format::human_bytes;
use crate::session::catalog::SessionCatalog;

pub fn run(env: &Env, args: GcArgs) -> Result<ExitCode> {
    let catalog = SessionCatalog::open(&env.paths)?;
    let report = catalog.gc()?;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "removed": report.removed,
                "kept": report.kept,
                "bytes_freed": report.bytes_freed,
            })
        );
    } else {
        env.ui.note(format!(
            "removed {} unreferenced objects ({}); {} kept",
            report.removed,
            human_bytes(report.bytes_freed),
            report.kept
        ));
    }
    Ok(ExitCode::SUCCESS)
}
