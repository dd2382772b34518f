//! Stored responses: `<data>/responses/<id>.json` (0600 in a 0700 folder), written
//! atomically and read back bounded and checked, so `previous_response_id` works after a
//! restart. A stored response keeps the conversation it continues (without its
//! `instructions`, which OpenAI does not carry over) so the next request can extend it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::paths::Paths;
use crate::server::errors::ApiError;
use crate::store::atomic::write_atomic;
use crate::store::fsutil::{create_private_dir_all, read_bounded};
use crate::template::Message;

/// A stored response larger than this is refused on reading.
const MAX_STORED_BYTES: u64 = 64 << 20;
/// Response ids are `resp_` and 24 hex digits ([`crate::server::generation::response_id`]).
pub const ID_PREFIX: &str = "resp_";
const ID_HEX: usize = 24;
/// What a stored file says it is.
const FORMAT: &str = "kvrun-response-1";

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StoredResponse {
    pub format: String,
    /// The response object as the API returned it.
    pub response: serde_json::Value,
    /// The session the conversation is persisted as.
    pub session: String,
    /// The conversation through this response's output.
    pub messages: Vec<Message>,
}

impl StoredResponse {
    pub fn new(response: serde_json::Value, session: String, messages: Vec<Message>) -> Self {
        Self {
            format: FORMAT.into(),
            response,
            session,
            messages,
        }
    }
}

/// Whether `id` has the shape of a response id (anything else cannot name a file here).
pub fn valid_id(id: &str) -> bool {
    id.strip_prefix(ID_PREFIX)
        .is_some_and(|hex| hex.len() == ID_HEX && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn folder(paths: &Paths) -> PathBuf {
    paths.data.join("responses")
}

fn file(paths: &Paths, id: &str) -> PathBuf {
    folder(paths).join(format!("{id}.json"))
}

fn storage_error(path: &Path, e: impl std::fmt::Display) -> ApiError {
    ApiError::internal(format!("stored response {}: {e}", path.display()))
}

pub fn save(paths: &Paths, id: &str, stored: &StoredResponse) -> Result<(), ApiError> {
    let path = file(paths, id);
    create_private_dir_all(&folder(paths)).map_err(|e| storage_error(&path, e))?;
    let bytes = serde_json::to_vec(stored).map_err(|e| storage_error(&path, e))?;
    write_atomic(&path, &bytes).map_err(|e| storage_error(&path, e))
}

/// The stored response `id`; `Ok(None)` when there is none.
pub fn load(paths: &Paths, id: &str) -> Result<Option<StoredResponse>, ApiError> {
    if !valid_id(id) {
        return Ok(None);
    }
    let path = file(paths, id);
    let bytes = match read_bounded(&path, MAX_STORED_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(storage_error(&path, e)),
    };
    let stored: StoredResponse = serde_json::from_slice(&bytes)
        .map_err(|e| storage_error(&path, format!("unreadable: {e}")))?;
    if stored.format != FORMAT {
        return Err(storage_error(
            &path,
            format!("unknown format '{}'", stored.format),
        ));
    }
    Ok(Some(stored))
}

/// Removes `id`; `false` when there was none.
pub fn remove(paths: &Paths, id: &str) -> Result<bool, ApiError> {
    if !valid_id(id) {
        return Ok(false);
    }
    let path = file(paths, id);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(storage_error(&path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn ids_are_checked() {
        assert!(valid_id("resp_0123456789abcdef01234567"));
        assert!(!valid_id("resp_../../etc/passwd"));
        assert!(!valid_id("resp_0123"));
        assert!(!valid_id("msg_0123456789abcdef01234567"));
    }

    #[test]
    fn save_load_remove_round_trip() {
        let home = tempfile::tempdir().unwrap();
        let paths = Paths::under(home.path());
        let id = "resp_0123456789abcdef01234567";
        assert!(load(&paths, id).unwrap().is_none());
        let stored = StoredResponse::new(
            serde_json::json!({"id": id}),
            "s".into(),
            vec![Message::text("user", "hi")],
        );
        save(&paths, id, &stored).unwrap();
        let mode = std::fs::metadata(file(&paths, id))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(folder(&paths))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let back = load(&paths, id).unwrap().unwrap();
        assert_eq!(back.messages, stored.messages);
        std::fs::write(file(&paths, id), b"{not json").unwrap();
        assert!(load(&paths, id).is_err());
        assert!(remove(&paths, id).unwrap());
        assert!(!remove(&paths, id).unwrap());
    }
}
