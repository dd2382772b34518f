//! Snapshot tests of the main screens on a `TestBackend`, driven by synthetic keys and
//! engine events, and unit tests of `update`. Nothing reads the clock or the machine: the
//! time for "3m ago" is injected with `Action::Tick`.
//!
//! To accept changed snapshots: `INSTA_UPDATE=always cargo test --release --lib tui::`,
//! then review `git diff src/tui/snapshots`.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::app::{Focus, Role};
use super::*;
use crate::chat::protocol::*;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;
/// The injected "now".
const NOW: u64 = 1_800_000_000;

fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn chord(code: KeyCode, modifiers: KeyModifiers) -> Event {
    Event::Key(KeyEvent::new(code, modifiers))
}

fn ctrl_c() -> Event {
    chord(KeyCode::Char('c'), KeyModifiers::CONTROL)
}

fn new_app() -> App {
    let mut app = super::new_app(TuiOptions {
        title: "kvrun".into(),
        session: Some("refactor-agent".into()),
        read_only: false,
    });
    app.update(Action::Tick { now_unix: NOW });
    app
}

/// Presses keys; returns the commands they produced.
fn press(app: &mut App, events: impl IntoIterator<Item = Event>) -> Vec<UserCommand> {
    events
        .into_iter()
        .filter_map(
            |e| match super::keys::handle_event(app, e, Instant::now()) {
                Some(Effect::Command(c)) => Some(c),
                _ => None,
            },
        )
        .collect()
}

fn type_text(app: &mut App, text: &str) -> Vec<UserCommand> {
    press(app, text.chars().map(|c| key(KeyCode::Char(c))))
}

fn engine(app: &mut App, events: impl IntoIterator<Item = EngineEvent>) {
    for e in events {
        app.update(Action::Engine(e));
    }
}

fn cpu_memory() -> MemorySnapshot {
    MemorySnapshot {
        gpus: vec![],
        hot: TierUsage {
            used_bytes: 96 * MIB,
            budget_bytes: Some(512 * MIB),
            pages: 24,
            sessions: vec!["refactor-agent".into()],
            hit_tokens: 18_432,
        },
        hot_cells: 32_768,
        hot_cells_used: 6_144,
        hot_cells_ceiling: 32_768,
        warm: TierUsage {
            used_bytes: 288 * MIB,
            budget_bytes: Some(2 * GIB),
            pages: 72,
            sessions: vec!["docs".into()],
            hit_tokens: 2_048,
        },
        cold: TierUsage {
            used_bytes: 1536 * MIB,
            budget_bytes: Some(20 * GIB),
            pages: 384,
            sessions: vec!["old-notes".into()],
            hit_tokens: 512,
        },
        prefill_tokens: 37,
        process_rss_bytes: 900 * MIB,
        ram_total_bytes: 24 * GIB,
        ram_available_bytes: 17 * GIB,
        disk_total_bytes: 500 * GIB,
        disk_free_bytes: 212 * GIB,
        last_move: Some("docs: 2,048 tokens demoted hot→warm in 38 ms".into()),
    }
}

fn sessions() -> Vec<SessionRow> {
    let row = |name: &str, tokens, tier, ago_s: u64, active| SessionRow {
        name: name.into(),
        tokens,
        tier,
        last_used_unix: NOW - ago_s,
        active,
    };
    vec![
        row("refactor-agent", 18_432, Tier::Hot, 5, true),
        row("docs", 2_048, Tier::Warm, 180, false),
        row("old-notes", 9_120, Tier::Cold, 3 * 86_400, false),
    ]
}

/// A TUI that has started: the model is loaded on a machine without a GPU.
fn ready_app() -> App {
    let mut app = new_app();
    engine(
        &mut app,
        [
            EngineEvent::Ready {
                model: "gemma-3-270m-it-q4_k_m".into(),
                n_ctx: 4096,
                gpu: false,
            },
            EngineEvent::Context {
                used: 0,
                n_ctx: 4096,
            },
            EngineEvent::Memory(Box::new(cpu_memory())),
            EngineEvent::Sessions(sessions()),
        ],
    );
    app
}

