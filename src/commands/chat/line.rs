//! `kvrun chat` in line mode: a REPL on stdin/stdout, a client of the chat thread like the
//! TUI. stdin is read on a thread of its own, so a signal or the end of input is seen while
//! a reply streams, not only at the prompt.
//!
//! Ways out, each saving the session first (the chat thread saves every open session on quit):
//! - `/quit`, or the end of input: exit 0. On a terminal (Ctrl-D) the end of input also stops
//!   a reply under way; on a pipe the replies to what was sent still finish (`-n` bounds
//!   them), because a script's input ends right after its last message.
//! - SIGTERM, SIGHUP: stop the reply, exit 143 / 129.
//! - SIGINT: on a terminal, Ctrl-C stops a reply and the conversation goes on; a second
//!   one, or one at the prompt, leaves (exit 130). Without a terminal on stdin nobody can
//!   type the next message, so a SIGINT leaves at once.

use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender};
use std::sync::Arc;

use anyhow::{bail, Result};

use crate::chat::protocol::{ChatEvent, MemorySnapshot, UserCommand};
use crate::chat::slash::{self, Slash};
use crate::commands::chat::leaving::{Leaving, Outcome};
use crate::env::Env;
use crate::format::human_bytes;
use crate::interrupt::{signal_exit_code, Interrupt};

/// What the REPL's help says beyond the shared command table.
const KEYS_HELP: &str = "\
Ctrl-C stops the current reply; a second Ctrl-C saves and leaves; Ctrl-D saves and leaves.
End a line with \\ to continue on the next one; start it with // to send a leading /.";

/// What the REPL remembers between commands.
#[derive(Default)]
struct ReplState {
    n_ctx: u32,
    used: usize,
    last_turn: Option<String>,
    memory: Option<Box<MemorySnapshot>>,
}

/// What the stdin and signal threads hand the REPL.
enum Input {
    Line(String),
    /// End of input (or a read error, which ends input just the same).
    End,
    Signal(i32),
}

/// Runs the REPL until a way out; the caller then has the chat thread quit and save.
pub(super) fn run(
    env: &Env,
    events: &Receiver<ChatEvent>,
    commands: &Sender<UserCommand>,
    interrupt: &Interrupt,
    leaving: &Leaving,
) -> Result<Outcome> {
    let mut state = ReplState::default();
    wait_ready(env, events, &mut state)?;
    let interactive = std::io::stdin().is_terminal();
    let generating = Arc::new(AtomicBool::new(false));
    let (input_tx, inputs) = std::sync::mpsc::channel();
    read_stdin(input_tx.clone(), interactive, interrupt.clone());
    watch_signals(input_tx, interactive, &generating, interrupt, leaving)?;

    let mut code = ExitCode::SUCCESS;
    loop {
        let input = match read_message(&inputs, interactive)? {
            Input::Line(line) => line,
            Input::End => break,
            Input::Signal(signal) => {
                code = signal_exit_code(signal);
                break;
            }
        };
        // A way out seen while the last reply streamed: nothing more is sent.
        if interrupt.quitting() {
            break;
        }
        let trimmed = input.trim();
        if trimmed.is_empty() {
            continue;
        }
        let sent = match slash::parse(&input) {
            Slash::Message(text) => UserCommand::Send(text),
            Slash::Command(UserCommand::Quit) => break,
            Slash::Command(command) => command,
            Slash::Help => {
                println!("commands:");
                for line in slash::help_lines() {
                    println!("{line}");
                }
                println!("{KEYS_HELP}");
                continue;
            }
            Slash::Stats { json } => {
                drain(events, &mut state);
                if json {
                    // One line, for scripts: the memory tiers as the chat thread last reported.
                    println!("{}", serde_json::to_string(&state.memory)?);
                } else {
                    print_stats(&state);
                }
                continue;
            }
            Slash::Invalid(why) => {
                println!("{why}");
                continue;
            }
        };
        let is_turn = matches!(sent, UserCommand::Send(_));
        let listing = matches!(sent, UserCommand::ListSessions);
        let reset = matches!(sent, UserCommand::Reset);
        generating.store(is_turn, Ordering::SeqCst);
        commands
            .send(sent)
            .map_err(|_| anyhow::anyhow!("the chat thread stopped"))?;
        let ended = wait(events, &mut state, is_turn, listing);
        generating.store(false, Ordering::SeqCst);
        if !ended? {
            break;
        }
        if reset {
            println!("(conversation cleared)");
        }
    }
    Ok(Outcome {
        code,
        errors: Vec::new(),
    })
}

/// Waits for the model (or the error that kept it from loading).
fn wait_ready(env: &Env, events: &Receiver<ChatEvent>, state: &mut ReplState) -> Result<()> {
    loop {
        match events.recv() {
            Ok(ChatEvent::Ready { model, n_ctx, .. }) => {
                state.n_ctx = n_ctx;
                if std::io::stdin().is_terminal() {
                    env.ui.note(format!(
                        "kvrun chat: {model} (context {n_ctx} tokens). /help for commands."
                    ));
                }
                return Ok(());
            }
            Ok(ChatEvent::Error(e)) => bail!("{e}"),
            Ok(ChatEvent::Exited) | Err(_) => bail!("the chat thread stopped"),
            Ok(_) => {}
        }
    }
}

