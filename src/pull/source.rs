//! Parsing the user's `kvrun pull <SOURCE>` argument and naming the downloaded file.

use super::{known_model, KnownModel, PullError};

/// What to pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Every default model ([`super::DEFAULT_MODELS`]).
    Defaults,
    /// One default model, by its short name.
    Known(KnownModel),
    /// A direct HTTP(S) URL of a `.gguf` file.
    Url(String),
}

const HF_PREFIX: &str = "hf:";
const HF_BASE: &str = "https://huggingface.co";
const SPEC_HELP: &str = "expected smollm2, gemma3, default (both), an http(s):// URL, \
     or hf:OWNER/REPO[@REVISION]/PATH/TO/FILE.gguf";

/// Parse a pull source:
/// * empty or `default` → [`Source::Defaults`];
/// * a known model's short name (`smollm2`, `gemma3`) → [`Source::Known`];
/// * `http://…` / `https://…` → [`Source::Url`] unchanged;
/// * `hf:OWNER/REPO/PATH/TO/FILE.gguf` or `hf:OWNER/REPO@REVISION/PATH/TO/FILE.gguf` →
///   `https://huggingface.co/OWNER/REPO/resolve/REVISION-or-main/PATH/TO/FILE.gguf`.
pub fn resolve_source(spec: &str) -> Result<Source, PullError> {
    let spec = spec.trim();
    if spec.is_empty() || spec.eq_ignore_ascii_case("default") {
        return Ok(Source::Defaults);
    }
    if let Some(model) = known_model(spec) {
        return Ok(Source::Known(model));
    }
    let lower = spec.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        if spec.chars().any(char::is_whitespace) {
            return Err(PullError::BadSpec(format!(
                "URL contains whitespace: {spec:?}"
            )));
        }
        return Ok(Source::Url(spec.to_string()));
    }
    if let Some(rest) = spec.strip_prefix(HF_PREFIX) {
        // Tolerate the URL-looking `hf://` form too.
        let rest = rest.strip_prefix("//").unwrap_or(rest);
        return hf_url(rest).map(Source::Url);
    }
    Err(PullError::BadSpec(format!(
        "cannot pull {spec:?}: {SPEC_HELP}"
    )))
}

/// `OWNER/REPO[@REVISION]/PATH.gguf` → Hugging Face `resolve` URL.
fn hf_url(rest: &str) -> Result<String, PullError> {
    let bad = |why: &str| PullError::BadSpec(format!("bad spec \"hf:{rest}\": {why}; {SPEC_HELP}"));
    let segments: Vec<&str> = rest.split('/').collect();
    if segments.len() < 3 {
        return Err(bad("needs OWNER/REPO/FILE.gguf"));
    }
    let owner = segments[0];
    let (repo, revision) = match segments[1].split_once('@') {
        Some((repo, revision)) => (repo, revision),
        None => (segments[1], "main"),
    };
    let path = &segments[2..];
    for part in [owner, repo, revision].iter().chain(path.iter()) {
        if part.is_empty() || *part == "." || *part == ".." {
            return Err(bad("empty or relative path segment"));
        }
        if part.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(bad("whitespace in path"));
        }
    }
    let file = path.last().copied().unwrap_or_default();
    if !has_gguf_extension(file) {
        return Err(bad("the file must end in .gguf"));
    }
    let encoded: Vec<String> = path.iter().map(|p| percent_encode(p)).collect();
    Ok(format!(
        "{HF_BASE}/{}/{}/resolve/{}/{}",
        percent_encode(owner),
        percent_encode(repo),
        percent_encode(revision),
        encoded.join("/")
    ))
}

pub(super) fn has_gguf_extension(name: &str) -> bool {
    name.len() > ".gguf".len() && name.to_ascii_lowercase().ends_with(".gguf")
}

/// File name for a download: the explicit name if given (any extension: the caller knows
/// what it wants), else the URL's last path segment, which must end in `.gguf`.
pub(super) fn output_file_name(url: &str, explicit: Option<&str>) -> Result<String, PullError> {
    if let Some(name) = explicit {
        check_plain_name(name)?;
        return Ok(name.to_string());
    }
    let without_query = url.split(['?', '#']).next().unwrap_or(url);
    let after_scheme = without_query
        .split_once("://")
        .map_or(without_query, |(_, rest)| rest);
    // No path at all (`https://host`) means no file name.
    let last = match after_scheme.split_once('/') {
        Some((_, path)) => path.rsplit('/').next().unwrap_or(""),
        None => "",
    };
    let name = percent_decode(last);
    if !has_gguf_extension(&name) {
        return Err(PullError::BadSpec(format!(
            "cannot tell the model file name from {url} (last path segment must end in .gguf); \
             give an output name"
        )));
    }
    check_plain_name(&name)?;
    Ok(name)
}

