//! Snapshot tests of the main screens on a `TestBackend`, driven by synthetic keys and
//! chat events, and unit tests of `update`. Nothing reads the clock or the machine: the
//! time for "3m ago" is injected with `Action::Tick`.
//!
//! To accept changed snapshots: `INSTA_UPDATE=always cargo test --release --lib tui::`,
//! then review `git diff src/tui/snapshots`.

use std::time::Instant;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use insta::assert_snapshot;
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::app::Focus;
use super::*;

/// Behaviour through the same helpers: keys, commands, streaming, scrolling, the loop.
mod behaviour;
use crate::chat::protocol::*;
use crate::session::SessionSummary;

pub(super) const GIB: u64 = 1 << 30;
pub(super) const MIB: u64 = 1 << 20;
/// The injected "now".
pub(super) const NOW: u64 = 1_800_000_000;

pub(super) fn key(code: KeyCode) -> Event {
    Event::Key(KeyEvent::new(code, KeyModifiers::NONE))
}

pub(super) fn chord(code: KeyCode, modifiers: KeyModifiers) -> Event {
    Event::Key(KeyEvent::new(code, modifiers))
}

pub(super) fn ctrl_c() -> Event {
    chord(KeyCode::Char('c'), KeyModifiers::CONTROL)
}

pub(super) fn test_app() -> App {
    let mut app = super::new_app(TuiOptions {
        title: "kvrun".into(),
        session: Some("refactor-agent".into()),
        read_only: false,
    });
    app.update(Action::Tick { now_unix: NOW });
    app
}

/// Presses keys; returns the commands they produced.
pub(super) fn press(app: &mut App, events: impl IntoIterator<Item = Event>) -> Vec<UserCommand> {
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

pub(super) fn type_text(app: &mut App, text: &str) -> Vec<UserCommand> {
    press(app, text.chars().map(|c| key(KeyCode::Char(c))))
}

pub(super) fn chat_events(app: &mut App, events: impl IntoIterator<Item = ChatEvent>) {
    for e in events {
        app.update(Action::Chat(e));
    }
}

pub(super) fn cpu_memory() -> MemorySnapshot {
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
        ..MemorySnapshot::default()
    }
}

pub(super) fn sessions() -> Vec<SessionRow> {
    let row = |name: &str, tokens, tier, ago_s: u64, active| SessionRow {
        summary: SessionSummary {
            name: name.into(),
            tokens,
            ..SessionSummary::default()
        },
        tier,
        last_used_unix: NOW - ago_s,
        active,
        ..SessionRow::default()
    };
    vec![
        row("refactor-agent", 18_432, Tier::Hot, 5, true),
        row("docs", 2_048, Tier::Warm, 180, false),
        row("old-notes", 9_120, Tier::Cold, 3 * 86_400, false),
    ]
}

/// A TUI that has started: the model is loaded on a machine without a GPU.
pub(super) fn ready_app() -> App {
    let mut app = test_app();
    chat_events(
        &mut app,
        [
            ChatEvent::Ready {
                model: "gemma-3-270m-it-q4_k_m".into(),
                n_ctx: 4096,
                gpu: false,
            },
            ChatEvent::Context {
                used: 0,
                n_ctx: 4096,
            },
            ChatEvent::Memory(Box::new(cpu_memory())),
            ChatEvent::Sessions(sessions()),
        ],
    );
    app
}

/// A question and a streamed answer with a fenced code block, token by token.
pub(super) fn streamed_app() -> App {
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
        pieces.push(ChatEvent::Token(rest[..cut].to_string()));
        rest = &rest[cut..];
    }
    chat_events(&mut app, pieces);
    chat_events(
        &mut app,
        [
            ChatEvent::TurnDone {
                prefilled: 31,
                prefill_tokens_per_s: 412.0,
                generated: 64,
                decode_tokens_per_s: 38.6,
                stopped: false,
            },
            ChatEvent::Context {
                used: 95,
                n_ctx: 4096,
            },
        ],
    );
    app
}

pub(super) fn render(app: &mut App, width: u16, height: u16) -> Terminal<TestBackend> {
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
    chat_events(
        &mut app,
        [
            ChatEvent::Error("session 'old-notes' is locked by another kvrun (pid 4242)".into()),
            ChatEvent::Memory(Box::new(memory)),
            ChatEvent::Progress {
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
    chat_events(
        &mut app,
        [
            ChatEvent::Ready {
                model: "gemma-3-270m-q4_k_m".into(),
                n_ctx: 32768,
                gpu: false,
            },
            ChatEvent::Memory(Box::new(cpu_memory())),
            ChatEvent::Sessions(sessions()),
        ],
    );
    assert_eq!(app.focus(), Focus::Sessions);
    // A monitor asks for a pick, not for a message it cannot take.
    let screen = render(&mut app, 100, 30).backend().to_string();
    assert!(screen.contains("Pick a session"), "{screen}");
    assert!(!screen.contains("Type a message"), "{screen}");
    assert!(type_text(&mut app, "hello").is_empty());
    let sent = press(&mut app, [key(KeyCode::Down), key(KeyCode::Enter)]);
    assert_eq!(sent, [UserCommand::Switch("docs".into())]);
    chat_events(
        &mut app,
        [ChatEvent::Switched {
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

/// `kvrun top` of a server with two models: the memory panel shows the budget they share
/// and each model's state and bytes.
#[test]
fn the_monitor_shows_each_model_against_the_budget() {
    use crate::chat::protocol::ModelRow;
    let mut app = ready_app();
    let memory = MemorySnapshot {
        models: vec![
            ModelRow {
                id: "gemma-3-270m-q4_k_m".into(),
                state: "loaded".into(),
                bytes: 620 * MIB,
                idle_secs: Some(12),
            },
            ModelRow {
                id: "smollm2-135m-instruct".into(),
                state: "unloaded".into(),
                bytes: 0,
                idle_secs: None,
            },
        ],
        model_budget_bytes: 700 * MIB,
        ..cpu_memory()
    };
    chat_events(&mut app, [ChatEvent::Memory(Box::new(memory))]);
    let terminal = render(&mut app, 120, 60);
    let buffer = terminal.backend().buffer();
    let text: String = buffer
        .content()
        .chunks(buffer.area.width as usize)
        .map(|row| row.iter().map(|c| c.symbol()).collect::<String>() + "\n")
        .collect();
    assert!(text.contains("models"), "{text}");
    assert!(text.contains("budget"), "{text}");
    assert!(text.contains("gemma-3-270m-q4_k_m 620M idle 12s"), "{text}");
    assert!(text.contains("smollm2-135m-instruct unloaded"), "{text}");
}