/// A question and a streamed answer with a fenced code block, token by token.
fn streamed_app() -> App {
    let mut app = ready_app();
    let sent = type_text(&mut app, "How do I read a file?");
    assert!(sent.is_empty());
    assert_eq!(
        press(&mut app, [key(KeyCode::Enter)]),
        [UserCommand::Send("How do I read a file?".into())]
    );
    let answer = "Use `std::fs::read_to_string`, which reads the whole file into a String \
                  and returns an error if it cannot:\n\n```rust\nlet text = std::fs::read_to_string(\"notes.txt\")?;\nprintln!(\"{} bytes\", text.len());\n```\n\nFor large files, read it in chunks.";
    // Pieces the size a tokenizer would give, split mid-fence on purpose.
    let mut pieces = Vec::new();
    let mut rest = answer;
    while !rest.is_empty() {
        let mut cut = rest.len().min(7);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        pieces.push(EngineEvent::Token(rest[..cut].to_string()));
        rest = &rest[cut..];
    }
    engine(&mut app, pieces);
    engine(
        &mut app,
        [
            EngineEvent::TurnDone {
                prefilled: 31,
                prefill_tokens_per_s: 412.0,
                generated: 64,
                decode_tokens_per_s: 38.6,
                stopped: false,
            },
            EngineEvent::Context {
                used: 95,
                n_ctx: 4096,
            },
        ],
    );
    app
}

fn render(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
    app.update(Action::Resize(width, height));
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| draw(f, app)).unwrap();
    terminal
}

#[test]
fn snapshot_empty_chat() {
    let mut app = ready_app();
    assert_snapshot!("empty_chat_100x30", render(&mut app, 100, 30).backend());
    assert_snapshot!("empty_chat_40x10", render(&mut app, 40, 10).backend());
}

#[test]
fn snapshot_streamed_answer() {
    let mut app = streamed_app();
    assert_snapshot!(
        "streamed_answer_100x30",
        render(&mut app, 100, 30).backend()
    );
    assert_snapshot!("streamed_answer_40x10", render(&mut app, 40, 10).backend());
}

#[test]
fn snapshot_help_overlay() {
    let mut app = ready_app();
    press(&mut app, [key(KeyCode::Char('?'))]);
    assert!(app.help_open());
    assert_snapshot!("help_100x30", render(&mut app, 100, 30).backend());
    // On a tiny screen the help stacks and scrolls.
    render(&mut app, 40, 10);
    press(&mut app, [key(KeyCode::PageDown)]);
    assert_snapshot!("help_40x10_scrolled", render(&mut app, 40, 10).backend());
    press(&mut app, [key(KeyCode::Esc)]);
    assert!(!app.help_open());
}

#[test]
fn snapshot_sessions_list() {
    let mut app = ready_app();
    let sent = press(&mut app, [key(KeyCode::Tab), key(KeyCode::Tab)]);
    assert_eq!(sent, [UserCommand::ListSessions]);
    assert_eq!(app.focus(), Focus::Sessions);
    press(&mut app, [key(KeyCode::Down)]);
    assert_snapshot!("sessions_100x30", render(&mut app, 100, 30).backend());
    assert_snapshot!("sessions_40x10", render(&mut app, 40, 10).backend());
    assert_eq!(
        press(&mut app, [key(KeyCode::Enter)]),
        [UserCommand::Switch("docs".into())]
    );
}

#[test]
fn snapshot_gpu_restore_in_progress() {
    let mut app = ready_app();
    let mut memory = cpu_memory();
    memory.gpus = vec![crate::llama::GpuDevice {
        name: "NVIDIA H200".into(),
        total_bytes: 140 * GIB,
        free_bytes: 131 * GIB,
    }];
    memory.hot.budget_bytes = Some(8 * GIB);
    engine(
        &mut app,
        [
            EngineEvent::Error("session 'old-notes' is locked by another kvrun (pid 4242)".into()),
            EngineEvent::Memory(Box::new(memory)),
            EngineEvent::Progress {
                kind: ProgressKind::Restore,
                done: 120 * MIB,
                total: 480 * MIB,
                rate: 900.0 * MIB as f64,
            },
        ],
    );
    assert_snapshot!("gpu_restore_100x30", render(&mut app, 100, 30).backend());
}

