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

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tower_service::Service;

use super::metrics::Refusal;
use super::state::ServerState;
use super::{filters, guard};
use crate::admission::{Admission, Caps, LogLimit, accept_admitted_by};

/// Time a client has to send a request's head, from the moment the server waits for one (also
/// between requests on a kept-alive connection).
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// HTTP connections held at once, from all sources and from one (a browser opens a handful).
const HTTP_CAPS: Caps = Caps {
    total: 512,
    per_source: 64,
};

static DROPPED: LogLimit = LogLimit::new("HTTP connections refused", Duration::from_secs(10));

/// The address a request came from, as a request extension (warp's own is private to its
/// server).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddr(pub SocketAddr);

/// Serves the control port until `state.shutdown`; then lets requests in flight finish.
pub(crate) async fn serve(listener: TcpListener, state: Arc<ServerState>) {
    let routes = filters::routes(state.clone());
    let admission = Admission::new(HTTP_CAPS);
    let admit = |from: SocketAddr| {
        admission
            .admit(from.ip())
            .inspect_err(|_| state.metrics.refused(Refusal::Admission))
    };
    while let Some((stream, from, place)) =
        accept_admitted_by(&listener, admit, &DROPPED, &state.shutdown).await
    {
        state.metrics.http_connection();
        let _ = stream.set_nodelay(true);
        let filtered = warp::service(routes.clone());
        // Busy while a request is served; idle (the first kind shed when every place is
        // taken) while the connection waits for a request's head.
        let place = Arc::new(place);
        let serving = place.clone();
        let service = hyper::service::service_fn(move |mut req| {
            let mut filtered = filtered.clone();
            let serving = serving.clone();
            req.extensions_mut().insert(ClientAddr(from));
            let path = req.uri().path().to_string();
            async move {
                let _busy = serving.busy();
                let mut response = filtered.call(req).await?;
                guard::security_headers(&path, response.headers_mut());
                Ok::<_, Infallible>(response)
            }
        });
        // HTTP/1.1 only, with hyper's own builder: the auto (HTTP/2-capable) one would link h2,
        // 250 KB of a router build for a protocol no browser uses over plain HTTP.
        let mut builder = http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(HEADER_READ_TIMEOUT);
        let shutdown = state.shutdown.clone();
        state.tasks.spawn(crate::util::boxed(async move {
            let connection = builder
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            let mut connection = std::pin::pin!(connection);
            // At shutdown a connection finishes the request in flight, then closes (the
            // server's drain waits for this task); an evicted one closes at once.
            let mut closing = false;
            loop {
                tokio::select! {
                    _ = connection.as_mut() => break,
                    () = shutdown.cancelled(), if !closing => {
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    () = place.evicted().cancelled() => {
                        DROPPED.warn(from, "shed for another source's connection");
                        break;
                    }
                }
            }
        }));
    }
    drop(listener);
}
