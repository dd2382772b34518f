//! The server's edge against hostile or broken clients, over raw TCP where the request is not
//! well-formed HTTP: bodies that never finish, refusals hyper makes before the router, and
//! bodies too large for the context, refused from their size. Every answer is JSON in the
//! API's error shape.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::common::server::Server;
use crate::common::{tiny_model, Home};

/// What came back on a raw connection before the server closed it.
struct RawReply {
    status: u16,
    head: String,
    body: serde_json::Value,
}

/// Sends `request` on a fresh connection, then reads until the server closes it (a read
/// that waits `patience` for a byte fails the test: the server held the connection).
fn exchange(server: &Server, request: &[u8], patience: Duration) -> RawReply {
    let mut stream = connect(server);
    stream.write_all(request).unwrap();
    read_reply(&mut stream, patience)
}

fn connect(server: &Server) -> TcpStream {
    TcpStream::connect(server.url.trim_start_matches("http://")).unwrap()
}

fn read_reply(stream: &mut TcpStream, patience: Duration) -> RawReply {
    stream.set_read_timeout(Some(patience)).unwrap();
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            // A reset after the reply (the server closed with our bytes unread) ends it too.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset && !bytes.is_empty() => break,
            Err(e) => panic!(
                "the server held the connection ({e}); read so far: {:?}",
                String::from_utf8_lossy(&bytes)
            ),
        }
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {text:?}"));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status: {head:?}"));
    let body = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("the body is not JSON ({e}): {head}\r\n\r\n{body:?}"));
    RawReply {
        status,
        head: head.to_ascii_lowercase(),
        body,
    }
}

/// `reply` is an OpenAI-shaped error whose message mentions `needle`.
fn assert_openai_error(reply: &RawReply, status: u16, needle: &str) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert!(
        reply.head.contains("content-type: application/json"),
        "{}",
        reply.head
    );
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{needle:?} not in {}", reply.body);
    assert_eq!(reply.body["error"]["type"], "invalid_request_error");
}

/// `reply` is an Anthropic-shaped error whose message mentions `needle`.
fn assert_anthropic_error(reply: &RawReply, status: u16, kind: &str, needle: &str) {
    assert_eq!(reply.status, status, "{}", reply.body);
    assert_eq!(reply.body["type"], "error", "{}", reply.body);
    assert_eq!(reply.body["error"]["type"], kind, "{}", reply.body);
    let message = reply.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(needle), "{needle:?} not in {}", reply.body);
}

fn post_head(path: &str, content_length: usize) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: kvrun\r\nContent-Type: application/json\r\n\
         Content-Length: {content_length}\r\n\r\n"
    )
    .into_bytes()
}

/// A body trickled a byte at a time, or shorter than its `Content-Length`, is cut off at
/// `--body-timeout` with a 408 in the API's shape, and the connection closed; one that ends
/// early (the client closed its side) is a 400. The server answers others meanwhile.
#[test]
fn slow_and_short_bodies_are_refused_at_the_body_timeout() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &["--body-timeout", "2s"]);
    let patience = Duration::from_secs(30);

    // One byte every half second: never idle long, never done.
    let mut trickle = connect(&server);
    trickle
        .write_all(&post_head("/v1/chat/completions", 100))
        .unwrap();
    let mut writer = trickle.try_clone().unwrap();
    let dripping = std::thread::spawn(move || {
        for _ in 0..60 {
            if writer.write_all(b" ").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    });
    assert_eq!(server.get("/health", &[]).status, 200);
    let reply = read_reply(&mut trickle, patience);
    assert_openai_error(&reply, 408, "--body-timeout");
    dripping.join().unwrap();

    // Ten bytes of a promised hundred, then silence: OpenAI's and Anthropic's shapes.
    let mut short = post_head("/v1/chat/completions", 100);
    short.extend_from_slice(b"{\"model\":");
    assert_openai_error(&exchange(&server, &short, patience), 408, "--body-timeout");
    let mut short = post_head("/v1/messages", 100);
    short.extend_from_slice(b"{\"model\":");
    let reply = exchange(&server, &short, patience);
    assert_anthropic_error(&reply, 408, "timeout_error", "--body-timeout");

    // The client gives up halfway: the body ends before its length.
    let mut stream = connect(&server);
    stream
        .write_all(&post_head("/v1/chat/completions", 100))
        .unwrap();
    stream.write_all(b"{\"model\":").unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
    let reply = read_reply(&mut stream, patience);
    assert_openai_error(&reply, 400, "body");
    assert_eq!(server.get("/health", &[]).status, 200);
}

