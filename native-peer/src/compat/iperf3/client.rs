//! `perfpeer iperf3 -c HOST`: a client for stock iperf3 servers. It follows the server's state
//! bytes, opens the data streams the way iperf3 does (cookie first on TCP, "9876" on UDP),
//! measures with perfpeer's engine, ends the test (the client always does) and swaps results.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use perfpeer_shared::control::ErrorCode;
use perfpeer_shared::report::{PeerRole, SideReport, StreamRole, TestResult};
use perfpeer_shared::spec::{Protocol, TestSpec};
use socket2::{Domain, SockAddr, SockRef, Socket, Type};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::codec::{Asks, Cookie, MAX_RESULTS_LEN, Results, State, UDP_CONNECT, params_json};
use super::control::{Control, Iperf3Error};
use crate::engine::wire::DatagramFormat;
use crate::engine::{DataSocket, StreamSetup, WireOptions, sockopt};
use crate::session::SessionError;
use crate::session::client::ClientOptions;
use crate::session::driver::{FarEnd, FarEvent, Ready, drive, received_byte_count};
use crate::session::events::TestEvent;
use crate::session::measure::Measurement;

/// Time for a stock server to read what its kernel has acknowledged.
const SETTLE: Duration = Duration::from_millis(20);
/// Longest wait for our TCP send queues to empty before TEST_END.
const DELIVERY_WAIT: Duration = Duration::from_millis(500);

