//! The control port's connections: accepted within per-source caps (a flood from one address is
//! shed for another's, see [`crate::admission`]), given [`HEADER_READ_TIMEOUT`] for each
//! request's head (a client that trickles a byte every few seconds, or sends nothing, is cut
//! off), and served by warp's routes through hyper, with the client's address in each request
//! and the security headers on each response. A WebSocket leaves this accounting once upgraded:
//! `/ws` has caps of its own.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tower_service::Service;

use super::state::ServerState;
use super::{filters, guard};
use crate::admission::{Admission, Caps, LogLimit, accept_admitted};

/// Time a client has to send a request's head, from the moment the server waits for one (also
/// between requests on a kept-alive connection).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// HTTP connections held at once, from all sources and from one (a browser opens a handful).
const HTTP_CAPS: Caps = Caps {
    total: 512,
    per_source: 64,
};

static DROPPED: LogLimit = LogLimit::new("HTTP connections refused", Duration::from_secs(10));

/// The address a request came from, as a request extension (warp's own is private to its
/// server).
#[derive(Debug, Clone, Copy)]
pub struct ClientAddr(pub SocketAddr);

/// Serves the control port until `state.shutdown`; then lets requests in flight finish.
pub async fn serve(listener: TcpListener, state: Arc<ServerState>) {
    let routes = filters::routes(state.clone());
    let admission = Admission::new(HTTP_CAPS);
    let graceful = GracefulShutdown::new();
    while let Some((stream, from, place)) =
        accept_admitted(&listener, &admission, &DROPPED, &state.shutdown).await
    {
        let _ = stream.set_nodelay(true);
        let filtered = warp::service(routes.clone());
        let service = hyper::service::service_fn(move |mut req| {
            let mut filtered = filtered.clone();
            req.extensions_mut().insert(ClientAddr(from));
            let path = req.uri().path().to_string();
            async move {
                let mut response = filtered.call(req).await?;
                guard::security_headers(&path, response.headers_mut());
                Ok::<_, Infallible>(response)
            }
        });
        let mut builder = auto::Builder::new(TokioExecutor::new()).http1_only();
        builder
            .http1()
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT);
        let watcher = graceful.watcher();
        state.tasks.spawn(async move {
            let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
            let connection = watcher.watch(connection.into_owned());
            tokio::select! {
                _ = connection => {}
                _ = place.evicted().cancelled() => DROPPED.warn(from, "shed for another source's connection"),
            }
        });
    }
    drop(listener);
    graceful.shutdown().await;
}
