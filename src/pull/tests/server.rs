//! A minimal HTTP/1.1 server on 127.0.0.1 for offline tests. Hand-written on std's
//! TcpListener (rather than tiny_http) because the tests need to drop a connection in the
//! middle of a body, which tiny_http's keep-alive handling cannot express.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// One request as the handler sees it.
pub struct Req {
    pub path: String,
    pub range: Option<String>,
    /// 1 for the first request to this path, 2 for the second, ...
    pub nth: usize,
    /// `http://127.0.0.1:PORT`, for documents that link back to the server.
    pub base: String,
}

pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Close the connection after this many body bytes, although Content-Length promised all.
    pub cut_after: Option<usize>,
}

impl Reply {
    pub fn ok(body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            headers: Vec::new(),
            body,
            cut_after: None,
        }
    }

    pub fn status(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: format!("status {status}").into_bytes(),
            cut_after: None,
        }
    }

    /// Serve `data`, honouring `Range: bytes=N-` the way real servers do.
    pub fn ranged(data: &[u8], req: &Req) -> Reply {
        let from = req
            .range
            .as_deref()
            .and_then(|r| r.strip_prefix("bytes="))
            .and_then(|r| r.strip_suffix('-'))
            .and_then(|n| n.parse::<usize>().ok());
        match from {
            None => Reply::ok(data.to_vec()),
            Some(n) if n >= data.len() => Reply {
                headers: vec![("Content-Range".into(), format!("bytes */{}", data.len()))],
                ..Reply::status(416)
            },
            Some(n) => Reply {
                status: 206,
                headers: vec![(
                    "Content-Range".into(),
                    format!("bytes {n}-{}/{}", data.len() - 1, data.len()),
                )],
                body: data[n..].to_vec(),
                cut_after: None,
            },
        }
    }
}

type Handler = dyn Fn(&Req) -> Reply + Send + Sync;
/// (path, Range header) of each request, in arrival order.
type Log = Mutex<Vec<(String, Option<String>)>>;

pub struct TestServer {
    addr: SocketAddr,
    log: Arc<Log>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(handler: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind test server");
        let addr = listener.local_addr().expect("test server address");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Box<Handler> = Box::new(handler);
        let thread = {
            let (log, stop) = (Arc::clone(&log), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut counts: HashMap<String, usize> = HashMap::new();
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        // One request per connection (we always answer Connection: close),
                        // handled inline: the client under test is sequential.
                        let _ = serve(stream, addr, &*handler, &log, &mut counts);
                    }
                }
            })
        };
        TestServer {
            addr,
            log,
            stop,
            thread: Some(thread),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// (path, Range header) of every request so far.
    pub fn requests(&self) -> Vec<(String, Option<String>)> {
        self.log.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the thread sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn serve(
    stream: TcpStream,
    addr: SocketAddr,
    handler: &Handler,
    log: &Log,
    counts: &mut HashMap<String, usize>,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
    let mut range = None;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            if name.trim().eq_ignore_ascii_case("range") {
                range = Some(value.trim().to_string());
            }
        }
    }
    if let Ok(mut log) = log.lock() {
        log.push((path.clone(), range.clone()));
    }
    let nth = counts.entry(path.clone()).or_default();
    *nth += 1;
    let req = Req {
        path,
        range,
        nth: *nth,
        base: format!("http://{addr}"),
    };
    let reply = handler(&req);
    let mut out = stream;
    let mut head = format!(
        "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    out.write_all(head.as_bytes())?;
    let body_len = reply
        .cut_after
        .unwrap_or(reply.body.len())
        .min(reply.body.len());
    out.write_all(&reply.body[..body_len])?;
    out.flush()?;
    out.shutdown(Shutdown::Both)
}
