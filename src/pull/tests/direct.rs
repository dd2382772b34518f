//! `pull_url` against the local server: plain, resumed, restarted and rejected downloads.

use std::sync::Arc;

use super::server::{Reply, Req, TestServer};
use super::{fake_bytes, mode_of, sha_hex, Recorder};
use crate::pull::{pull_url, NoopReporter, PullError};

/// A fake GGUF: the magic followed by noise.
fn gguf(len: usize) -> Vec<u8> {
    let mut data = b"GGUF".to_vec();
    data.extend(fake_bytes(len - 4, 3));
    data
}

#[derive(Clone, Copy, Default)]
struct Behaviour {
    ranges: bool,
    cut_first: bool,
}

/// Serves `data` at `/m/model.gguf` (and `/dl?id=1`), everything else 404.
fn start(data: &Arc<Vec<u8>>, behaviour: Behaviour) -> TestServer {
    let data = Arc::clone(data);
    TestServer::start(move |req: &Req| {
        if req.path != "/m/model.gguf" && req.path != "/dl?id=1" {
            return Reply::status(404);
        }
        let mut reply = if behaviour.ranges {
            Reply::ranged(&data, req)
        } else {
            Reply::ok(data.to_vec())
        };
        if behaviour.cut_first && req.nth == 1 {
            reply.cut_after = Some(data.len() / 3);
        }
        reply
    })
}

