//! Accepting connections: hyper's HTTP/1 server with the limits `axum::serve` leaves unset.
//! A client gets `header_timeout` to send a request's headers, which also closes an idle
//! keep-alive connection (hyper starts the same clock while it waits for the next request),
//! and at most `max_connections` are open at once, below the process's file-descriptor
//! limit, so slow or idle clients can neither hold the server nor starve its own files.
//! Requests hyper refuses itself get a JSON body ([`super::protocol_refusals`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use super::protocol_refusals::{Exchange, RefusalIo};

/// Descriptors kept for the store, the sessions and the model when capping connections.
const RESERVED_FDS: u64 = 256;
/// The most connections at once, whatever the descriptor limit.
const MAX_CONNECTIONS: usize = 1024;

/// How the listener bounds its clients.
#[derive(Debug, Clone, Copy)]
pub struct ConnectionLimits {
    /// Time to send a request's headers, and the longest a keep-alive connection idles.
    pub header_timeout: Duration,
    pub max_connections: usize,
}

impl ConnectionLimits {
    /// `header_timeout`, and as many connections as the descriptor limit leaves room for.
    pub fn new(header_timeout: Duration) -> Self {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
            .current
            .unwrap_or(u64::MAX);
        let room = limit.saturating_sub(RESERVED_FDS).max(16);
        Self {
            header_timeout,
            max_connections: (room.min(MAX_CONNECTIONS as u64)) as usize,
        }
    }
}

/// Serves `app` on `listener` until `stop` resolves, then lets the connections in flight
/// finish their responses (each closes after its current one).
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    stop: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .keep_alive(true);
    tokio::pin!(stop);
    loop {
        // At the cap, new connections wait in the kernel's backlog until one closes.
        let permit = tokio::select! {
            permit = slots.clone().acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut stop => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, or a connection reset before it was accepted:
                    // the listener goes on after a breath.
                    tracing::warn!("accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        let _ = stream.set_nodelay(true);
        let exchange = Arc::new(Exchange::default());
        let service = Noted {
            inner: TowerToHyperService::new(app.clone()),
            exchange: exchange.clone(),
        };
        let io = TokioIo::new(RefusalIo::new(stream, exchange));
        let connection = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("connection closed: {e}");
            }
            drop(permit);
        });
    }
    drop(listener);
    graceful.shutdown().await;
}

/// The router, telling the connection's IO which requests it took.
struct Noted {
    inner: TowerToHyperService<axum::Router>,
    exchange: Arc<Exchange>,
}

impl hyper::service::Service<hyper::Request<Incoming>> for Noted {
    type Response = <TowerToHyperService<axum::Router> as hyper::service::Service<
        hyper::Request<Incoming>,
    >>::Response;
    type Error = <TowerToHyperService<axum::Router> as hyper::service::Service<
        hyper::Request<Incoming>,
    >>::Error;
    type Future = <TowerToHyperService<axum::Router> as hyper::service::Service<
        hyper::Request<Incoming>,
    >>::Future;

    fn call(&self, request: hyper::Request<Incoming>) -> Self::Future {
        self.exchange.took(request.uri().path());
        self.inner.call(request)
    }
}
