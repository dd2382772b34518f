//! The /commands typed in the input box.

use crate::chat::protocol::UserCommand;

/// The commands and what they do, for the help overlay (one list, so help cannot drift from
/// the parser).
pub const COMMANDS: &[(&str, &str)] = &[
    ("/save", "save the session now"),
    ("/fork NAME", "copy the session, continue in the copy"),
    ("/session NAME", "switch to (or create) a session"),
    ("/sessions", "refresh and show the sessions list"),
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
    /// A /command that cannot run, and why.
    Invalid(String),
}

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
    let no_arg = |command: UserCommand| {
        if arg.is_empty() {
            Slash::Command(command)
        } else {
            Slash::Invalid(format!("/{name} takes no argument"))
        }
    };
    match name {
        "save" => no_arg(UserCommand::Save),
        "fork" => needs_name(UserCommand::Fork),
        "session" | "switch" => needs_name(UserCommand::Switch),
        "sessions" => no_arg(UserCommand::ListSessions),
        "reset" => no_arg(UserCommand::Reset),
        "quit" | "exit" => no_arg(UserCommand::Quit),
        "help" => Slash::Help,
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
    }
}