/// `kvrun top`: a monitor with no input box; Enter on a session shows its conversation,
/// and typing goes nowhere.
#[test]
fn snapshot_monitor() {
    let mut app = super::new_app(TuiOptions {
        title: "kvrun top http://127.0.0.1:8080".into(),
        session: None,
        read_only: true,
    });
    app.update(Action::Tick { now_unix: NOW });
    engine(
        &mut app,
        [
            EngineEvent::Ready {
                model: "gemma-3-270m-q4_k_m".into(),
                n_ctx: 32768,
                gpu: false,
            },
            EngineEvent::Memory(Box::new(cpu_memory())),
            EngineEvent::Sessions(sessions()),
        ],
    );
    assert_eq!(app.focus(), Focus::Sessions);
    assert!(type_text(&mut app, "hello").is_empty());
    let sent = press(&mut app, [key(KeyCode::Down), key(KeyCode::Enter)]);
    assert_eq!(sent, [UserCommand::Switch("docs".into())]);
    engine(
        &mut app,
        [EngineEvent::Switched {
            session: "docs".into(),
            history: vec![
                ShownMessage {
                    role: "user".into(),
                    content: "Where are the docs?".into(),
                },
                ShownMessage {
                    role: "assistant".into(),
                    content: "In docs/, one file per chapter.".into(),
                },
            ],
        }],
    );
    // The selection stays where the user put it.
    assert_eq!(app.selected, 1);
    assert_snapshot!("monitor_100x30", render(&mut app, 100, 30).backend());
    assert_eq!(
        press(&mut app, [key(KeyCode::Char('q'))]),
        [UserCommand::Quit]
    );
}

// Unit tests of update().

#[test]
fn enter_sends_and_alt_enter_makes_a_newline() {
    let mut app = ready_app();
    type_text(&mut app, "line one");
    assert!(press(&mut app, [chord(KeyCode::Enter, KeyModifiers::ALT)]).is_empty());
    assert!(press(&mut app, [chord(KeyCode::Enter, KeyModifiers::SHIFT)]).is_empty());
    type_text(&mut app, "line two");
    assert_eq!(
        press(&mut app, [key(KeyCode::Enter)]),
        [UserCommand::Send("line one\n\nline two".into())]
    );
    assert!(app.input_is_empty());
    assert_eq!(app.messages[0].role, Role::User);
    // Nothing to send: Enter on an empty input does nothing.
    engine(&mut app, [turn_done(false)]);
    assert!(press(&mut app, [key(KeyCode::Enter)]).is_empty());
}

fn turn_done(stopped: bool) -> EngineEvent {
    EngineEvent::TurnDone {
        prefilled: 1,
        prefill_tokens_per_s: 1.0,
        generated: 1,
        decode_tokens_per_s: 1.0,
        stopped,
    }
}

#[test]
fn history_walks_with_up_and_down() {
    let mut app = ready_app();
    for m in ["first", "second"] {
        type_text(&mut app, m);
        press(&mut app, [key(KeyCode::Enter)]);
        engine(&mut app, [turn_done(false)]);
    }
    press(&mut app, [key(KeyCode::Up)]);
    assert_eq!(app.input.text(), "second");
    press(&mut app, [key(KeyCode::Up)]);
    assert_eq!(app.input.text(), "first");
    press(&mut app, [key(KeyCode::Down), key(KeyCode::Down)]);
    assert_eq!(app.input.text(), "");
}

#[test]
fn slash_commands_become_commands() {
    let mut app = ready_app();
    type_text(&mut app, "/fork side-quest");
    assert_eq!(
        press(&mut app, [key(KeyCode::Enter)]),
        [UserCommand::Fork("side-quest".into())]
    );
    type_text(&mut app, "/session docs");
    assert_eq!(
        press(&mut app, [key(KeyCode::Enter)]),
        [UserCommand::Switch("docs".into())]
    );
    type_text(&mut app, "/save");
    assert_eq!(press(&mut app, [key(KeyCode::Enter)]), [UserCommand::Save]);
    type_text(&mut app, "/fork");
    assert!(press(&mut app, [key(KeyCode::Enter)]).is_empty());
    assert!(app.note.as_ref().is_some_and(|n| n.error));
    type_text(&mut app, "/help");
    press(&mut app, [key(KeyCode::Enter)]);
    assert!(app.help_open());
}

