//! `kvrun chat` in line mode (stdin is not a terminal).

mod common;

use common::*;

#[test]
fn line_mode_chat_keeps_the_conversation_and_answers_commands() {
    let home = Home::new();
    let out = home.run_with_stdin(
        &[
            "chat",
            path_str(&default_model()),
            "--temp",
            "0",
            "-n",
            "16",
        ],
        "Hello!\n/stats\nAnd again?\n/stats\n/bogus\n/reset\n/stats\n/quit\nnever read\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let stats: Vec<_> = text.lines().filter(|l| l.starts_with("context:")).collect();
    assert_eq!(stats.len(), 3, "{text}");
    let used = |line: &str| -> u64 { line.split_whitespace().nth(1).unwrap().parse().unwrap() };
    // The second turn extends the first; /reset empties the context.
    assert!(used(stats[1]) > used(stats[0]), "{text}");
    assert_eq!(used(stats[2]), 0, "{text}");
    assert!(text.contains("unknown command /bogus"));
    assert!(text.contains("conversation cleared"));
}

#[test]
fn chat_is_deterministic_with_greedy_sampling() {
    let home = Home::new();
    let model = tiny_model();
    let args = ["chat", path_str(&model), "--temp", "0", "-n", "10"];
    let a = home.run_with_stdin(&args, "one\ntwo\n");
    let b = home.run_with_stdin(&args, "one\ntwo\n");
    assert!(a.status.success(), "{}", stderr(&a));
    assert_eq!(stdout(&a), stdout(&b));
}

#[test]
fn context_overflow_error_mode_reports_and_continues() {
    let home = Home::new();
    let long = "many words here ".repeat(60);
    let input = format!("{long}\n/stats\n");
    let out = home.run_with_stdin(
        &[
            "chat",
            path_str(&tiny_model()),
            "-c",
            "64",
            "--context-overflow",
            "error",
        ],
        &input,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("does not fit the context"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).contains("context: 0 /"));
}