/// Lines of stdin, on a thread of its own. Ctrl-D on a terminal stops a reply at once.
fn read_stdin(inputs: Sender<Input>, interactive: bool, interrupt: Interrupt) {
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if inputs.send(Input::Line(line)).is_err() {
                return;
            }
        }
        if interactive {
            interrupt.quit();
        }
        let _ = inputs.send(Input::End);
    });
}

/// SIGINT, SIGTERM and SIGHUP become inputs; all but a first Ctrl-C during a reply on a
/// terminal also raise the quit flag at once, so the reply stops within a token.
fn watch_signals(
    inputs: Sender<Input>,
    interactive: bool,
    generating: &Arc<AtomicBool>,
    interrupt: &Interrupt,
    leaving: &Leaving,
) -> Result<()> {
    let (generating, interrupt, leaving) = (generating.clone(), interrupt.clone(), leaving.clone());
    crate::interrupt::on_signals(move |signal| {
        let ctrl_c = signal == signal_hook::consts::SIGINT;
        // swap: the first Ctrl-C of a reply only stops it; the next one leaves.
        if ctrl_c && interactive && generating.swap(false, Ordering::SeqCst) {
            interrupt.stop_reply();
            return;
        }
        leaving.signalled(signal);
        let _ = inputs.send(Input::Signal(signal));
    })?;
    Ok(())
}

/// Reads one message; a line ending in `\\` continues on the next.
fn read_message(inputs: &Receiver<Input>, interactive: bool) -> Result<Input> {
    let mut message = String::new();
    loop {
        if interactive {
            let prompt = if message.is_empty() { "> " } else { ". " };
            print!("{prompt}");
            std::io::stdout().flush()?;
        }
        let line = match inputs.recv() {
            Ok(Input::Line(line)) => line,
            Ok(Input::End) | Err(_) if !message.is_empty() => return Ok(Input::Line(message)),
            Ok(Input::End) | Err(_) => return Ok(Input::End),
            Ok(signal) => {
                if interactive {
                    println!();
                }
                return Ok(signal);
            }
        };
        match line.strip_suffix('\\') {
            Some(head) => {
                message.push_str(head);
                message.push('\n');
            }
            None => {
                message.push_str(&line);
                return Ok(Input::Line(message));
            }
        }
    }
}

/// Handles events until the command is done. Returns false when the chat thread has exited.
fn wait(
    events: &Receiver<ChatEvent>,
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
            ChatEvent::Token(piece) => {
                out.write_all(piece.as_bytes())?;
                out.flush()?;
            }
            ChatEvent::TurnDone {
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
            ChatEvent::Context { used, n_ctx } => {
                state.used = used;
                state.n_ctx = n_ctx;
                return Ok(true);
            }
            ChatEvent::Memory(m) => state.memory = Some(m),
            ChatEvent::Sessions(rows) if listing => {
                for r in rows {
                    println!(
                        "{} {:<24} {:>8} tokens  {}",
                        if r.active { "*" } else { " " },
                        r.name(),
                        r.tokens(),
                        r.tier.as_str()
                    );
                }
            }
            ChatEvent::Saved { session, ms, .. } if !turn => {
                println!("(saved '{session}' in {ms:.0} ms)");
            }
            ChatEvent::Restored {
                session,
                tokens,
                ms,
                from,
            } => eprintln!(
                "(session '{session}': {tokens} tokens from {} in {ms:.0} ms)",
                from.as_str()
            ),
            ChatEvent::Info(note) => eprintln!("({note})"),
            ChatEvent::Error(e) => eprintln!("error: {e}"),
            ChatEvent::Exited => return Ok(false),
            _ => {}
        }
    }
}

/// Takes whatever events arrived meanwhile (memory snapshots, mostly).
fn drain(events: &Receiver<ChatEvent>, state: &mut ReplState) {
    while let Ok(event) = events.try_recv() {
        match event {
            ChatEvent::Memory(m) => state.memory = Some(m),
            ChatEvent::Context { used, n_ctx } => {
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
            "hot ({}): {} in {} session(s) [{}], {} of {} cells",
            if m.gpus.is_empty() {
                "no GPU: in RAM"
            } else {
                "VRAM"
            },
            human_bytes(m.hot.used_bytes),
            m.hot.sessions.len(),
            m.hot.sessions.join(", "),
            m.hot_cells_used,
            m.hot_cells
        );
        println!(
            "warm (RAM): {} of {}, {} pages (process {}, {} available of {})",
            human_bytes(m.warm.used_bytes),
            budget(m.warm.budget_bytes),
            m.warm.pages,
            human_bytes(m.process_rss_bytes),
            human_bytes(m.ram_available_bytes),
            human_bytes(m.ram_total_bytes)
        );
        println!(
            "cold (NVMe): {} of {}, {} objects (disk: {} free of {})",
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
