//! Which conversation a request belongs to, from the names clients already send. None is
//! needed for a cache hit (pages are found by content), but a named conversation becomes a
//! kept session: visible in `kvrun session ls`, resumable with `kvrun chat --session`.

use axum::http::HeaderMap;

use crate::service::protocol::ConversationKey;
use crate::session::family::MAX_FAMILY_LEN;
use crate::session::name::{validate_name, MAX_NAME_LEN};

/// Session-id headers, most specific first.
const SESSION_HEADERS: [&str; 3] = ["x-session-id", "x-claude-code-session-id", "session-id"];

/// How much of an unusable value survives in front of its hash.
const READABLE_PREFIX: usize = 40;

/// The request fields that may name a conversation, as each API has them.
#[derive(Debug, Default, Clone, Copy)]
pub struct NameSources<'a> {
    /// OpenAI's `prompt_cache_key` (Codex sets it to its session id).
    pub prompt_cache_key: Option<&'a str>,
    /// Anthropic's `metadata.user_id` (Claude Code: a JSON string holding `session_id`).
    pub metadata_user_id: Option<&'a serde_json::Value>,
    /// OpenAI's `user`.
    pub user: Option<&'a str>,
    /// The session of the response `previous_response_id` names.
    pub previous_session: Option<&'a str>,
}

/// The conversation's key: the first name found, in the documented order, else anonymous.
pub fn conversation_key(headers: &HeaderMap, sources: &NameSources<'_>) -> ConversationKey {
    // Header values are bytes; a client's UTF-8 name (`X-Session-Id: ünïcødé-名前`) is
    // still its name, so it is read as UTF-8, not dropped for not being visible ASCII.
    let from_headers = SESSION_HEADERS.iter().filter_map(|h| {
        let value = headers.get(*h)?;
        Some(String::from_utf8_lossy(value.as_bytes()).into_owned())
    });
    let from_body = [
        sources.prompt_cache_key.map(str::to_string),
        sources.metadata_user_id.and_then(session_of_user_id),
        sources.user.map(str::to_string),
        sources.previous_session.map(str::to_string),
    ];
    from_headers
        .chain(from_body.into_iter().flatten())
        .find_map(|raw| session_name(&raw))
        .map_or(ConversationKey::Anonymous, ConversationKey::Family)
}

/// The session id inside Anthropic's `metadata.user_id`: its `session_id` when it is JSON
/// (an object, or a string holding one), else the text itself.
fn session_of_user_id(value: &serde_json::Value) -> Option<String> {
    let object = match value {
        serde_json::Value::String(text) => match serde_json::from_str(text) {
            Ok(parsed @ serde_json::Value::Object(_)) => parsed,
            _ => return Some(text.clone()),
        },
        serde_json::Value::Object(_) => value.clone(),
        _ => return None,
    };
    object
        .get("session_id")
        .and_then(|s| s.as_str())
        .map(str::to_string)
}