#[test]
fn ctrl_c_stops_then_quits() {
    let mut app = ready_app();
    type_text(&mut app, "write a long story");
    press(&mut app, [key(KeyCode::Enter)]);
    engine(&mut app, [EngineEvent::Token("Once".into())]);
    let t0 = Instant::now();
    assert_eq!(
        app.update(Action::Interrupt(t0)),
        Some(Effect::Command(UserCommand::Stop))
    );
    // A second press soon after quits even though the reply has not stopped yet.
    assert_eq!(
        app.update(Action::Interrupt(t0 + Duration::from_millis(300))),
        Some(Effect::Command(UserCommand::Quit))
    );
    assert!(app.quitting() && !app.should_exit());
    // While the engine saves, typing is ignored; a third Ctrl-C leaves at once.
    assert!(press(&mut app, [key(KeyCode::Char('x')), key(KeyCode::Enter)]).is_empty());
    let mut impatient = app.clone();
    impatient.update(Action::Interrupt(t0 + Duration::from_millis(600)));
    assert!(impatient.should_exit());
    engine(&mut app, [EngineEvent::Exited]);
    assert!(app.should_exit());

    // At rest, one press quits.
    let mut app = ready_app();
    assert_eq!(press(&mut app, [ctrl_c()]), [UserCommand::Quit]);
}

#[test]
fn ctrl_c_after_the_reply_finished_quits() {
    let mut app = ready_app();
    type_text(&mut app, "hi");
    press(&mut app, [key(KeyCode::Enter)]);
    let t0 = Instant::now();
    app.update(Action::Interrupt(t0));
    engine(&mut app, [turn_done(true)]);
    assert!(app.messages.last().is_some_and(|m| m.role == Role::User));
    let later = t0 + Duration::from_secs(5);
    assert_eq!(
        app.update(Action::Interrupt(later)),
        Some(Effect::Command(UserCommand::Quit))
    );
}

#[test]
fn paste_is_accepted_whole() {
    let mut app = ready_app();
    let big: String = (0..2_000).map(|i| format!("fn f{i}() {{}}\r\n")).collect();
    super::keys::handle_event(&mut app, Event::Paste(big.clone()), Instant::now());
    assert_eq!(app.input.text(), big.replace("\r\n", "\n"));
    // Enter right after a paste sends it all, newlines included.
    let sent = press(&mut app, [key(KeyCode::Enter)]);
    assert!(matches!(&sent[..], [UserCommand::Send(t)] if t.lines().count() == 2_000));
}

#[test]
fn tokens_stream_into_one_reply_and_errors_leave_it_usable() {
    let mut app = streamed_app();
    assert_eq!(app.messages.len(), 2);
    assert!(app.messages[1].content.contains("```rust\nlet text"));
    // An error while a reply streams goes to the footer and leaves the reply whole.
    type_text(&mut app, "next");
    press(&mut app, [key(KeyCode::Enter)]);
    engine(
        &mut app,
        [
            EngineEvent::Token("part one".into()),
            EngineEvent::Error("cold tier over budget".into()),
            EngineEvent::Token(", part two".into()),
        ],
    );
    assert_eq!(app.messages.last().unwrap().content, "part one, part two");
    assert!(app.note.as_ref().is_some_and(|n| n.error));
    // A failed turn: Error, then the Context every command ends with. The app is usable.
    engine(&mut app, [turn_done(false)]);
    type_text(&mut app, "fails");
    press(&mut app, [key(KeyCode::Enter)]);
    engine(
        &mut app,
        [
            EngineEvent::Error("decode failed".into()),
            EngineEvent::Context {
                used: 10,
                n_ctx: 4096,
            },
        ],
    );
    assert_eq!(app.messages.last().unwrap().role, Role::Error);
    assert!(!app.generating);
    type_text(&mut app, "again");
    assert_eq!(
        press(&mut app, [key(KeyCode::Enter)]),
        [UserCommand::Send("again".into())]
    );
}

#[test]
fn scrolling_pins_the_view_while_tokens_arrive() {
    let mut app = streamed_app();
    app.update(Action::Resize(100, 30));
    for _ in 0..40 {
        engine(&mut app, [EngineEvent::Token("more text\n".into())]);
    }
    app.update(Action::PageUp);
    let pinned = app.scroll.expect("scrolled up");
    engine(&mut app, [EngineEvent::Token("still more\n".into())]);
    assert_eq!(
        app.scroll,
        Some(pinned),
        "new tokens do not move a pinned view"
    );
    app.update(Action::PageDown);
    app.update(Action::PageDown);
    assert_eq!(
        app.scroll, None,
        "paging to the bottom follows the tail again"
    );
}