/// The name is joined onto the models dir, so it must not be able to point anywhere else.
fn check_plain_name(name: &str) -> Result<(), PullError> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && !name.starts_with('.')
        && !name.contains(['/', '\\', '\0'])
        && !name.chars().any(char::is_control)
        && !name.ends_with(".partial");
    if ok {
        Ok(())
    } else {
        Err(PullError::BadSpec(format!(
            "invalid model file name {name:?}: must be a plain file name"
        )))
    }
}

/// Encode everything but RFC 3986 unreserved characters (file names may contain spaces,
/// `+` or non-ASCII).
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decode `%XX` escapes; malformed escapes are kept literally.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(spec: &str) -> String {
        match resolve_source(spec) {
            Ok(Source::Url(u)) => u,
            other => panic!("{spec}: {other:?}"),
        }
    }

    #[test]
    fn hf_specs_map_to_resolve_urls() {
        assert_eq!(
            url("hf:ggml-org/gemma-3-270m-GGUF/gemma-3-270m-Q8_0.gguf"),
            "https://huggingface.co/ggml-org/gemma-3-270m-GGUF/resolve/main/gemma-3-270m-Q8_0.gguf"
        );
        assert_eq!(
            url("hf:org/repo/sub/dir/model-Q4_K_M.gguf"),
            "https://huggingface.co/org/repo/resolve/main/sub/dir/model-Q4_K_M.gguf"
        );
        assert_eq!(
            url("hf:org/repo@v1.2/sub/m.gguf"),
            "https://huggingface.co/org/repo/resolve/v1.2/sub/m.gguf"
        );
        assert_eq!(
            url("hf://org/repo@0123abc/m.GGUF"),
            "https://huggingface.co/org/repo/resolve/0123abc/m.GGUF"
        );
        assert_eq!(
            url("hf:org/repo/my+model.gguf"),
            "https://huggingface.co/org/repo/resolve/main/my%2Bmodel.gguf"
        );
    }

    #[test]
    fn urls_and_default_pass_through() {
        assert_eq!(
            url("https://example.com/a/b.gguf?download=1"),
            "https://example.com/a/b.gguf?download=1"
        );
        assert_eq!(
            url("HTTP://example.com/x.gguf"),
            "HTTP://example.com/x.gguf"
        );
        assert_eq!(resolve_source("").ok(), Some(Source::Defaults));
        assert_eq!(resolve_source(" Default ").ok(), Some(Source::Defaults));
        assert_eq!(
            resolve_source("smollm2").ok(),
            Some(Source::Known(crate::pull::SMOLLM2))
        );
        assert_eq!(
            resolve_source("Gemma3").ok(),
            Some(Source::Known(crate::pull::GEMMA3))
        );
    }

    #[test]
    fn bad_specs_are_rejected() {
        for spec in [
            "hf:org/repo",
            "hf:org/repo/model.bin",
            "hf:org//model.gguf",
            "hf:org/repo@/model.gguf",
            "hf:org/repo/../model.gguf",
            "hf:org/repo/my model.gguf",
            "hf:/repo/model.gguf",
            "org/repo/model.gguf",
            "./model.gguf",
            "ftp://host/model.gguf",
            "https://example.com/a b.gguf",
        ] {
            let err = resolve_source(spec).expect_err(spec);
            assert!(matches!(err, PullError::BadSpec(_)), "{spec}: {err}");
            assert!(!err.to_string().contains('\n'));
        }
    }

    #[test]
    fn output_names() {
        let name = |u: &str, e: Option<&str>| output_file_name(u, e);
        assert_eq!(
            name("https://h/a/b/m.gguf?x=1#f", None).ok().as_deref(),
            Some("m.gguf")
        );
        assert_eq!(
            name("https://h/r/my%20m.gguf", None).ok().as_deref(),
            Some("my m.gguf")
        );
        assert_eq!(
            name("https://h/dl?id=3", Some("x.gguf")).ok().as_deref(),
            Some("x.gguf")
        );
        assert_eq!(
            name("https://h/file.bin", Some("x.bin")).ok().as_deref(),
            Some("x.bin")
        );
        assert!(name("https://h/file.bin", None).is_err());
        assert!(name("https://h", None).is_err());
        assert!(name("https://h/", None).is_err());
        assert!(name("https://h/.gguf", None).is_err());
        assert!(name("https://h/a%2F..%2Fb.gguf", None).is_err());
        assert!(name("https://h/m.gguf", Some("../m.gguf")).is_err());
        assert!(name("https://h/m.gguf", Some("m.gguf.partial")).is_err());
    }
}