/// Waits until every sending TCP socket's queue (sent but unacknowledged, or not yet sent) is
/// empty, or `limit` passes.
async fn wait_until_delivered(m: &Measurement, limit: Duration) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let pending: u64 = m
            .engine()
            .streams()
            .iter()
            .filter(|s| s.role == StreamRole::Sender)
            .filter_map(|s| match &s.socket {
                DataSocket::Tcp(t) => Some(crate::sys::unsent_bytes(&**t).unwrap_or(0)),
                DataSocket::Udp(_) | DataSocket::Dccp(_) => None,
            })
            .sum();
        if pending == 0 {
            // Acknowledged means in the server's kernel; give its read loop a moment to take it.
            tokio::time::sleep(SETTLE).await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Tries of the UDP stream announcement, one per second, before giving up.
const UDP_CONNECT_TRIES: usize = 10;

/// Runs `spec` against the stock iperf3 server at `server`.
pub(crate) async fn run(
    server: SocketAddr,
    spec: &TestSpec,
    asks: Asks,
    opts: &ClientOptions,
    events: mpsc::UnboundedSender<TestEvent>,
    cancel: CancellationToken,
) -> Result<TestResult, SessionError> {
    let (far, ready) = open(server, spec, asks, opts)
        .await
        .map_err(|e| session_error(server, e))?;
    drive(far, ready, spec, &events, &cancel).await
}

/// What an iperf3 failure before the test is, in the terms every far end shares.
fn session_error(server: SocketAddr, e: Iperf3Error) -> SessionError {
    let unreachable = |reason: String| SessionError::Unreachable {
        target: server.to_string(),
        reason,
    };
    match e {
        Iperf3Error::Busy => SessionError::Refused {
            code: ErrorCode::OverLimit,
            message: e.to_string(),
        },
        Iperf3Error::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => {
            unreachable(io.to_string())
        }
        Iperf3Error::Timeout("connect") => unreachable("no answer".into()),
        Iperf3Error::Io(io) => SessionError::Data(io.to_string()),
        other => SessionError::Protocol(other.to_string()),
    }
}

/// Follows a stock server's states up to TEST_RUNNING, opening the streams when it asks.
async fn open(
    server: SocketAddr,
    spec: &TestSpec,
    asks: Asks,
    opts: &ClientOptions,
) -> Result<(Iperf3FarEnd, Ready), Iperf3Error> {
    // The control connection leaves from -B's address and --bind-dev's interface, as iperf3's.
    let tcp = tokio::time::timeout(
        opts.connect_timeout,
        crate::session::client::connect_tcp(server, opts.bind, opts.device.as_deref()),
    )
    .await
    .map_err(|_| Iperf3Error::Timeout("connect"))??;
    let mut control = Control::new(tcp);
    let cookie = Cookie::generate();
    control.write(cookie.as_bytes()).await?;
    expect(&mut control, State::ParamExchange).await?;
    control.write_json(&params_json(spec, asks)).await?;
    expect(&mut control, State::CreateStreams).await?;
    let (spec_c, opts_c) = (spec.clone(), opts.clone());
    let setups =
        crate::util::spawn_blocking(move || open_streams(&spec_c, server, cookie, &opts_c))
            .await
            .map_err(|e| Iperf3Error::Aborted(e.to_string()))??;
    expect(&mut control, State::TestStart).await?;
    expect(&mut control, State::TestRunning).await?;
    let ready = Ready {
        test_id: cookie.as_str().to_string(),
        server_addr: server.to_string(),
        setups,
        wire: WireOptions {
            format: DatagramFormat::Iperf3 {
                counter64: asks.counter64,
            },
            payload_template: None,
            first_datagrams: Vec::new(),
            one_way: None,
        },
        role: PeerRole::Client,
    };
    let far = Iperf3FarEnd {
        control,
        spec: spec.clone(),
        // The server's own output of a long test with many streams runs to megabytes.
        results_limit: if asks.server_output {
            MAX_RESULTS_WITH_OUTPUT
        } else {
            MAX_RESULTS_LEN
        },
    };
    Ok((far, ready))
}

/// A stock iperf3 server during a test: its control connection.
struct Iperf3FarEnd {
    control: Control,
    spec: TestSpec,
    /// Longest results message taken from the server.
    results_limit: usize,
}

/// Longest results message when the server's output was asked for (`--get-server-output`).
const MAX_RESULTS_WITH_OUTPUT: usize = 16 << 20;

impl FarEnd for Iperf3FarEnd {
    /// Any state byte during the test ends it.
    async fn next_event(&mut self) -> FarEvent {
        let why = match self.control.next_state().await {
            Ok(State::ServerTerminate) => "the server was interrupted".to_string(),
            Ok(State::ServerError) => self.control.read_server_error().await.to_string(),
            Ok(other) => format!("unexpected {other:?} from the server during the test"),
            Err(e) => e.to_string(),
        };
        FarEvent::Ended(why)
    }

    fn done(&mut self, m: &Measurement, spec: &TestSpec) -> bool {
        received_byte_count(m, spec)
    }

    async fn end(&mut self, m: &Measurement) -> Result<(), SessionError> {
        // A stock server stops reading at TEST_END: let what we sent reach it first, so both
        // ends count the same bytes.
        m.stop_senders();
        wait_until_delivered(m, DELIVERY_WAIT).await;
        self.control
            .write_state(State::TestEnd)
            .await
            .map_err(|e| SessionError::Protocol(e.to_string()))
    }

    async fn abandon(&mut self, _why: &str) {
        let _ = self.control.write_state(State::ClientTerminate).await;
    }

    /// The server closes its streams at TEST_END: nothing is left to drain.
    fn abort_streams(&self, _ended_early: bool) -> bool {
        true
    }

    async fn finals(
        &mut self,
        local: &mut SideReport,
        events: &mpsc::UnboundedSender<TestEvent>,
    ) -> Result<Option<SideReport>, String> {
        self.exchange_results(local, events)
            .await
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

impl Iperf3FarEnd {
    async fn exchange_results(
        &mut self,
        local: &SideReport,
        events: &mpsc::UnboundedSender<TestEvent>,
    ) -> Result<SideReport, Iperf3Error> {
        let protocol = self.spec.protocol;
        let control = &mut self.control;
        expect(control, State::ExchangeResults).await?;
        let ours = Results::from_report(local, protocol);
        control
            .write_json(&perfpeer_shared::format::json_value(&ours))
            .await?;
        let mut theirs = Results::parse(&control.read_json(self.results_limit).await?)?;
        // `--get-server-output`: the server's own account of the test, printed after ours.
        let (text, json) = (
            theirs.server_output_text.take(),
            theirs.server_output_json.take(),
        );
        if text.is_some() || json.is_some() {
            let _ = events.send(TestEvent::FarEndOutput { text, json });
        }
        expect(control, State::DisplayResults).await?;
        control.write_state(State::IperfDone).await?;
        Ok(theirs.into_report(local, PeerRole::Server, protocol))
    }
}

async fn expect(control: &mut Control, want: State) -> Result<(), Iperf3Error> {
    match control.read_state().await? {
        s if s == want => Ok(()),
        State::AccessDenied => Err(Iperf3Error::Busy),
        State::ServerError => Err(control.read_server_error().await),
        State::ServerTerminate => Err(Iperf3Error::Aborted("the server was interrupted".into())),
        other => Err(Iperf3Error::Aborted(format!(
            "expected {want:?} from the server, got {other:?}"
        ))),
    }
}

fn open_streams(
    spec: &TestSpec,
    server: SocketAddr,
    cookie: Cookie,
    opts: &ClientOptions,
) -> Result<Vec<StreamSetup>, Iperf3Error> {
    spec.stream_plan()
        .into_iter()
        .enumerate()
        .map(|(index, (id, client_sends))| {
            let role = if client_sends {
                StreamRole::Sender
            } else {
                StreamRole::Receiver
            };
            let socket = match spec.protocol {
                Protocol::Tcp => {
                    DataSocket::Tcp(Arc::new(tcp_stream(spec, server, cookie, opts, index)?))
                }
                Protocol::Udp | Protocol::Dccp => {
                    DataSocket::Udp(Arc::new(udp_stream(spec, server, opts, index)?))
                }
            };
            Ok(StreamSetup { id, role, socket })
        })
        .collect()
}

/// A data socket for stream `index` (0, 1, …): bound to `-B`'s address and `--cport` plus
/// `index`, where given.
fn new_socket(
    server: SocketAddr,
    ty: Type,
    spec: &TestSpec,
    opts: &ClientOptions,
    index: usize,
) -> Result<Socket, Iperf3Error> {
    let socket = Socket::new(Domain::for_address(server), ty, None)?;
    if let Some(dev) = &opts.device {
        crate::sys::bind_device(SockRef::from(&socket), dev)?;
    }
    let port = match opts.data_port {
        Some(first) => crate::session::data_connect::nth_port(first, index).ok_or_else(|| {
            Iperf3Error::Aborted(format!(
                "--cport {first} leaves no port for stream {}",
                index + 1
            ))
        })?,
        None => 0,
    };
    if opts.bind.is_some() || port != 0 {
        let ip = opts.bind.unwrap_or(if server.is_ipv6() {
            std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED)
        } else {
            std::net::IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED)
        });
        socket.bind(&SockAddr::from(SocketAddr::new(ip, port)))?;
    }
    sockopt::apply(SockRef::from(&socket), spec, server.is_ipv6())?;
    Ok(socket)
}

fn tcp_stream(
    spec: &TestSpec,
    server: SocketAddr,
    cookie: Cookie,
    opts: &ClientOptions,
    index: usize,
) -> Result<std::net::TcpStream, Iperf3Error> {
    use std::io::Write;
    let socket = new_socket(server, Type::STREAM, spec, opts, index)?;
    socket.connect_timeout(&SockAddr::from(server), opts.connect_timeout)?;
    let mut stream: std::net::TcpStream = socket.into();
    stream.write_all(cookie.as_bytes())?;
    Ok(stream)
}

fn udp_stream(
    spec: &TestSpec,
    server: SocketAddr,
    opts: &ClientOptions,
    index: usize,
) -> Result<std::net::UdpSocket, Iperf3Error> {
    let socket = new_socket(server, Type::DGRAM, spec, opts, index)?;
    if spec.window.is_none() {
        let _ = socket.set_recv_buffer_size(4 << 20);
        let _ = socket.set_send_buffer_size(4 << 20);
    }
    socket.connect(&SockAddr::from(server))?;
    let udp: std::net::UdpSocket = socket.into();
    udp.set_read_timeout(Some(Duration::from_secs(1)))?;
    let mut buf = vec![0u8; 65_536];
    for _ in 0..UDP_CONNECT_TRIES {
        udp.send(&UDP_CONNECT)?;
        let sent_at = Instant::now();
        // Any 4-byte reply is the answer ("6789", or the legacy bytes); in reverse mode early
        // data datagrams may come first and are skipped.
        while sent_at.elapsed() < Duration::from_secs(1) {
            match udp.recv(&mut buf) {
                Ok(4) => return Ok(udp),
                Ok(_) => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break;
                }
                // An ICMP refusal can be stale, or the server's stream socket not quite up
                // yet: it counts as one unanswered try, the last of which gives up.
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    std::thread::sleep(Duration::from_millis(100));
                    break;
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    Err(Iperf3Error::Timeout("UDP stream reply"))
}
