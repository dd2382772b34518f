//! The TUI's behaviour: keys, commands, streaming, scrolling and the loop, through the same
//! helpers as the snapshots in `tests.rs`, its parent.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, KeyCode, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::*;
use crate::chat::protocol::*;
use crate::tui::app::Role;

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
    chat_events(&mut app, [turn_done(false)]);
    assert!(press(&mut app, [key(KeyCode::Enter)]).is_empty());
}

fn turn_done(stopped: bool) -> ChatEvent {
    ChatEvent::TurnDone {
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
        chat_events(&mut app, [turn_done(false)]);
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
    chat_events(&mut app, [ChatEvent::Token("Once".into())]);
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
    // While the chat thread saves, typing is ignored; a third Ctrl-C leaves at once.
    assert!(press(&mut app, [key(KeyCode::Char('x')), key(KeyCode::Enter)]).is_empty());
    let mut impatient = app.clone();
    impatient.update(Action::Interrupt(t0 + Duration::from_millis(600)));
    assert!(impatient.should_exit());
    chat_events(&mut app, [ChatEvent::Exited]);
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
    chat_events(&mut app, [turn_done(true)]);
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
    crate::tui::keys::handle_event(&mut app, Event::Paste(big.clone()), Instant::now());
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
    chat_events(
        &mut app,
        [
            ChatEvent::Token("part one".into()),
            ChatEvent::Error("cold tier over budget".into()),
            ChatEvent::Token(", part two".into()),
        ],
    );
    assert_eq!(app.messages.last().unwrap().content, "part one, part two");
    assert!(app.note.as_ref().is_some_and(|n| n.error));
    // A failed turn: Error, then the Context every command ends with. The app is usable.
    chat_events(&mut app, [turn_done(false)]);
    type_text(&mut app, "fails");
    press(&mut app, [key(KeyCode::Enter)]);
    chat_events(
        &mut app,
        [
            ChatEvent::Error("decode failed".into()),
            ChatEvent::Context {
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
        chat_events(&mut app, [ChatEvent::Token("more text\n".into())]);
    }
    app.update(Action::PageUp);
    let pinned = app.scroll.expect("scrolled up");
    chat_events(&mut app, [ChatEvent::Token("still more\n".into())]);
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

/// The loop itself, on a TestBackend, against a fake chat thread.
#[test]
fn run_loop_talks_to_a_chat_thread() {
    let (input_tx, mut input_rx) = mpsc::channel::<Event>();
    let (event_tx, event_rx) = mpsc::channel();
    let (command_tx, command_rx) = mpsc::channel::<UserCommand>();
    let fake_chat = std::thread::spawn(move || {
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
                        event_tx.send(ChatEvent::Token(piece.into())).unwrap();
                    }
                    event_tx.send(turn_done(false)).unwrap();
                    // Sent after TurnDone: the loop must see the reply end first.
                    input_tx.send(ctrl_c()).unwrap();
                }
                UserCommand::Quit => {
                    event_tx.send(ChatEvent::Exited).unwrap();
                    break;
                }
                _ => {}
            }
        }
        seen
    });
    let mut terminal = Terminal::new(TestBackend::new(60, 16)).unwrap();
    let mut app = test_app();
    run_loop(
        &mut terminal,
        &mut app,
        &mut input_rx,
        &event_rx,
        &command_tx,
    )
    .unwrap();
    let seen = fake_chat.join().unwrap();
    assert_eq!(seen, [UserCommand::Send("hi".into()), UserCommand::Quit]);
    assert_eq!(app.messages.len(), 2);
    assert_eq!(app.messages[1].content, "Hello there");
    assert!(app.should_exit());
}

#[test]
fn live_figures_move_the_status_line_and_the_hot_tier_during_a_reply() {
    let mut app = streamed_app();
    chat_events(
        &mut app,
        [ChatEvent::Live {
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
    chat_events(&mut app, [ChatEvent::Error("before quit".into())]);
    let sent = press(&mut app, [ctrl_c()]);
    assert_eq!(sent, [UserCommand::Quit]);
    chat_events(
        &mut app,
        [ChatEvent::Error("saving session 'x' failed".into())],
    );
    assert_eq!(app.errors_while_quitting(), ["saving session 'x' failed"]);
}

#[test]
fn an_elastic_context_shows_what_it_may_grow_to() {
    let mut app = ready_app();
    let mut memory = cpu_memory();
    memory.hot_cells = 8_192;
    memory.hot_cells_ceiling = 32_768;
    chat_events(&mut app, [ChatEvent::Memory(Box::new(memory.clone()))]);
    let screen = format!("{:?}", render(&mut app, 100, 30).backend());
    assert!(screen.contains("6,144 of 8,192 cells"), "{screen}");
    assert!(screen.contains("grows to 32,768"), "{screen}");
    // A fixed context says nothing more.
    memory.hot_cells_ceiling = memory.hot_cells;
    chat_events(&mut app, [ChatEvent::Memory(Box::new(memory))]);
    let screen = format!("{:?}", render(&mut app, 100, 30).backend());
    assert!(!screen.contains("grows to"), "{screen}");
}
