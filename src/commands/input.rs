//! Reading what the user gives (a prompt, a file, stdin), bounded in size, and the checks
//! that it may fit the context before any work starts.

use std::io::{IsTerminal, Read};

use anyhow::{bail, Context as _, Result};

use crate::cli::RunArgs;
use crate::exit::usage;
use crate::llama::{Context, Model};

/// The largest prompt or document kvrun reads (from a file, stdin or -p). Far above what a
/// context holds (a 128k-token context is about 0.5 MB of text); it bounds memory and time
/// for input that could never fit.
pub(super) const MAX_INPUT_BYTES: u64 = 32 << 20;

/// The prompt from -p, --prompt-file, or piped stdin.
pub(super) fn read_prompt(args: &RunArgs) -> Result<String> {
    let text = if let Some(p) = &args.prompt {
        check_input_size(p.len() as u64, "the prompt")?;
        p.clone()
    } else if let Some(file) = &args.prompt_file {
        read_text_file(file)?
    } else {
        read_stdin("no prompt: pass -p TEXT, --prompt-file FILE, or pipe the prompt on stdin")?
    };
    if text.trim().is_empty() {
        return Err(usage("the prompt is empty"));
    }
    Ok(text)
}

/// All of stdin; a usage error when stdin is a terminal (nothing was piped).
pub(super) fn read_stdin(when_terminal: &str) -> Result<String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(usage(when_terminal));
    }
    read_bounded(stdin.lock(), "stdin")
}

/// A text file (a FIFO too, for `<(command)`), read up to [`MAX_INPUT_BYTES`].
pub(super) fn read_text_file(path: &std::path::Path) -> Result<String> {
    let what = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("reading {what}"))?;
    read_bounded(file, &what)
}

/// Reads all of `reader` as UTF-8, refusing more than [`MAX_INPUT_BYTES`] without reading
/// past that.
fn read_bounded(reader: impl Read, what: &str) -> Result<String> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_INPUT_BYTES + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {what}"))?;
    check_input_size(bytes.len() as u64, what)?;
    String::from_utf8(bytes).with_context(|| format!("reading {what}: not UTF-8 text"))
}

fn check_input_size(len: u64, what: &str) -> Result<()> {
    if len > MAX_INPUT_BYTES {
        return Err(usage(format!(
            "{what} is larger than kvrun's input limit of {} MiB",
            MAX_INPUT_BYTES >> 20
        )));
    }
    Ok(())
}

/// Refuses text that cannot fit in the context after `used` tokens, judged from its length
/// alone, before the (slow, for megabytes) tokenization.
pub(super) fn check_text_may_fit(
    text: &str,
    used: usize,
    n_ctx: usize,
    model: &Model,
) -> Result<()> {
    let Some(min_tokens) = model.min_tokens(text) else {
        return Ok(());
    };
    if used + min_tokens > n_ctx {
        let train = model.facts().n_ctx_train;
        bail!(
            "the input does not fit the context: its {} bytes are at least {min_tokens} \
             tokens, and the context holds {n_ctx} ({used} in use); raise --ctx-size (this \
             model supports up to {train})",
            text.len()
        );
    }
    Ok(())
}

/// A prompt that cannot fit the context is refused up front, naming both sizes.
pub(super) fn check_fits(tokens: usize, ctx: &Context<'_>, model: &Model) -> Result<()> {
    let n_ctx = ctx.info().n_ctx as usize;
    if tokens > n_ctx {
        let train = model.facts().n_ctx_train;
        bail!(
            "the prompt is {tokens} tokens but the context holds {n_ctx}; raise --ctx-size (this \
             model supports up to {train})"
        );
    }
    Ok(())
}
