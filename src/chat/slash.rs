//! The /commands of a chat, one table for every front end: the TUI's input box and the
//! line-mode REPL parse with [`parse`] and show [`COMMANDS`] as their help, so the two
//! cannot drift apart.

use super::protocol::UserCommand;

/// The commands and what they do, for the help (one list, so help cannot drift from the
/// parser).
pub const COMMANDS: &[(&str, &str)] = &[
    ("/save", "save the session now"),
    ("/fork NAME", "copy the session, continue in the copy"),
    ("/session NAME", "switch to (or create) a session"),
    (
        "/model MODEL",
        "continue with another model, in a new session (a fork)",
    ),
    ("/sessions", "refresh and show the sessions list"),
    ("/stats [json]", "the context and the memory tiers"),
    ("/reset", "forget this conversation"),
    ("/help", "this help"),
    ("/quit", "save and leave"),
];

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    /// Plain text for the model.
    Message(String),
    Command(UserCommand),
    Help,
    /// Show the figures a front end has (`json`: as one JSON line, for scripts).
    Stats {
        json: bool,
    },
    /// A /command that cannot run, and why.
    Invalid(String),
}

/// The commands as plain-text help lines, for the line-mode REPL.
pub fn help_lines() -> impl Iterator<Item = String> {
    let width = COMMANDS
        .iter()
        .map(|(usage, _)| usage.len())
        .max()
        .unwrap_or(0);
    COMMANDS
        .iter()
        .map(move |(usage, what)| format!("  {usage:<width$}  {what}"))
}

/// What a line of input means: a message, a command, or a command that cannot run.
pub fn parse(text: &str) -> Slash {
    let trimmed = text.trim();
    // "//text" sends "/text": a way to start a message with a slash.
    if let Some(rest) = trimmed.strip_prefix("//") {
        return Slash::Message(format!("/{rest}"));
    }
    let Some(command) = trimmed.strip_prefix('/') else {
        return Slash::Message(text.to_string());
    };
    let (name, arg) = match command.split_once(char::is_whitespace) {
        Some((name, arg)) => (name, arg.trim()),
        None => (command, ""),
    };
    let needs_name = |make: fn(String) -> UserCommand| {
        if arg.is_empty() || arg.contains(char::is_whitespace) {
            Slash::Invalid(format!("/{name} needs one NAME, e.g. /{name} refactor"))
        } else {
            Slash::Command(make(arg.to_string()))
        }
    };
    let no_arg = |slash: Slash| {
        if arg.is_empty() {
            slash
        } else {
            Slash::Invalid(format!("/{name} takes no argument"))
        }
    };
    let bare = |command: UserCommand| no_arg(Slash::Command(command));
    match name {
        "save" => bare(UserCommand::Save),
        "fork" => needs_name(UserCommand::Fork),
        "session" | "switch" => needs_name(UserCommand::Switch),
        "sessions" => bare(UserCommand::ListSessions),
        "model" if arg.is_empty() || arg.contains(char::is_whitespace) => Slash::Invalid(
            "/model needs one MODEL: a .gguf path, a name in the models folder, or \
             smollm2/gemma3"
                .into(),
        ),
        "model" => Slash::Command(UserCommand::Model(arg.to_string())),
        "reset" => bare(UserCommand::Reset),
        "quit" | "exit" => bare(UserCommand::Quit),
        "help" => no_arg(Slash::Help),
        "stats" => match arg {
            "" => Slash::Stats { json: false },
            "json" => Slash::Stats { json: true },
            _ => Slash::Invalid("/stats takes no argument, or json".to_string()),
        },
        _ => Slash::Invalid(format!(
            "unknown command /{name}: /help lists them (start with // to send a slash)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(
            parse("/fork side-quest"),
            Slash::Command(UserCommand::Fork("side-quest".into()))
        );
        assert_eq!(
            parse("  /session main "),
            Slash::Command(UserCommand::Switch("main".into()))
        );
        assert_eq!(parse("/save"), Slash::Command(UserCommand::Save));
        assert_eq!(parse("/help"), Slash::Help);
        assert!(matches!(parse("/fork"), Slash::Invalid(_)));
        assert!(matches!(parse("/fork a b"), Slash::Invalid(_)));
        assert!(matches!(parse("/bogus"), Slash::Invalid(_)));
        assert_eq!(parse("//etc/hosts"), Slash::Message("/etc/hosts".into()));
        assert_eq!(parse("hello /save"), Slash::Message("hello /save".into()));
        assert_eq!(parse("/stats"), Slash::Stats { json: false });
        assert_eq!(parse("/stats json"), Slash::Stats { json: true });
        assert!(matches!(parse("/stats yaml"), Slash::Invalid(_)));
        assert_eq!(parse("/exit"), Slash::Command(UserCommand::Quit));
        assert_eq!(
            parse("/switch b"),
            Slash::Command(UserCommand::Switch("b".into()))
        );
    }

    #[test]
    fn every_command_in_the_help_parses() {
        for (usage, _) in COMMANDS {
            let example = usage.replace("NAME", "x").replace(" [json]", "");
            assert!(
                !matches!(parse(&example), Slash::Invalid(_) | Slash::Message(_)),
                "{usage} is in the help but does not parse"
            );
        }
    }
}
