//! Directory walk over an object store root, shared by `iter`, `usage` and `gc`.

use std::fs::{self, ReadDir};
use std::io;
use std::path::PathBuf;

use super::atomic::TEMP_PREFIX;
use super::fsutil::io_err;
use super::{ObjectId, Result};

/// An object file (`id` set) or a temp file (`id` None) found under the root.
pub(crate) struct Entry {
    pub(crate) path: PathBuf,
    pub(crate) id: Option<ObjectId>,
}

/// Walks `root/` and `root/xx/`, yielding objects and temp files. A missing root is empty.
pub(crate) struct Entries {
    root: PathBuf,
    outer: Option<ReadDir>,
    started: bool,
    /// Current fan-out directory: its listing and its two hex characters.
    inner: Option<(ReadDir, String)>,
}

fn is_lower_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl Entries {
    pub(crate) fn new(root: PathBuf) -> Self {
        Self {
            root,
            outer: None,
            started: false,
            inner: None,
        }
    }
}

impl Iterator for Entries {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Self::Item> {
        if !self.started {
            self.started = true;
            match fs::read_dir(&self.root) {
                Ok(rd) => self.outer = Some(rd),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
                Err(e) => return Some(Err(io_err(&self.root, e))),
            }
        }
        loop {
            if let Some((rd, prefix)) = &mut self.inner {
                match rd.next() {
                    Some(Ok(de)) => {
                        let name = de.file_name();
                        let Some(name) = name.to_str() else { continue };
                        if name.starts_with(TEMP_PREFIX) {
                            return Some(Ok(Entry {
                                path: de.path(),
                                id: None,
                            }));
                        }
                        if is_lower_hex(name, 62) {
                            let id = ObjectId::from_hex(&format!("{prefix}{name}"))
                                .expect("64 lowercase hex characters");
                            return Some(Ok(Entry {
                                path: de.path(),
                                id: Some(id),
                            }));
                        }
                        continue;
                    }
                    Some(Err(e)) => {
                        let dir = self.root.join(prefix.as_str());
                        return Some(Err(io_err(&dir, e)));
                    }
                    None => self.inner = None,
                }
            }
            let de = match self.outer.as_mut()?.next()? {
                Ok(de) => de,
                Err(e) => return Some(Err(io_err(&self.root, e))),
            };
            let name = de.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.starts_with(TEMP_PREFIX) {
                return Some(Ok(Entry {
                    path: de.path(),
                    id: None,
                }));
            }
            if is_lower_hex(name, 2) && de.file_type().is_ok_and(|t| t.is_dir()) {
                match fs::read_dir(de.path()) {
                    Ok(rd) => self.inner = Some((rd, name.to_string())),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Some(Err(io_err(&de.path(), e))),
                }
            }
        }
    }
}