/// The loop itself, on a TestBackend, against a fake engine thread.
#[test]
fn run_loop_talks_to_an_engine() {
    let (input_tx, mut input_rx) = mpsc::channel::<Event>();
    let (event_tx, event_rx) = mpsc::channel();
    let (command_tx, command_rx) = mpsc::channel::<UserCommand>();
    let fake_engine = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for c in "hi".chars() {
            input_tx.send(key(KeyCode::Char(c))).unwrap();
        }
        input_tx.send(key(KeyCode::Enter)).unwrap();
        while let Ok(command) = command_rx.recv_timeout(Duration::from_secs(10)) {
            seen.push(command.clone());
            match command {
                UserCommand::Send(_) => {
                    for piece in ["Hel", "lo", " there"] {
                        event_tx.send(EngineEvent::Token(piece.into())).unwrap();
                    }
                    event_tx.send(turn_done(false)).unwrap();
                    // Sent after TurnDone: the loop must see the reply end first.
                    input_tx.send(ctrl_c()).unwrap();
                }
                UserCommand::Quit => {
                    event_tx.send(EngineEvent::Exited).unwrap();
                    break;
                }
                _ => {}
            }
        }
        seen
    });
    let mut terminal = Terminal::new(TestBackend::new(60, 16)).unwrap();
    let mut app = new_app();
    run_loop(
        &mut terminal,
        &mut app,
        &mut input_rx,
        &event_rx,
        &command_tx,
    )
    .unwrap();
    let seen = fake_engine.join().unwrap();
    assert_eq!(seen, [UserCommand::Send("hi".into()), UserCommand::Quit]);
    assert_eq!(app.messages.len(), 2);
    assert_eq!(app.messages[1].content, "Hello there");
    assert!(app.should_exit());
}

#[test]
fn live_figures_move_the_status_line_and_the_hot_tier_during_a_reply() {
    let mut app = streamed_app();
    engine(
        &mut app,
        [EngineEvent::Live {
            used: 300,
            hot_cells: 300,
            hot_bytes: 3 * MIB,
            hot_pages: 1,
        }],
    );
    assert_eq!(app.context, Some((300, 4096)));
    let m = app.memory.as_ref().unwrap();
    assert_eq!(
        (m.hot_cells_used, m.hot.used_bytes, m.hot.pages),
        (300, 3 * MIB, 1)
    );
    let screen = render(&mut app, 100, 30).backend().to_string();
    assert!(screen.contains("ctx 300/4,096"), "{screen}");
    assert!(screen.contains("300 of 32,768 cells"), "{screen}");
}

#[test]
fn errors_after_quit_are_kept_for_the_caller() {
    let mut app = ready_app();
    engine(&mut app, [EngineEvent::Error("before quit".into())]);
    let sent = press(&mut app, [ctrl_c()]);
    assert_eq!(sent, [UserCommand::Quit]);
    engine(
        &mut app,
        [EngineEvent::Error("saving session 'x' failed".into())],
    );
    assert_eq!(app.errors_while_quitting(), ["saving session 'x' failed"]);
}

#[test]
fn an_elastic_context_shows_what_it_may_grow_to() {
    let mut app = ready_app();
    let mut memory = cpu_memory();
    memory.hot_cells = 8_192;
    memory.hot_cells_ceiling = 32_768;
    engine(&mut app, [EngineEvent::Memory(Box::new(memory.clone()))]);
    let screen = format!("{:?}", render(&mut app, 100, 30).backend());
    assert!(screen.contains("6,144 of 8,192 cells"), "{screen}");
    assert!(screen.contains("grows to 32,768"), "{screen}");
    // A fixed context says nothing more.
    memory.hot_cells_ceiling = memory.hot_cells;
    engine(&mut app, [EngineEvent::Memory(Box::new(memory))]);
    let screen = format!("{:?}", render(&mut app, 100, 30).backend());
    assert!(!screen.contains("grows to"), "{screen}");
}