#[test]
fn downloads_verifies_and_then_is_a_no_op() {
    let data = Arc::new(gguf(200_000));
    let server = start(&data, Behaviour::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server.url("/m/model.gguf");
    let sha = sha_hex(&data);
    let recorder = Recorder::default();

    let outcome = pull_url(&url, dir.path(), None, Some(&sha), &recorder).expect("pull");
    assert!(!outcome.already_present);
    assert_eq!(outcome.path, dir.path().join("model.gguf"));
    assert_eq!(mode_of(&outcome.path), 0o600);
    assert_eq!(outcome.bytes, data.len() as u64);
    assert!(std::fs::read(&outcome.path).expect("read") == *data);
    assert!(!dir.path().join("model.gguf.partial").exists());
    assert_eq!(recorder.advanced(), data.len() as u64);

    let again = pull_url(
        &url,
        dir.path(),
        None,
        Some(&sha.to_uppercase()),
        &NoopReporter,
    )
    .expect("again");
    assert!(again.already_present);
    // Without a checksum an existing file is trusted as well.
    let again = pull_url(&url, dir.path(), None, None, &NoopReporter).expect("again");
    assert!(again.already_present);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn pull_creates_a_private_home_and_models_folder() {
    let data = Arc::new(gguf(70_000));
    let server = start(&data, Behaviour::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let home = dir.path().join("home");
    let models = home.join("models");
    let url = server.url("/m/model.gguf");
    let outcome = pull_url(&url, &models, None, None, &NoopReporter).expect("pull");
    assert_eq!(mode_of(&home), 0o700);
    assert_eq!(mode_of(&models), 0o700);
    assert_eq!(mode_of(&outcome.path), 0o600);
}

#[test]
fn resumes_with_range_after_a_cut() {
    let data = Arc::new(gguf(250_000));
    let behaviour = Behaviour {
        ranges: true,
        cut_first: true,
    };
    let server = start(&data, behaviour);
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server.url("/m/model.gguf");
    let sha = sha_hex(&data);

    let err = pull_url(&url, dir.path(), None, Some(&sha), &NoopReporter).expect_err("cut");
    assert!(
        matches!(err, PullError::Network { ref host, .. } if host.starts_with("127.0.0.1:")),
        "{err}"
    );
    let third = data.len() / 3;
    let partial = dir.path().join("model.gguf.partial");
    assert_eq!(
        std::fs::metadata(&partial).expect("partial").len(),
        third as u64
    );
    assert!(!dir.path().join("model.gguf").exists());

    let recorder = Recorder::default();
    let outcome = pull_url(&url, dir.path(), None, Some(&sha), &recorder).expect("resume");
    assert!(std::fs::read(&outcome.path).expect("read") == *data);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].1.as_deref(),
        Some(format!("bytes={third}-").as_str())
    );
    // Progress counts the resumed prefix once, so bars end at 100%.
    assert_eq!(recorder.advanced(), data.len() as u64);
    assert!(!partial.exists());
}

#[test]
fn restarts_when_server_ignores_range() {
    let data = Arc::new(gguf(150_000));
    let behaviour = Behaviour {
        ranges: false,
        cut_first: true,
    };
    let server = start(&data, behaviour);
    let dir = tempfile::tempdir().expect("tempdir");
    let url = server.url("/m/model.gguf");
    let sha = sha_hex(&data);

    pull_url(&url, dir.path(), None, Some(&sha), &NoopReporter).expect_err("cut");
    let recorder = Recorder::default();
    let outcome = pull_url(&url, dir.path(), None, Some(&sha), &recorder).expect("restart");
    assert!(std::fs::read(&outcome.path).expect("read") == *data);
    assert!(server.requests()[1].1.is_some(), "a Range was asked for");
    assert!(recorder.events().iter().any(|e| e.contains("restarting")));
}

#[test]
fn complete_partial_is_finished_via_416() {
    let data = Arc::new(gguf(100_000));
    let behaviour = Behaviour {
        ranges: true,
        cut_first: false,
    };
    let server = start(&data, behaviour);
    let dir = tempfile::tempdir().expect("tempdir");
    // As if a previous run died between the last byte and the rename.
    std::fs::write(dir.path().join("model.gguf.partial"), &*data).expect("write partial");
    let outcome = pull_url(
        &server.url("/m/model.gguf"),
        dir.path(),
        None,
        Some(&sha_hex(&data)),
        &NoopReporter,
    )
    .expect("pull");
    assert!(!outcome.already_present);
    assert!(std::fs::read(&outcome.path).expect("read") == *data);
}

#[test]
fn checksum_mismatch_installs_nothing() {
    let data = Arc::new(gguf(50_000));
    let server = start(&data, Behaviour::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let wrong = "ab".repeat(32);
    let err = pull_url(
        &server.url("/m/model.gguf"),
        dir.path(),
        None,
        Some(&wrong),
        &NoopReporter,
    )
    .expect_err("mismatch");
    assert!(matches!(err, PullError::ChecksumMismatch { .. }), "{err}");
    assert!(err.to_string().contains(&sha_hex(&data)));
    assert!(!dir.path().join("model.gguf").exists());
    assert!(!dir.path().join("model.gguf.partial").exists());
}

#[test]
fn explicit_name_and_errors() {
    let data = Arc::new(gguf(10_000));
    let server = start(&data, Behaviour::default());
    let dir = tempfile::tempdir().expect("tempdir");

    // No .gguf in the URL: needs an explicit name.
    let url = server.url("/dl?id=1");
    let err = pull_url(&url, dir.path(), None, None, &NoopReporter).expect_err("no name");
    assert!(matches!(err, PullError::BadSpec(_)), "{err}");
    let outcome =
        pull_url(&url, dir.path(), Some("named.gguf"), None, &NoopReporter).expect("named");
    assert_eq!(outcome.path, dir.path().join("named.gguf"));

    let missing = server.url("/missing.gguf");
    let err = pull_url(&missing, dir.path(), None, None, &NoopReporter).expect_err("404");
    assert_eq!(err.to_string(), format!("HTTP 404 from {missing}"));
    // A 404 never creates a partial file.
    assert!(!dir.path().join("missing.gguf.partial").exists());

    let err = pull_url(&url, dir.path(), Some("x.gguf"), Some("xyz"), &NoopReporter)
        .expect_err("bad sha");
    assert!(matches!(err, PullError::BadSpec(_)), "{err}");
}

#[test]
fn non_gguf_body_is_rejected() {
    let server = TestServer::start(|_req: &Req| Reply::ok(b"<html>please log in</html>".to_vec()));
    let dir = tempfile::tempdir().expect("tempdir");
    let err = pull_url(
        &server.url("/a/m.gguf"),
        dir.path(),
        None,
        None,
        &NoopReporter,
    )
    .expect_err("html");
    assert!(matches!(err, PullError::NotGguf { .. }), "{err}");
    assert!(!dir.path().join("m.gguf").exists());
    assert!(!dir.path().join("m.gguf.partial").exists());
}

#[test]
fn connection_refused_names_the_host() {
    // Bind then drop a listener to get a port where nothing listens.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("http://127.0.0.1:{port}/m.gguf");
    let err = pull_url(&url, dir.path(), None, None, &NoopReporter).expect_err("refused");
    let msg = err.to_string();
    assert!(matches!(err, PullError::Network { .. }), "{msg}");
    assert!(
        msg.contains(&format!("127.0.0.1:{port}")) && !msg.contains('\n'),
        "{msg}"
    );
}