/// Requests hyper refuses before the router (the probe's ten) are answered with a JSON body
/// in the shape of the path they asked for, and the server goes on.
#[test]
fn protocol_refusals_are_json_in_the_apis_shape() {
    let home = Home::new();
    let server = Server::start(&home, &tiny_model(), &[]);
    let huge_header = format!("X-Big: {}\r\n", "a".repeat(1 << 20));
    let many_headers: String = (0..10_000).map(|i| format!("X-H{i}: 1\r\n")).collect();
    let long_query = "q".repeat(100 * 1024);
    // (what, status, request line's target suffix, header lines, HTTP/0.9).
    let cases: [(&str, u16, &str, Vec<u8>, bool); 10] = [
        ("a 1 MB header", 431, "", huge_header.into_bytes(), false),
        ("10,000 headers", 431, "", many_headers.into_bytes(), false),
        (
            "a non-ASCII header name",
            400,
            "",
            "Hé: 1\r\n".as_bytes().to_vec(),
            false,
        ),
        (
            "a header line without a colon",
            400,
            "",
            b"NoColon\r\n".to_vec(),
            false,
        ),
        (
            "a NUL in a header value",
            400,
            "",
            b"X-A: a\0b\r\n".to_vec(),
            false,
        ),
        (
            "a control byte in x-session-id",
            400,
            "",
            b"x-session-id: a\x01b\r\n".to_vec(),
            false,
        ),
        (
            "Content-Length: -1",
            400,
            "",
            b"Content-Length: -1\r\n".to_vec(),
            false,
        ),
        (
            "Content-Length: 1e20",
            400,
            "",
            b"Content-Length: 1e20\r\n".to_vec(),
            false,
        ),
        ("HTTP/0.9", 400, "", Vec::new(), true),
        (
            "a 100 KB URL",
            414,
            &format!("?{long_query}"),
            Vec::new(),
            false,
        ),
    ];
    for (what, status, suffix, headers, http09) in &cases {
        for path in ["/v1/chat/completions", "/v1/messages"] {
            let mut request = if *http09 {
                format!("GET {path}\r\n").into_bytes()
            } else {
                format!("POST {path}{suffix} HTTP/1.1\r\nHost: kvrun\r\n").into_bytes()
            };
            request.extend_from_slice(headers);
            request.extend_from_slice(b"\r\n");
            // The server may stop reading a huge head: write from a thread, whatever it takes.
            let mut stream = connect(&server);
            let mut writer = stream.try_clone().unwrap();
            let sending = std::thread::spawn(move || {
                let _ = writer.write_all(&request);
            });
            let reply = read_reply(&mut stream, Duration::from_secs(30));
            let _ = stream.shutdown(std::net::Shutdown::Both);
            sending.join().unwrap();
            let context = format!("{what} on {path}");
            assert_eq!(reply.status, *status, "{context}: {}", reply.body);
            assert!(
                reply.head.contains("content-type: application/json"),
                "{context}: {}",
                reply.head
            );
            if path == "/v1/messages" {
                assert_eq!(reply.body["type"], "error", "{context}: {}", reply.body);
                assert_eq!(
                    reply.body["error"]["type"], "invalid_request_error",
                    "{context}: {}",
                    reply.body
                );
            } else {
                assert_eq!(
                    reply.body["error"]["type"], "invalid_request_error",
                    "{context}: {}",
                    reply.body
                );
            }
            assert!(
                reply.body.to_string().contains("request"),
                "{context}: {}",
                reply.body
            );
        }
    }
    assert_eq!(server.get("/health", &[]).status, 200);
}
