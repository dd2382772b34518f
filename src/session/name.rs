//! Session names: what a name may be, since names become folder names and arguments.

use super::error::SessionError;

pub const MAX_NAME_LEN: usize = 64;

/// Checks a session name: 1 to 64 of `[A-Za-z0-9._-]`, not starting with `.` or `-`. Names
/// become folder names and command-line arguments, so nothing that could walk out of the
/// sessions folder, hide in a listing, or read as a flag.
pub fn validate_name(name: &str) -> Result<(), SessionError> {
    let reason = if name.is_empty() {
        "it is empty".to_string()
    } else if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        format!("it contains {c:?}")
    } else if name.len() > MAX_NAME_LEN {
        format!("it is {} characters long", name.len())
    } else if name.starts_with(['.', '-']) {
        "it starts with '.' or '-'".to_string()
    } else {
        return Ok(());
    };
    Err(SessionError::InvalidName {
        name: name.chars().take(80).collect(),
        reason,
    })
}
