//! A family of conversations: what one client key names. An agent sends several
//! conversations under one session id (opencode's title request and its main request;
//! Claude Code's small-model calls and sub-agents), so a key names a family, and each
//! conversation in it is a session of its own: the first is named as the key, the others
//! `KEY.2`, `KEY.3`, ... (`KEY/2` on the command line). A request goes to the member whose
//! log its prompt extends; one that extends none starts a new member, so nothing is
//! overwritten by a request that does not continue it.

use super::name::MAX_NAME_LEN;

/// The longest family name: room is left for a member's `.N` suffix.
pub const MAX_FAMILY_LEN: usize = MAX_NAME_LEN - 8;

/// The session name of member `n` (1-based) of `family`.
pub fn member_name(family: &str, n: usize) -> String {
    if n <= 1 {
        family.to_string()
    } else {
        format!("{family}.{n}")
    }
}

/// Which member of `family` the session `name` is, if it is one (only the names
/// [`member_name`] makes: not `KEY.02` nor `KEY.1`).
pub fn member_index(name: &str, family: &str) -> Option<usize> {
    if name == family {
        return Some(1);
    }
    let n: usize = name.strip_prefix(family)?.strip_prefix('.')?.parse().ok()?;
    (n >= 2 && member_name(family, n) == name).then_some(n)
}

/// A command line's `NAME/N` as the session name it means (`NAME/1` is `NAME`); a plain
/// name is itself.
pub fn resolve_member_spec(spec: &str) -> Result<String, String> {
    let Some((family, n)) = spec.rsplit_once('/') else {
        return Ok(spec.to_string());
    };
    match n.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(member_name(family, n)),
        _ => Err(format!(
            "{spec:?}: after the '/' comes a conversation's number in its family (1, 2, ...)"
        )),
    }
}

/// The next member's number, after the members `taken`.
pub fn next_member(taken: impl IntoIterator<Item = usize>) -> usize {
    taken.into_iter().max().map_or(1, |n| n + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_the_key_then_numbered() {
        assert_eq!(member_name("ses_a", 1), "ses_a");
        assert_eq!(member_name("ses_a", 3), "ses_a.3");
        assert_eq!(member_index("ses_a", "ses_a"), Some(1));
        assert_eq!(member_index("ses_a.3", "ses_a"), Some(3));
        for other in [
            "ses_ab", "ses_a.02", "ses_a.1", "ses_a.x", "ses_a.", "ses_b.2",
        ] {
            assert_eq!(member_index(other, "ses_a"), None, "{other}");
        }
        assert_eq!(next_member([1, 3]), 4);
        assert_eq!(next_member([]), 1);
    }

    #[test]
    fn command_line_specs() {
        assert_eq!(resolve_member_spec("work").unwrap(), "work");
        assert_eq!(resolve_member_spec("work/1").unwrap(), "work");
        assert_eq!(resolve_member_spec("work/2").unwrap(), "work.2");
        assert!(resolve_member_spec("work/0").is_err());
        assert!(resolve_member_spec("work/x").is_err());
    }
}
