//! `kvrun man`, and the generated files committed under `completions/` and `man/`.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::{Cli, ManArgs};

pub fn run(args: ManArgs) -> Result<ExitCode> {
    match args.dir {
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            std::io::stdout().write_all(&out)?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            for (name, bytes) in man_pages()? {
                let path = dir.join(name);
                std::fs::write(&path, bytes)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `kvrun.1` plus `kvrun-<sub>.1` for every subcommand.
fn man_pages() -> Result<Vec<(String, Vec<u8>)>> {
    let cmd = Cli::command();
    let mut pages = Vec::new();
    let mut top = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut top)?;
    pages.push(("kvrun.1".to_string(), top));
    for sub in cmd.get_subcommands() {
        let name = format!("kvrun-{}", sub.get_name());
        let mut bytes = Vec::new();
        clap_mangen::Man::new(sub.clone().name(name.clone())).render(&mut bytes)?;
        pages.push((format!("{name}.1"), bytes));
    }
    Ok(pages)
}

/// Every generated file, relative to the repository root. The `generated_files` test
/// compares them with the committed copies (and rewrites them with `KVRUN_BLESS=1`).
pub fn generated_files() -> Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut files = Vec::new();
    for shell in [
        Shell::Bash,
        Shell::Zsh,
        Shell::Fish,
        Shell::Elvish,
        Shell::PowerShell,
    ] {
        let mut bytes = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "kvrun", &mut bytes);
        let name = match shell {
            Shell::Bash => "kvrun.bash",
            Shell::Zsh => "_kvrun",
            Shell::Fish => "kvrun.fish",
            Shell::Elvish => "kvrun.elv",
            _ => "_kvrun.ps1",
        };
        files.push((PathBuf::from("completions").join(name), bytes));
    }
    for (name, bytes) in man_pages()? {
        files.push((PathBuf::from("man").join(name), bytes));
    }
    Ok(files)
}
