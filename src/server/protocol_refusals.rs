//! hyper's own refusals, in the API's error shape. hyper answers a request it cannot parse
//! (a header too large or too many, a bad header name, line or value, a bad
//! `Content-Length`, an HTTP/0.9 request line, a URL too long) before the router sees it:
//! it writes a 400, 414 or 431 head with an empty body and closes the connection, and it
//! offers no hook to change that response. Every answer kvrun gives is JSON, so the
//! connection's IO is wrapped: a head hyper writes while no request is in the service's
//! hands, with one of those statuses and `content-length: 0`, is replaced by the same head
//! carrying a JSON body in the shape of the path the connection asked for.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::errors::{ApiError, Shape};

/// Bytes of a connection's first request kept to find its path: a request line longer
/// than this is answered in OpenAI's shape.
const SNIFFED_BYTES: usize = 512;

/// What a connection's service and its IO share.
#[derive(Debug, Default)]
pub struct Exchange {
    /// Requests the service took whose response head is not written yet.
    awaiting_head: AtomicUsize,
    /// The shape of the path last asked for: the first request's from its bytes, later
    /// ones' from the request the service took.
    shape: Mutex<Option<Shape>>,
}

impl Exchange {
    /// The service took a request for `path`.
    pub fn took(&self, path: &str) {
        self.awaiting_head.fetch_add(1, Ordering::SeqCst);
        *self.shape.lock().expect("never poisoned") = Some(Shape::for_path(path));
    }

    fn shape(&self) -> Option<Shape> {
        *self.shape.lock().expect("never poisoned")
    }
}

/// A connection's IO that gives hyper's refusals a JSON body.
pub struct RefusalIo<S> {
    inner: S,
    exchange: Arc<Exchange>,
    /// The start of the connection's bytes, until the service takes a request.
    sniffed: Vec<u8>,
    /// A replacement response still to be written before anything else.
    unsent: Vec<u8>,
}

impl<S> RefusalIo<S> {
    pub fn new(inner: S, exchange: Arc<Exchange>) -> Self {
        Self {
            inner,
            exchange,
            sniffed: Vec::new(),
            unsent: Vec::new(),
        }
    }

    /// The shape of the request the refusal answers.
    fn shape(&self) -> Shape {
        self.exchange
            .shape()
            .or_else(|| sniffed_path(&self.sniffed).map(Shape::for_path))
            .unwrap_or_default()
    }

    /// The JSON response that replaces `written` when it is one of hyper's refusals.
    fn replacement(&self, written: &[u8]) -> Option<Vec<u8>> {
        if self.exchange.awaiting_head.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let head = std::str::from_utf8(written.strip_suffix(b"\r\n\r\n")?).ok()?;
        let mut lines = head.split("\r\n");
        let status_line = lines.next()?;
        let status = status_line
            .strip_prefix("HTTP/1.1 ")?
            .get(..3)?
            .parse::<u16>()
            .ok()?;
        let message = match status {
            400 => {
                "the request is not valid HTTP/1.1 (its request line, a header's name or value, \
                 or its Content-Length is malformed)"
            }
            414 => "the request's URL is too long",
            431 => "the request's headers are too large or too many",
            _ => return None,
        };
        let rest: Vec<&str> = lines.collect();
        if !rest
            .iter()
            .any(|l| l.eq_ignore_ascii_case("content-length: 0"))
        {
            return None;
        }
        let status = StatusCode::from_u16(status).ok()?;
        let body = ApiError::new(status, message)
            .shaped(self.shape())
            .body()
            .to_string();
        let mut out = format!(
            "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n",
            body.len()
        );
        for line in rest {
            let name = line.split(':').next().unwrap_or_default();
            if !["content-length", "connection"]
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n))
            {
                out.push_str(line);
                out.push_str("\r\n");
            }
        }
        out.push_str("\r\n");
        out.push_str(&body);
        Some(out.into_bytes())
    }

    /// Notes a write that starts a response head: it answers a request the service took.
    fn note_head(&self, written: &[u8]) {
        let informational = written.starts_with(b"HTTP/1.1 1");
        if written.starts_with(b"HTTP/1.1 ") && !informational {
            let _ =
                self.exchange
                    .awaiting_head
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        }
    }
}

impl<S: AsyncWrite + Unpin> RefusalIo<S> {
    /// Writes what is left of a replacement; ready once it is all out.
    fn poll_unsent(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.unsent.is_empty() {
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &self.unsent))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.unsent.drain(..n);
        }
        Poll::Ready(Ok(()))
    }
}

/// The request target of `bytes`' request line, once the line has its target.
fn sniffed_path(bytes: &[u8]) -> Option<&str> {
    let line = bytes.split(|&b| b == b'\n').next()?;
    let target = line.split(|&b| b == b' ').nth(1)?;
    std::str::from_utf8(target).ok()
}

impl<S: AsyncRead + Unpin> AsyncRead for RefusalIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let this = &mut *self;
        if this.exchange.shape().is_none() && this.sniffed.len() < SNIFFED_BYTES {
            let new = &buf.filled()[before..];
            let room = SNIFFED_BYTES - this.sniffed.len();
            this.sniffed.extend_from_slice(&new[..new.len().min(room)]);
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for RefusalIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.poll_unsent(cx))?;
        if let Some(replacement) = self.replacement(buf) {
            // hyper's bytes count as written; the replacement goes out in their place.
            self.unsent = replacement;
            let _ = self.poll_unsent(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        self.note_head(buf);
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        std::task::ready!(self.poll_unsent(cx))?;
        let first = bufs
            .iter()
            .find(|b| !b.is_empty())
            .map_or(&[][..], |b| &b[..]);
        if first.starts_with(b"HTTP/1.1 4") {
            // A refusal is a head alone, written whole: look at all of it.
            let whole: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            if let Some(replacement) = self.replacement(&whole) {
                self.unsent = replacement;
                let _ = self.poll_unsent(cx)?;
                return Poll::Ready(Ok(whole.len()));
            }
        }
        self.note_head(first);
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_unsent(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        std::task::ready!(self.poll_unsent(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io() -> RefusalIo<()> {
        RefusalIo::new((), Arc::new(Exchange::default()))
    }

    #[test]
    fn hypers_empty_refusals_get_a_json_body_in_the_paths_shape() {
        let mut io = io();
        io.sniffed = b"POST /v1/messages HTTP/1.1\r\nX-Bad\r\n".to_vec();
        let head = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(io.replacement(head).unwrap()).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        assert!(head.contains("date: x"), "{head}");
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["type"], "error", "{body}");
        // Elsewhere, OpenAI's shape.
        io.sniffed = b"GET /health HTTP/1.1\r\n".to_vec();
        let out = io.replacement(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\n\r\n",
        );
        let out = String::from_utf8(out.unwrap()).unwrap();
        assert!(out.contains("\"invalid_request_error\""), "{out}");
    }

    #[test]
    fn the_services_own_responses_pass_untouched() {
        let io = io();
        let empty = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
        io.exchange.took("/v1/chat/completions");
        // A response to a request the service took is the service's.
        assert!(io.replacement(empty).is_none());
        io.note_head(empty);
        assert!(io.replacement(empty).is_some());
        // Not a refusal: a body, another status, a head with a body.
        assert!(io.replacement(b"{\"error\": 1}").is_none());
        assert!(io
            .replacement(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .is_none());
        assert!(io
            .replacement(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}")
            .is_none());
    }
}
