//! `kvrun chat`: an interactive conversation. On a terminal it is the TUI; with `--plain`,
//! or when stdin or stdout is not a terminal, a line-mode REPL. Both are front ends of the
//! same chat engine (a worker thread), so sessions, switching and the tiers behave alike.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};

use anyhow::{bail, Result};

use super::{session_setup, Env};
use crate::chat::{self, ChatOptions};
use crate::cli::ChatArgs;
use crate::exit::usage;
use crate::models::ModelChoice;
use crate::session::catalog::SessionCatalog;
use crate::settings::{resolve_tiers, ContextOverflow, EngineSettings, SamplingSettings};
use crate::tui::protocol::{EngineEvent, MemorySnapshot, UserCommand};
use crate::ui::human_bytes;

const HELP: &str = "\
commands:
  /help            show this help
  /reset           forget the conversation and start over
  /stats [json]    context, speed of the last reply, and the memory tiers
  /save            save the session now (it also saves after every turn)
  /session NAME    switch to (or create) a session, restoring it through the tiers
  /sessions        list the sessions
  /fork NAME       copy this conversation into a new session and continue there
  /quit            leave (Ctrl-D works too)
Ctrl-C stops the current reply. End a line with \\ to continue on the next one.";

pub fn run(env: &Env, args: ChatArgs) -> Result<ExitCode> {
    let options = options(env, &args)?;
    pull_default_if_missing(env, &options.model)?;
    let tui = !args.plain && std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let cancel = Arc::new(AtomicBool::new(false));
    let (events_tx, events) = std::sync::mpsc::channel();
    if tui {
        return run_tui(env, options, events_tx, events, cancel);
    }
    let (commands, engine) = chat::spawn(options, events_tx, cancel.clone());
    let result = line_mode(env, &events, &commands, &cancel);
    let _ = commands.send(UserCommand::Quit);
    // The engine saves every open session before it exits.
    for event in events.iter() {
        match event {
            EngineEvent::Exited => break,
            EngineEvent::Error(e) => eprintln!("error: {e}"),
            _ => {}
        }
    }
    let _ = engine.join();
    result
}

/// The full-screen TUI: logs go to a file while it owns the terminal, Ctrl-C (a key there,
/// not a signal) stops a reply through the engine's cancel flag.
fn run_tui(
    env: &Env,
    options: ChatOptions,
    events_tx: Sender<EngineEvent>,
    events: Receiver<EngineEvent>,
    cancel: Arc<AtomicBool>,
) -> Result<ExitCode> {
    let title = options
        .model
        .path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let session = options.session.clone();
    let log = crate::logging::to_file(&env.paths.logs).ok();
    let (engine_commands, engine) = chat::spawn(options, events_tx, cancel.clone());
    // Stop is a flag the generating engine watches; everything else is a command.
    let (tui_commands, from_tui) = std::sync::mpsc::channel::<UserCommand>();
    let forwarder = std::thread::spawn(move || {
        for command in from_tui {
            if command == UserCommand::Stop {
                cancel.store(true, Ordering::SeqCst);
            } else if engine_commands.send(command).is_err() {
                break;
            }
        }
    });
    let result = crate::tui::run_terminal(
        crate::tui::TuiOptions { title, session },
        events,
        tui_commands,
    );
    // The engine saves every open session on quit; wait for it.
    let _ = forwarder.join();
    let _ = engine.join();
    crate::logging::to_stderr();
    if let (Err(_), Some(log)) = (&result, log) {
        eprintln!("(the log is in {})", log.display());
    }
    result.map(|()| ExitCode::SUCCESS)
}

/// Settles the model, settings and tiers. A named session's recorded settings win over the
/// config file; flags given now win over both.
fn options(env: &Env, args: &ChatArgs) -> Result<ChatOptions> {
    let overflow = args
        .context_overflow
        .or(env.config.context_overflow)
        .unwrap_or(ContextOverflow::Truncate);
    let tiers = resolve_tiers(&args.tiers, &env.config).map_err(usage)?;
    let (engine, sampling, model) = match &args.session {
        Some(name) => {
            let catalog = SessionCatalog::open(&env.paths)?;
            let prepared = session_setup::prepare(
                env,
                &catalog,
                name,
                args.model.model.as_deref(),
                &args.engine,
                Some(&args.sampling),
            )?;
            (prepared.engine, prepared.sampling, prepared.choice)
        }
        None => (
            EngineSettings::resolve(&args.engine, &env.config),
            SamplingSettings::resolve(&args.sampling, &env.config),
            crate::models::choose(args.model.model.as_deref(), &env.config, &env.paths),
        ),
    };
    Ok(ChatOptions {
        paths: env.paths.clone(),
        model,
        engine,
        sampling,
        session: args.session.clone(),
        system: args.system.clone(),
        overflow,
        max_tokens: args.max_tokens,
        tiers,
        chat_template: super::chat_template_override(&args.model, env).map(str::to_string),
    })
}

