//! One log line per request at `-v`, when the request ends (for a stream, when its last
//! event is sent or the client goes away): method, path, status, duration, the session,
//! and the prompt's tokens (cached, prefilled) and the reply's.
//!
//! The counting middleware (`guard::count_request`) opens a [`RequestLog`] and runs the
//! handler inside [`RequestLog::scope`]; a generation started there finds it with
//! [`RequestLog::current`] and fills in its usage when it finishes, which may be long
//! after the handler returned (a stream).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::http::{Method, StatusCode};

use crate::service::protocol::Usage;

tokio::task_local! {
    static CURRENT: RequestLog;
}

/// What a request's log line says; cloned into the generation it starts.
#[derive(Clone)]
pub struct RequestLog {
    inner: Arc<Mutex<Entry>>,
}

struct Entry {
    method: Method,
    path: String,
    started: Instant,
    status: Option<StatusCode>,
    session: Option<String>,
    usage: Option<Tokens>,
}

/// The token counts of a finished generation.
#[derive(Debug, Clone, Copy)]
struct Tokens {
    prompt: usize,
    cached: usize,
    prefilled: usize,
    generated: usize,
}

impl RequestLog {
    pub fn new(method: Method, path: &str) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Entry {
                method,
                path: path.to_string(),
                started: Instant::now(),
                status: None,
                session: None,
                usage: None,
            })),
        }
    }

    /// Runs `handler` with this log as the current request's.
    pub async fn scope<F: std::future::Future>(&self, handler: F) -> F::Output {
        CURRENT.scope(self.clone(), handler).await
    }

    /// The log of the request being handled, if any (none outside the server).
    pub fn current() -> Option<Self> {
        CURRENT.try_with(Clone::clone).ok()
    }

    /// The generation finished with `usage`.
    pub fn finished(&self, usage: &Usage) {
        let mut entry = self.lock();
        entry.session = Some(usage.session.clone());
        entry.usage = Some(Tokens {
            prompt: usage.prompt_tokens,
            cached: usage.cached.total(),
            prefilled: usage.prefilled,
            generated: usage.generated,
        });
    }

    /// The response's status and session header are known.
    pub fn responded(&self, status: StatusCode, session: Option<&str>) {
        let mut entry = self.lock();
        entry.status = Some(status);
        if entry.session.is_none() {
            entry.session = session.map(str::to_string);
        }
    }

    /// Writes the line (at info, so `-v` shows it).
    pub fn write(&self) {
        let entry = self.lock();
        tracing::info!("{}", entry.line());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entry> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Entry {
    fn line(&self) -> String {
        let status = self
            .status
            .map_or("-".to_string(), |s| s.as_u16().to_string());
        let mut line = format!(
            "{} {} {status} {:.1} ms",
            self.method,
            self.path,
            self.started.elapsed().as_secs_f64() * 1e3
        );
        if let Some(session) = &self.session {
            line.push_str(&format!(" session={session}"));
        }
        if let Some(t) = self.usage {
            line.push_str(&format!(
                " prompt={} cached={} prefilled={} generated={}",
                t.prompt, t.cached, t.prefilled, t.generated
            ));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_the_request_its_session_and_its_tokens() {
        let log = RequestLog::new(Method::POST, "/v1/messages");
        log.responded(StatusCode::OK, Some("cc-1234"));
        log.lock().usage = Some(Tokens {
            prompt: 900,
            cached: 768,
            prefilled: 132,
            generated: 8,
        });
        let line = log.lock().line();
        assert!(line.starts_with("POST /v1/messages 200 "), "{line}");
        assert!(
            line.ends_with(" ms session=cc-1234 prompt=900 cached=768 prefilled=132 generated=8"),
            "{line}"
        );
        let bare = RequestLog::new(Method::GET, "/health").lock().line();
        assert!(bare.starts_with("GET /health - "), "{bare}");
    }
}
