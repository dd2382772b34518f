//! `kvrun bench serve`: what an agent sees over HTTP. An agent-shaped prompt (system blocks
//! and tool schemas, generated to `--prompt-tokens`) is sent to a real `kvrun serve` child:
//! the first call (prefill from scratch), the next turn (the prefix from the store), and the
//! first call after a restart (the prefix from disk); then the same conversation through
//! Ollama's `/api/chat` in a fresh home. The same-length prompt through the
//! engine in this process gives the server's own overhead; streams side by side give the
//! aggregate decode rate. `--llama-server` runs the conversation against llama.cpp's server
//! instead ([`super::serve_compare`]).

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Result};

use super::agent_prompt::{agent_messages, agent_system_text, agent_tools};
use super::harness::{Call, ChildServer};
use super::streams::submit;
use crate::cli::BenchServeArgs;
use crate::env::Env;
use crate::models::ModelChoice;
use crate::service::harness::ServiceHarness;
use crate::service::protocol::Reply;
use crate::settings::LlamaSettings;

pub fn run(env: &Env, args: BenchServeArgs) -> Result<ExitCode> {
    let choice = crate::models::choose(
        args.model.model.as_deref(),
        &env.config,
        &env.paths,
        crate::models::Purpose::Serve,
    );
    crate::models::validate(&choice)?;
    let llama = LlamaSettings::resolve(&args.llama, &env.config);
    let work = tempfile::Builder::new()
        .prefix("kvrun-bench-serve-")
        .tempdir()?;
    let target = args.prompt_tokens.max(64) as usize;
    let ctx = (target + 2048).next_multiple_of(256) as u32;
    // Loaded here only to size the prompt with the model's own tokenizer.
    let (model, _) = crate::env::load_model(&choice, 0)?;
    if ctx > model.facts().n_ctx_train {
        bail!(
            "--prompt-tokens {target} does not fit the model's context ({}) with room for replies",
            model.facts().n_ctx_train
        );
    }
    let tools = agent_tools();
    let tool_tokens = model.tokenize(&tools.to_string(), false).len();
    let system = agent_system_text(&model, target.saturating_sub(tool_tokens));
    drop(model);
    if let Some(binary) = &args.llama_server {
        let setup = super::serve_compare::Setup {
            binary,
            choice: &choice,
            llama: &llama,
            ctx,
            system: &system,
            tools: &tools,
            decode_tokens: args.decode_tokens,
            repeat: args.repeat,
        };
        super::serve_compare::run(env, work.path(), &setup)?;
        return Ok(ExitCode::SUCCESS);
    }
    let turn = |n: usize| agent_messages(&system, n);

    env.ui.note(format!(
        "HTTP: an agent prompt of about {target} tokens through kvrun serve (-c {ctx}, --parallel 1) ..."
    ));
    let home = work.path().join("http");
    let server = ChildServer::start(&home, &choice, &llama, ctx, 1)?;
    let first = server.stream(&turn(0), &tools, args.decode_tokens)?;
    let second = server.stream(&turn(1), &tools, args.decode_tokens)?;
    server.stop()?;
    let server = ChildServer::start(&home, &choice, &llama, ctx, 1)?;
    let restarted = server.stream(&turn(2), &tools, args.decode_tokens)?;
    server.stop()?;

    env.ui
        .note("Ollama API: the same conversation through /api/chat, in a fresh home ...");
    let home = work.path().join("ollama");
    let server = ChildServer::start(&home, &choice, &llama, ctx, 1)?;
    let ollama_first = server.stream_ollama(&turn(0), &tools, args.decode_tokens)?;
    let ollama_second = server.stream_ollama(&turn(1), &tools, args.decode_tokens)?;
    server.stop()?;
    let server = ChildServer::start(&home, &choice, &llama, ctx, 1)?;
    let ollama_restarted = server.stream_ollama(&turn(2), &tools, args.decode_tokens)?;
    server.stop()?;

    env.ui
        .note("in-process: the same length through the engine directly ...");
    let in_process = in_process_call(
        &work.path().join("engine"),
        &choice,
        &llama,
        ctx,
        first.prompt_tokens,
        args.decode_tokens,
    )?;

    let mut decode_rows = Vec::new();
    let most = args.streams.iter().copied().max().unwrap_or(1).max(1);
    env.ui.note(format!(
        "decode: 1..{most} concurrent streams (--parallel {most}) ..."
    ));
    let server = ChildServer::start(&work.path().join("decode"), &choice, &llama, 8192, most)?;
    for &n in &args.streams {
        decode_rows.push((n, server.concurrent(n.max(1) as usize, args.decode_tokens)?));
    }
    server.stop()?;

    println!(
        "time to first token over HTTP, an agent prompt of {} tokens ({} threads)",
        first.prompt_tokens, llama.threads
    );
    println!(
        "{:<40} {:>8} {:>9} {:>12}",
        "call", "cached", "TTFT s", "ms/token"
    );
    let rows = [
        ("first call (prefill from scratch)", &first),
        ("second call, a new user turn", &second),
        ("first call after a server restart", &restarted),
        ("Ollama API: first call", &ollama_first),
        ("Ollama API: second call", &ollama_second),
        ("Ollama API: after a server restart", &ollama_restarted),
        ("in-process engine, same length, fresh", &in_process),
    ];
    for (label, c) in rows {
        println!(
            "{label:<40} {:>8} {:>9.2} {:>12.2}",
            c.cached_tokens,
            c.ttft.as_secs_f64(),
            c.per_token_ms()
        );
    }
    println!(
        "server overhead vs in-process: TTFT {:+.1} ms, per token {:+.2} ms",
        (first.ttft.as_secs_f64() - in_process.ttft.as_secs_f64()) * 1e3,
        first.per_token_ms() - in_process.per_token_ms()
    );
    println!();
    println!("{:<10} {:>12} {:>14}", "streams", "tokens", "aggregate t/s");
    for (n, (tokens, wall)) in decode_rows {
        println!(
            "{n:<10} {tokens:>12} {:>14.1}",
            tokens as f64 / wall.as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The engine without HTTP: a prompt of `tokens` tokens in a fresh home.
fn in_process_call(
    home: &Path,
    choice: &ModelChoice,
    llama: &LlamaSettings,
    ctx: u32,
    tokens: u64,
    max_tokens: u32,
) -> Result<Call> {
    let mut llama = llama.clone();
    llama.ctx_size = ctx;
    let service = ServiceHarness::new(home, &choice.path)
        .with_model(choice.clone())
        .with_llama(llama.clone())
        .with_max_queue(1)
        .start()?;
    let model = service.model();
    let mut prompt = model.tokenize_prompt(&agent_system_text(&model, tokens as usize));
    prompt.truncate(tokens.max(1) as usize);
    let sent = Instant::now();
    let mut stream = submit(&service, &prompt, max_tokens as usize)?;
    let (mut first, mut last) = (None, sent);
    let (prompt_tokens, cached_tokens, generated) = loop {
        match stream.next()? {
            Reply::Token(_) => {
                first.get_or_insert_with(Instant::now);
                last = Instant::now();
            }
            Reply::Done(usage) => {
                break (
                    usage.prompt_tokens as u64,
                    usage.cached.total() as u64,
                    usage.generated as u64,
                )
            }
            _ => {}
        }
    };
    service.stop_when_saved()?;
    let first = first.unwrap_or(last);
    Ok(Call {
        prompt_tokens,
        cached_tokens,
        ttft: first - sent,
        generated,
        decode: last - first,
    })
}
