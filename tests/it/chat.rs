//! `kvrun chat` in line mode (stdin is not a terminal).

use crate::common::*;

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
        "Hello!\n/stats\nAnd again?\n/stats\n/bogus\n/fork\n/help\n/reset\n/stats\n/quit\nnever \
         read\n",
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
    // The TUI's command table: the same commands, help and refusals in line mode.
    assert!(text.contains("/fork needs one NAME"), "{text}");
    for (usage, _) in kvrun::chat::slash::COMMANDS {
        assert!(text.contains(usage), "/help lacks {usage}: {text}");
    }
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

/// Line mode on pipes, leaving with `signal` while the reply streams: the reply stops, the
/// session is saved with the message, and kvrun exits with the shell's code for the signal.
fn signal_mid_reply(signal: &str, code: i32) {
    use crate::common::ways_out::*;

    let home = Home::new();
    let model = default_model();
    let args = [
        "chat",
        path_str(&model),
        "--session",
        "piped",
        "--temp",
        "0",
        "-n",
        ENDLESS,
    ];
    let out = signal_while_streaming(&home, &args, Some(LONG_REPLY_PROMPT), signal);
    assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
    assert_kept_and_free(&home, "piped", LONG_REPLY_PROMPT);
}

#[test]
fn sigint_in_line_mode_on_a_pipe_stops_the_reply_saves_and_exits_130() {
    signal_mid_reply("INT", 130);
}

#[test]
fn sigterm_in_line_mode_stops_the_reply_saves_and_exits_143() {
    signal_mid_reply("TERM", 143);
}

#[test]
fn sighup_in_line_mode_stops_the_reply_saves_and_exits_129() {
    signal_mid_reply("HUP", 129);
}

#[test]
fn a_reply_nobody_stops_ends_at_the_default_limit() {
    // The tiny random-weight model never emits its end token.
    let home = Home::new();
    let out = home.run_with_stdin(
        &[
            "chat",
            path_str(&tiny_model()),
            "--session",
            "bounded",
            "--temp",
            "0",
            "-c",
            "4096",
        ],
        "go on forever\n",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let limit = kvrun::chat::DEFAULT_CHAT_MAX_TOKENS as usize;
    assert!(
        stderr(&out).contains(&format!("reached {limit} tokens, the default limit")),
        "{}",
        stderr(&out)
    );
    let manifest = manifest_json(&home, "bounded");
    let prompt_and_reply = manifest["tokens"].as_array().unwrap().len();
    assert!(
        prompt_and_reply > limit && prompt_and_reply < limit + 64,
        "{prompt_and_reply} tokens"
    );
    assert!(manifest.get("interrupted").is_none(), "{manifest}");
}

#[test]
fn model_switch_forks_the_conversation_onto_the_other_model() {
    let home = Home::new();
    let input = format!(
        "Hello there!\n/model {}\nAnd now?\n/model no-such-model\n/model\n/quit\n",
        path_str(&default_model())
    );
    let out = home.run_with_stdin(
        &[
            "chat",
            path_str(&chat_model()),
            "--session",
            "talk",
            "--temp",
            "0",
            "-n",
            "8",
        ],
        &input,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let forked = "talk-gemma-3-270m-q4_k_m";
    assert!(
        err.contains(&format!("forking 'talk' into '{forked}'")),
        "{err}"
    );
    assert!(err.contains("no-such-model"), "{err}");
    assert!(
        stdout(&out).contains("/model needs one MODEL"),
        "{}",
        stdout(&out)
    );
    // The session left keeps its model and its turn; the fork has both turns, on the new
    // model, which rendered the first with its own template.
    let talk = manifest_json(&home, "talk");
    let fork = manifest_json(&home, forked);
    assert!(talk["model"]["path"]
        .as_str()
        .unwrap()
        .ends_with("smollm2-135m-instruct-q4_1.gguf"));
    assert!(fork["model"]["path"]
        .as_str()
        .unwrap()
        .ends_with("gemma-3-270m-q4_k_m.gguf"));
    let messages = |m: &serde_json::Value| m["messages"].as_array().unwrap().clone();
    assert_eq!(messages(&talk).len(), 2, "{talk}");
    assert_eq!(messages(&fork).len(), 4, "{fork}");
    assert_eq!(messages(&fork)[..2], messages(&talk)[..], "{fork}");
    assert_eq!(messages(&fork)[2]["content"], "And now?");
}