/// With nothing pulled yet, `kvrun chat` fetches the default model first.
fn pull_default_if_missing(env: &Env, choice: &ModelChoice) -> Result<()> {
    if choice.is_default() && !choice.path.exists() {
        env.ui.note(
            "The default model (Gemma 3 270M, Q4_K_M) is not downloaded yet; pulling it now.",
        );
        super::pull::pull_default(env)?;
    }
    Ok(())
}

/// What the REPL remembers between commands.
#[derive(Default)]
struct ReplState {
    n_ctx: u32,
    used: usize,
    last_turn: Option<String>,
    memory: Option<Box<MemorySnapshot>>,
}

fn line_mode(
    env: &Env,
    events: &Receiver<EngineEvent>,
    commands: &Sender<UserCommand>,
    cancel: &Arc<AtomicBool>,
) -> Result<ExitCode> {
    let mut state = ReplState::default();
    // Wait for the model (or the error that kept it from loading).
    loop {
        match events.recv() {
            Ok(EngineEvent::Ready { model, n_ctx, .. }) => {
                state.n_ctx = n_ctx;
                if std::io::stdin().is_terminal() {
                    env.ui.note(format!(
                        "kvrun chat: {model} (context {n_ctx} tokens). /help for commands."
                    ));
                }
                break;
            }
            Ok(EngineEvent::Error(e)) => bail!("{e}"),
            Ok(EngineEvent::Exited) | Err(_) => bail!("the chat engine stopped"),
            Ok(_) => {}
        }
    }
    // Ctrl-C while a reply streams stops the reply; at the prompt it quits (the engine saves).
    let generating = Arc::new(AtomicBool::new(false));
    {
        let (generating, cancel) = (generating.clone(), cancel.clone());
        let quit = Mutex::new(commands.clone());
        let _ = ctrlc::set_handler(move || {
            if generating.load(Ordering::SeqCst) {
                cancel.store(true, Ordering::SeqCst);
            } else if let Ok(q) = quit.lock() {
                let _ = q.send(UserCommand::Quit);
                eprintln!();
                std::process::exit(130);
            }
        });
    }
    let interactive = std::io::stdin().is_terminal();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    while let Some(input) = read_message(&mut lines, interactive)? {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            continue;
        }
        let (command, rest) = match trimmed.split_once(char::is_whitespace) {
            Some((c, r)) => (c, r.trim()),
            None => (trimmed, ""),
        };
        let sent = match command {
            "/quit" | "/exit" => break,
            "/help" => {
                println!("{HELP}");
                continue;
            }
            "/stats" => {
                drain(events, &mut state);
                if rest == "json" {
                    // One line, for scripts: the memory tiers as the engine last reported.
                    println!("{}", serde_json::to_string(&state.memory)?);
                } else {
                    print_stats(&state);
                }
                continue;
            }
            "/reset" => UserCommand::Reset,
            "/save" => UserCommand::Save,
            "/sessions" => UserCommand::ListSessions,
            "/session" | "/fork" if rest.is_empty() => {
                println!("{command} needs a session name");
                continue;
            }
            "/session" => UserCommand::Switch(rest.to_string()),
            "/fork" => UserCommand::Fork(rest.to_string()),
            _ if trimmed.starts_with('/') => {
                println!("unknown command {trimmed}; /help lists the commands");
                continue;
            }
            _ => UserCommand::Send(input.clone()),
        };
        let is_turn = matches!(sent, UserCommand::Send(_));
        let listing = matches!(sent, UserCommand::ListSessions);
        generating.store(is_turn, Ordering::SeqCst);
        let reset = matches!(sent, UserCommand::Reset);
        commands
            .send(sent)
            .map_err(|_| anyhow::anyhow!("the chat engine stopped"))?;
        let ended = wait(events, &mut state, is_turn, listing);
        generating.store(false, Ordering::SeqCst);
        if !ended? {
            break;
        }
        if reset {
            println!("(conversation cleared)");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Handles events until the command is done. Returns false when the engine has exited.
fn wait(
    events: &Receiver<EngineEvent>,
    state: &mut ReplState,
    turn: bool,
    listing: bool,
) -> Result<bool> {
    let mut out = std::io::stdout();
    loop {
        let Ok(event) = events.recv() else {
            return Ok(false);
        };
        match event {
            EngineEvent::Token(piece) => {
                out.write_all(piece.as_bytes())?;
                out.flush()?;
            }
            EngineEvent::TurnDone {
                prefilled,
                prefill_tokens_per_s,
                generated,
                decode_tokens_per_s,
                stopped,
            } => {
                println!();
                if stopped {
                    eprintln!("(stopped)");
                }
                state.last_turn = Some(format!(
                    "last reply: prefill {prefilled} tokens at {prefill_tokens_per_s:.1} tok/s, \
                     decode {generated} tokens at {decode_tokens_per_s:.1} tok/s"
                ));
            }
            // Every command ends with one Context event.
            EngineEvent::Context { used, n_ctx } => {
                state.used = used;
                state.n_ctx = n_ctx;
                return Ok(true);
            }
            EngineEvent::Memory(m) => state.memory = Some(m),
            EngineEvent::Sessions(rows) if listing => {
                for r in rows {
                    println!(
                        "{} {:<24} {:>8} tokens  {}",
                        if r.active { "*" } else { " " },
                        r.name,
                        r.tokens,
                        r.tier.as_str()
                    );
                }
            }
            EngineEvent::Saved { session, ms, .. } if !turn => {
                println!("(saved '{session}' in {ms:.0} ms)");
            }
            EngineEvent::Restored {
                session,
                tokens,
                ms,
                from,
            } => eprintln!(
                "(session '{session}': {tokens} tokens from {} in {ms:.0} ms)",
                from.as_str()
            ),
            EngineEvent::Info(note) => eprintln!("({note})"),
            EngineEvent::Error(e) => eprintln!("error: {e}"),
            EngineEvent::Exited => return Ok(false),
            _ => {}
        }
    }
}

/// Takes whatever events arrived meanwhile (memory snapshots, mostly).
fn drain(events: &Receiver<EngineEvent>, state: &mut ReplState) {
    while let Ok(event) = events.try_recv() {
        match event {
            EngineEvent::Memory(m) => state.memory = Some(m),
            EngineEvent::Context { used, n_ctx } => {
                state.used = used;
                state.n_ctx = n_ctx;
            }
            _ => {}
        }
    }
}

fn print_stats(state: &ReplState) {
    let n_ctx = state.n_ctx.max(1) as usize;
    println!(
        "context: {} / {n_ctx} tokens ({:.1}%)",
        state.used,
        100.0 * state.used as f64 / n_ctx as f64
    );
    if let Some(t) = &state.last_turn {
        println!("{t}");
    }
    if let Some(m) = &state.memory {
        let budget = |b: Option<u64>| b.map_or("no budget".to_string(), human_bytes);
        println!(
            "hot:  {} in {} session(s) [{}]{}",
            human_bytes(m.hot.used_bytes),
            m.hot.sessions.len(),
            m.hot.sessions.join(", "),
            if m.gpus.is_empty() {
                " (no GPU: the hot tier is in RAM)"
            } else {
                ""
            }
        );
        println!(
            "warm: {} of {}, {} pages (RAM: process {}, {} available of {})",
            human_bytes(m.warm.used_bytes),
            budget(m.warm.budget_bytes),
            m.warm.pages,
            human_bytes(m.process_rss_bytes),
            human_bytes(m.ram_available_bytes),
            human_bytes(m.ram_total_bytes)
        );
        println!(
            "cold: {} of {}, {} objects (disk: {} free of {})",
            human_bytes(m.cold.used_bytes),
            budget(m.cold.budget_bytes),
            m.cold.pages,
            human_bytes(m.disk_free_bytes),
            human_bytes(m.disk_total_bytes)
        );
        println!(
            "served: {} tokens hot, {} warm, {} cold, {} prefilled",
            m.hot.hit_tokens, m.warm.hit_tokens, m.cold.hit_tokens, m.prefill_tokens
        );
        if let Some(last) = &m.last_move {
            println!("last move: {last}");
        }
    }
}

/// Reads one message; a line ending in `\\` continues on the next. None at end of input.
fn read_message(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    interactive: bool,
) -> Result<Option<String>> {
    let mut message = String::new();
    loop {
        if interactive {
            let prompt = if message.is_empty() { "> " } else { ". " };
            print!("{prompt}");
            std::io::stdout().flush()?;
        }
        let Some(line) = lines.next() else {
            return Ok((!message.is_empty()).then_some(message));
        };
        let line = line?;
        match line.strip_suffix('\\') {
            Some(head) => {
                message.push_str(head);
                message.push('\n');
            }
            None => {
                message.push_str(&line);
                return Ok(Some(message));
            }
        }
    }
}
