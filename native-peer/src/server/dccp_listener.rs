//! The data port for DCCP (its own port space, same port number as TCP/UDP): accepts DCCP
//! connections for the peer's service codes and hands each to the test whose cookie its first
//! packet (the 24-byte stream hello) presents. Anything else is closed without a word, so data
//! only goes to an endpoint that completed a session handshake. Blocking threads, like the engine.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use perfpeer_shared::spec::TestSpec;

use super::metrics::Refusal;
use super::state::{IncomingStream, ServerState};
use crate::admission::{Admission, Caps, LogLimit};
use crate::dccp::{self, DccpListener, DccpSocket};
use crate::engine::DataSocket;
use crate::engine::wire::{STREAM_HELLO_LEN, StreamHello};

/// Time a new DCCP connection has to present its hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the accept loop looks at the shutdown token.
const ACCEPT_POLL: Duration = Duration::from_millis(200);
/// Connections that may be waiting for their hello at once.
const UNIDENTIFIED_CAPS: Caps = Caps {
    total: 64,
    per_source: 32,
};

static DROPPED: LogLimit = LogLimit::new(
    "DCCP connections dropped before their hello",
    Duration::from_secs(10),
);

static LISTENING: AtomicBool = AtomicBool::new(false);

/// Why this peer cannot be the far end of `spec` over DCCP for a client on IPv6 (`ipv6`) or
/// IPv4 (`None`: it can).
pub(crate) fn refusal(spec: &TestSpec, ipv6: bool) -> Option<String> {
    let support = dccp::support();
    if let Some(why) = support.refusal(ipv6) {
        return Some(format!("this peer cannot run DCCP: {why}"));
    }
    if let Some(why) = spec
        .dccp
        .and_then(|d| d.ccid)
        .and_then(|c| support.ccid_refusal(c))
    {
        return Some(format!("this peer cannot run the test: {why}"));
    }
    (!LISTENING.load(Ordering::Relaxed))
        .then(|| "this peer's DCCP data listener is not running (see its log)".to_string())
}

/// Binds the DCCP listener on `addr` for `services` and accepts on a thread until shutdown.
/// On a kernel without DCCP this only logs why; tests asking for DCCP are then refused.
pub(crate) fn spawn(addr: SocketAddr, services: Vec<u32>, state: Arc<ServerState>) {
    let listener = match DccpListener::bind(addr, &services) {
        Ok(l) => l,
        Err(e) => {
            let why = dccp::support().reason.unwrap_or_else(|| e.to_string());
            return tracing::info!(%addr, reason = why, "no DCCP data listener");
        }
    };
    LISTENING.store(true, Ordering::Relaxed);
    let spawned = std::thread::Builder::new()
        .name("pp-dccp-accept".into())
        .spawn(move || accept_loop(listener, state));
    if let Err(e) = spawned {
        LISTENING.store(false, Ordering::Relaxed);
        tracing::warn!(error = %e, "cannot start the DCCP data listener");
    }
}

fn accept_loop(listener: DccpListener, state: Arc<ServerState>) {
    // A thread per connection until its hello: the places are never shed (a blocked read cannot
    // be taken back), so threads stay within the caps.
    let unidentified = Admission::new(UNIDENTIFIED_CAPS);
    let mut backoff = Duration::from_millis(10);
    while !state.shutdown.is_cancelled() {
        let (socket, from) = match listener.accept(ACCEPT_POLL) {
            Ok(a) => {
                backoff = Duration::from_millis(10);
                a
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) =>
            {
                continue;
            }
            Err(e) => {
                DROPPED.warn("accept", e);
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let place = match unidentified.admit_without_shedding(from.ip()) {
            Ok(p) => p,
            Err(refusal) => {
                state.metrics.refused(Refusal::Admission);
                DROPPED.warn(from, refusal);
                continue;
            }
        };
        let state = state.clone();
        let _ = std::thread::Builder::new()
            .name("pp-dccp-hello".into())
            .spawn(move || {
                if let Err(reason) = identify(socket, from, &state) {
                    DROPPED.warn(from, reason);
                }
                drop(place);
            });
    }
    LISTENING.store(false, Ordering::Relaxed);
}

fn identify(socket: DccpSocket, from: SocketAddr, state: &ServerState) -> Result<(), String> {
    socket
        .set_read_timeout(Some(HELLO_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut buf = [0u8; 64];
    let n = socket
        .recv(&mut buf)
        .map_err(|e| format!("no hello: {e}"))?;
    if n != STREAM_HELLO_LEN {
        return Err(format!("first packet of {n} bytes is not a stream hello"));
    }
    let hello = StreamHello::decode(&buf[..n]).map_err(|e| e.to_string())?;
    let incoming = IncomingStream {
        id: hello.stream_id,
        socket: DataSocket::Dccp(Arc::new(socket)),
    };
    state
        .deliver(&hello.cookie, from, incoming)
        .map_err(|(refusal, _)| refusal.to_string())?;
    state
        .metrics
        .data_connection(perfpeer_shared::spec::Protocol::Dccp);
    Ok(())
}