/// A valid session name for `raw`: itself when it already is one; otherwise a readable
/// prefix of its usable characters plus a short hash of the whole value, so distinct
/// values stay distinct. `None` for a blank value.
pub fn session_name(raw: &str) -> Option<String> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    // A key names a family of conversations, whose members add `.N`: a long key is
    // shortened like an unusable one, to leave them room.
    if validate_name(raw).is_ok() && raw.len() <= MAX_FAMILY_LEN {
        return Some(raw.to_string());
    }
    let mut readable = String::new();
    for c in raw.chars() {
        let c = if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
            c
        } else {
            '-'
        };
        if !(c == '-' && readable.ends_with('-')) {
            readable.push(c);
        }
    }
    let readable: String = readable
        .trim_start_matches(['.', '-'])
        .chars()
        .take(READABLE_PREFIX)
        .collect();
    let hash = &blake3::hash(raw.as_bytes()).to_hex()[..12];
    let name = match readable.trim_end_matches('-') {
        "" => format!("conv-{hash}"),
        prefix => format!("{prefix}-{hash}"),
    };
    debug_assert!(name.len() <= MAX_NAME_LEN && validate_name(&name).is_ok());
    Some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.insert(*k, v.parse().unwrap());
        }
        map
    }

    fn named(name: &str) -> ConversationKey {
        ConversationKey::Family(name.into())
    }

    #[test]
    fn a_utf8_header_names_its_own_conversation() {
        let mut map = HeaderMap::new();
        let value = axum::http::HeaderValue::from_bytes("ünïcødé-名前".as_bytes()).unwrap();
        map.insert("x-session-id", value);
        let other = axum::http::HeaderValue::from_bytes("другое-имя".as_bytes()).unwrap();
        let mut second = HeaderMap::new();
        second.insert("x-session-id", other);
        let none = NameSources::default();
        let (a, b) = (
            conversation_key(&map, &none),
            conversation_key(&second, &none),
        );
        assert!(
            matches!(&a, ConversationKey::Family(n) if n.starts_with("n-c-d-")),
            "{a:?}"
        );
        assert!(
            matches!(&b, ConversationKey::Family(n) if n.starts_with("conv-")),
            "{b:?}"
        );
        assert_ne!(a, b);
    }

    #[test]
    fn sources_are_taken_in_order() {
        let user_id = json!("{\"device_id\":\"d\",\"session_id\":\"meta-sess\"}");
        let all = NameSources {
            prompt_cache_key: Some("cache-key"),
            metadata_user_id: Some(&user_id),
            user: Some("user-1"),
            previous_session: Some("prev"),
        };
        let h = headers(&[
            ("x-session-id", "explicit"),
            ("x-claude-code-session-id", "claude"),
            ("session-id", "codex"),
        ]);
        assert_eq!(conversation_key(&h, &all), named("explicit"));
        let h = headers(&[
            ("x-claude-code-session-id", "claude"),
            ("session-id", "codex"),
        ]);
        assert_eq!(conversation_key(&h, &all), named("claude"));
        let h = headers(&[("session-id", "codex")]);
        assert_eq!(conversation_key(&h, &all), named("codex"));
        let none = HeaderMap::new();
        assert_eq!(conversation_key(&none, &all), named("cache-key"));
        let rest = NameSources {
            prompt_cache_key: None,
            ..all
        };
        assert_eq!(conversation_key(&none, &rest), named("meta-sess"));
        let rest = NameSources {
            metadata_user_id: None,
            ..rest
        };
        assert_eq!(conversation_key(&none, &rest), named("user-1"));
        let rest = NameSources { user: None, ..rest };
        assert_eq!(conversation_key(&none, &rest), named("prev"));
        assert_eq!(
            conversation_key(&none, &NameSources::default()),
            ConversationKey::Anonymous
        );
    }

    #[test]
    fn metadata_user_id_forms() {
        let object = json!({"session_id": "abc"});
        assert_eq!(session_of_user_id(&object).as_deref(), Some("abc"));
        let plain = json!("user_42");
        assert_eq!(session_of_user_id(&plain).as_deref(), Some("user_42"));
        let without = json!("{\"device_id\": \"d\"}");
        assert_eq!(session_of_user_id(&without), None);
        assert_eq!(session_of_user_id(&json!(7)), None);
    }

    #[test]
    fn blank_values_fall_through() {
        let h = headers(&[("x-session-id", "  ")]);
        let sources = NameSources {
            user: Some("u"),
            ..Default::default()
        };
        assert_eq!(conversation_key(&h, &sources), named("u"));
    }

    #[test]
    fn odd_values_become_valid_distinct_names() {
        let uuid = "0b9c6f52-1a2b-4c3d-9e8f-0123456789ab";
        assert_eq!(session_name(uuid).as_deref(), Some(uuid));
        let odd = session_name("user@example.com/chat 1").unwrap();
        assert!(odd.starts_with("user-example.com-chat-1-"), "{odd}");
        assert!(validate_name(&odd).is_ok());
        let long = "x".repeat(500);
        let a = session_name(&long).unwrap();
        let b = session_name(&format!("{long}y")).unwrap();
        assert!(validate_name(&a).is_ok() && validate_name(&b).is_ok());
        assert_ne!(a, b);
        let symbols = session_name("✨✨").unwrap();
        assert!(symbols.starts_with("conv-"), "{symbols}");
        let dotted = session_name("..hidden").unwrap();
        assert!(dotted.starts_with("hidden-"), "{dotted}");
    }
}
