//! The serving peer: one control port for HTTP and `/ws` (warp), one data port for TCP and UDP
//! data streams. Shutdown is one cancellation token: warp drains, listeners stop, tests abort.

pub(crate) mod assets;
pub(crate) mod data_listener;
pub(crate) mod dccp_listener;
pub(crate) mod far_end;
pub(crate) mod far_groups;
pub(crate) mod filters;
pub(crate) mod guard;
pub(crate) mod handlers;
pub(crate) mod http;
pub(crate) mod last_tests;
pub(crate) mod metrics;
#[cfg(feature = "plans")]
pub(crate) mod plan_runs;
pub(crate) mod results;
pub(crate) mod run_log;
pub(crate) mod runner;
pub(crate) mod runs;
pub(crate) mod state;
pub(crate) mod token;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Socket, Type};
use tokio::net::{TcpListener, UdpSocket};

use self::state::ServerState;

/// Listeners bound before the peer announces itself, so a port in use is a clear start-up error.
pub struct Bound {
    control: TcpListener,
    data_tcp: TcpListener,
    data_udp: UdpSocket,
}

impl Bound {
    /// Address of the control port.
    pub fn control_addr(&self) -> io::Result<SocketAddr> {
        self.control.local_addr()
    }
    /// Address of the data port.
    pub fn data_addr(&self) -> io::Result<SocketAddr> {
        self.data_tcp.local_addr()
    }
}

/// Binds the control port at `listen` and the data port at `data_port` on the same address
/// (port 0 picks free ports, for tests).
pub fn bind(listen: SocketAddr, data_port: u16) -> io::Result<Bound> {
    let control = bind_control(listen)
        .map_err(|e| io::Error::new(e.kind(), format!("control port {listen}: {e}")))?;
    let data_addr = SocketAddr::new(listen.ip(), data_port);
    let (data_tcp, data_udp) = data_listener::bind(data_addr)
        .map_err(|e| io::Error::new(e.kind(), format!("data port {data_addr}: {e}")))?;
    Ok(Bound {
        control,
        data_tcp,
        data_udp,
    })
}

fn bind_control(addr: SocketAddr) -> io::Result<TcpListener> {
    TcpListener::from_std(tcp_listener(addr, 256)?)
}

/// A listening TCP socket for a control port, non-blocking and ready for the runtime (binding
/// needs none, so a server can bind before it goes into the background); `[::]` takes IPv4
/// clients too.
pub(crate) fn tcp_listener(addr: SocketAddr, backlog: i32) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if addr.is_ipv6() {
        socket.set_only_v6(false)?;
    }
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Longest wait at shutdown for running tests and connections to end (tests abort at once;
/// their results are kept first).
const DRAIN_LIMIT: Duration = Duration::from_secs(15);

/// Closes `tasks` and waits for them to end, at most [`DRAIN_LIMIT`] (then logs how many are
/// left): what every server does between its shutdown and its exit.
pub(crate) async fn drain(tasks: &tokio_util::task::TaskTracker) {
    tasks.close();
    if tokio::time::timeout(DRAIN_LIMIT, tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(
            tasks = tasks.len(),
            "tasks still running after {} s: stopping anyway",
            DRAIN_LIMIT.as_secs()
        );
    }
}

/// Serves until `state.shutdown` is cancelled, then waits (at most [`DRAIN_LIMIT`]) for every
/// task it started, and for the store's queued writes.
pub async fn run(bound: Bound, state: Arc<ServerState>) {
    let tcp = state.tasks.spawn(crate::util::boxed(data_listener::run_tcp(
        bound.data_tcp,
        state.clone(),
    )));
    let udp = state.tasks.spawn(crate::util::boxed(data_listener::run_udp(
        bound.data_udp,
        state.clone(),
    )));
    http::serve(bound.control, state.clone()).await;
    let _ = tokio::join!(tcp, udp);
    drain(&state.tasks).await;
    if let Some(store) = state.store() {
        store.flush().await;
    }
}
