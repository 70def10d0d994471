//! The data phase of one netserver test, on its own OS thread with blocking sockets, as
//! netserver 2.7 runs it: receive until the client's end of stream (a TCP FIN or a zero-length
//! datagram), send until the test's time is up, answer requests, or take a connection per
//! transaction; a byte or transaction count ends it too. Only the control connection's address
//! is served: connections and datagrams from any other address are dropped unanswered. A UDP
//! test takes its first datagram from that address and then only that source (its 5-tuple: the
//! port netperf's data socket sends from); what comes from another port of the address is
//! dropped too, and a UDP_RR sends that source no more than 3 times the bytes it sent.

use std::io::{self, Read};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use crate::admission::LogLimit;

// A blocked socket call comes back every POLL to look at the clock and the stop flag; sends
// carry the engine's filler bytes (not zeros, which a compressing link would flatter).
use crate::engine::patient::{self, Moved, Pause, Want};
use crate::engine::{POLL, is_retry, payload};

/// How long a sending server waits for the client to close after its own FIN.
const CLOSE_WAIT: Duration = Duration::from_secs(2);
/// How long the client has for its first data connection or datagram (netperf sends at once):
/// a client that asks for a test and sends nothing does not hold its place until the deadline.
pub(crate) const FIRST_DATA_WAIT: Duration = Duration::from_secs(10);

/// What the server does with the data connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Counts what arrives (TCP_STREAM, UDP_STREAM).
    Receive,
    /// Sends for the test's time (TCP_MAERTS).
    Send,
    /// Answers each request with a response (TCP_RR, UDP_RR).
    Transactions,
    /// A connection per transaction, with a request and response (TCP_CRR) or without (TCP_CC).
    ConnectionPerTransaction {
        /// Whether each connection carries a request and a response.
        exchange: bool,
    },
}

/// Where the data comes in.
#[derive(Debug)]
pub(crate) enum Endpoint {
    /// TCP connections from the client's address, accepted by the caller.
    Tcp(Receiver<TcpStream>),
    /// A bound, unconnected UDP socket.
    Udp(UdpSocket),
}

/// The one read buffer of a UDP data phase: any datagram fits.
const UDP_READ_LEN: usize = 65_536;

/// What a UDP test sends its source, at most, per byte it received from it: QUIC's limit on
/// what a server sends to an address that has not shown it receives, which no netperf UDP
/// source ever shows (the server refuses a UDP_RR whose response is over this many times its
/// request).
pub(crate) const UDP_AMPLIFICATION: usize = 3;

static FOREIGN_DATAGRAMS: LogLimit = LogLimit::new(
    "netperf UDP datagrams from another source than their test's client, dropped",
    Duration::from_secs(10),
);

/// One test's data phase.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    /// What the server does.
    pub mode: Mode,
    /// Bytes per receive (a request's length in transactions).
    pub recv_len: usize,
    /// Bytes per send (a response's length in transactions).
    pub send_len: usize,
    /// Bytes (stream tests) or transactions after which the test ends.
    pub units: Option<u64>,
    /// When the server stops on its own: the client's test length, plus `pad` where the server
    /// waits for the client's end rather than making it.
    pub deadline_after: Duration,
    /// Slack a receiving or answering server gives the client (netserver's PAD_TIME), taken
    /// off the elapsed time when the deadline, not the client, ended the test.
    pub pad: Duration,
    /// The control connection's address: the only one served.
    pub client: IpAddr,
    /// TCP_NODELAY on data connections.
    pub no_delay: bool,
}

impl Plan {
    /// Bytes the data phase takes (what the server's memory budget is charged): its receive
    /// buffer (UDP: one that takes any datagram), its send buffer, and what its thread costs
    /// besides, as the engine counts a stream's.
    pub(crate) fn memory_needed(&self, udp: bool) -> u64 {
        let read = if udp {
            UDP_READ_LEN
        } else {
            self.recv_len.max(1)
        };
        (read + self.send_len) as u64 + crate::engine::STREAM_OVERHEAD
    }
}

/// What the data phase did.
#[derive(Debug, Clone, Default)]
pub(crate) struct Counts {
    /// Payload bytes received.
    pub bytes_received: u64,
    /// Receive calls that returned data.
    pub recv_calls: u64,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Send calls.
    pub send_calls: u64,
    /// UDP sends refused for want of buffers.
    pub failed_sends: u64,
    /// Transactions completed (or connections, in TCP_CC).
    pub transactions: u64,
    /// Length of the data phase, without the pad when the deadline ended it.
    pub elapsed: Duration,
    /// Whether the deadline (not the client's end or a count) ended the test.
    pub timed_out: bool,
    /// Connections or datagrams from other addresses (UDP: from other sources than the test's
    /// first), dropped.
    pub foreign_dropped: u64,
    /// UDP_RR requests not answered: the answer would have sent the source more than 3 times
    /// what it sent.
    pub unanswered: u64,
    /// What ended the test, if it was an error: its errno (what netperf prints) and words.
    pub error: Option<(i32, String)>,
    /// SO_RCVBUF and SO_SNDBUF of the data socket at the end (a connection test's: of its first
    /// connection, after its transaction).
    pub buffers: (Option<u32>, Option<u32>),
    /// TCP retransmissions of the data connection (as `buffers`).
    pub retransmits: u32,
    /// Congestion control of the TCP data connection (as `buffers`).
    pub congestion: Option<String>,
}

impl Counts {
    /// Received payload rate over the elapsed time, bits per second.
    pub(crate) fn received_bps(&self) -> f64 {
        per_second(self.bytes_received as f64 * 8.0, self.elapsed)
    }

    /// Sent payload rate over the elapsed time, bits per second.
    pub(crate) fn sent_bps(&self) -> f64 {
        per_second(self.bytes_sent as f64 * 8.0, self.elapsed)
    }

    /// Transactions per second over the elapsed time.
    pub(crate) fn transactions_per_s(&self) -> f64 {
        per_second(self.transactions as f64, self.elapsed)
    }
}

fn per_second(amount: f64, over: Duration) -> f64 {
    let s = over.as_secs_f64();
    if s > 0.0 { amount / s } else { 0.0 }
}

/// Why a loop stopped.
enum End {
    /// The client ended it (FIN, zero-length datagram) or the count was reached.
    Done,
    /// The deadline passed, or the server was told to stop.
    Timer,
    /// A socket error.
    Failed(io::Error),
}

struct Run<'a> {
    plan: &'a Plan,
    stop: &'a AtomicBool,
    /// Called once, when the client first moves data (see [`run`]).
    on_begun: &'a (dyn Fn() + Sync),
    begun: bool,
    start: Instant,
    deadline: Instant,
    counts: Counts,
}

impl<'a> Run<'a> {
    /// The client moved data (or connected, where that is the test): the test has begun.
    fn begin(&mut self) {
        if !self.begun {
            self.begun = true;
            (self.on_begun)();
        }
    }

    fn over(&self) -> bool {
        self.over_check()()
    }

    /// [`Run::over`] as a check that does not borrow the run.
    fn over_check(&self) -> impl Fn() -> bool + use<'a> {
        let (stop, deadline) = (self.stop, self.deadline);
        move || stop.load(Ordering::Relaxed) || Instant::now() >= deadline
    }

    fn units_reached(&self, so_far: u64) -> bool {
        self.plan.units.is_some_and(|u| so_far >= u)
    }

    /// Whether the client has had its time for the first data and sent none.
    fn first_data_late(&self, got_any: bool) -> bool {
        !got_any && self.start.elapsed() >= FIRST_DATA_WAIT
    }

    /// The next data connection from the client, `None` when the test is over.
    fn next_connection(
        &mut self,
        connections: &Receiver<TcpStream>,
        got_any: bool,
    ) -> Result<Option<TcpStream>, End> {
        loop {
            if self.over() {
                return Ok(None);
            }
            if self.first_data_late(got_any) {
                return Err(no_data("connection"));
            }
            let wait = self
                .deadline
                .saturating_duration_since(Instant::now())
                .min(POLL);
            match connections.recv_timeout(wait) {
                Ok(stream) => {
                    if stream.set_read_timeout(Some(POLL)).is_err()
                        || stream.set_write_timeout(Some(POLL)).is_err()
                        || stream.set_nodelay(self.plan.no_delay).is_err()
                    {
                        continue;
                    }
                    return Ok(Some(stream));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(None),
            }
        }
    }

    /// Reads up to `buf.len()` bytes (all of them if `whole`); `Ok(false)` at the client's FIN.
    fn read(&mut self, stream: &mut TcpStream, buf: &mut [u8], whole: bool) -> Result<bool, End> {
        let over = self.over_check();
        let want = if whole { Want::All } else { Want::Some };
        let moved = patient::read(
            stream,
            buf,
            want,
            |n| {
                self.begin();
                self.counts.bytes_received += n as u64;
                self.counts.recv_calls += 1;
            },
            |pause| pause == Pause::TimedOut && over(),
        )
        .map_err(End::Failed)?;
        match moved {
            Moved::All if over() => Err(End::Timer),
            Moved::All => Ok(true),
            Moved::Closed(_) => Ok(false),
            Moved::GaveUp(_) => Err(End::Timer),
        }
    }

    fn write(&mut self, stream: &mut TcpStream, buf: &[u8]) -> Result<(), End> {
        let over = self.over_check();
        let moved = patient::write_all(
            stream,
            buf,
            |n| {
                self.begin();
                self.counts.bytes_sent += n as u64;
                self.counts.send_calls += 1;
            },
            |pause| pause == Pause::TimedOut && over(),
        )
        .map_err(End::Failed)?;
        match moved {
            Moved::All => Ok(()),
            Moved::Closed(_) | Moved::GaveUp(_) => Err(End::Timer),
        }
    }

    fn tcp(&mut self, connections: &Receiver<TcpStream>) -> End {
        let mut recv_buf = vec![0u8; self.plan.recv_len.max(1)];
        let send_buf = payload(self.plan.send_len);
        if let Mode::ConnectionPerTransaction { exchange } = self.plan.mode {
            let mut got_any = false;
            loop {
                let mut stream = match self.next_connection(connections, got_any) {
                    Ok(Some(s)) => s,
                    Ok(None) => return End::Timer,
                    Err(end) => return end,
                };
                let first = !got_any;
                got_any = true;
                self.begin();
                if exchange {
                    match self.read(&mut stream, &mut recv_buf, true) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(end) => return end,
                    }
                    if let Err(end) = self.write(&mut stream, &send_buf) {
                        return end;
                    }
                }
                self.counts.transactions += 1;
                // The socket's figures are read once, after the first transaction, as
                // netserver does: not four more system calls in every transaction.
                if first {
                    self.note_socket(&stream);
                }
                if self.units_reached(self.counts.transactions) {
                    return End::Done;
                }
            }
        }
        let mut stream = match self.next_connection(connections, false) {
            Ok(Some(s)) => s,
            Ok(None) => return End::Timer,
            Err(end) => return end,
        };
        let end = match self.plan.mode {
            Mode::Receive => loop {
                match self.read(&mut stream, &mut recv_buf, false) {
                    Ok(true) if self.units_reached(self.counts.bytes_received) => break End::Done,
                    Ok(true) => {}
                    Ok(false) => break End::Done,
                    Err(end) => break end,
                }
            },
            Mode::Send => loop {
                let len = match self.plan.units {
                    Some(u) => {
                        let left = u.saturating_sub(self.counts.bytes_sent);
                        if left == 0 {
                            break End::Done;
                        }
                        send_buf
                            .len()
                            .min(usize::try_from(left).unwrap_or(usize::MAX))
                    }
                    None => send_buf.len(),
                };
                if let Err(end) = self.write(&mut stream, &send_buf[..len]) {
                    break end;
                }
                if self.over() {
                    break End::Timer;
                }
            },
            _ => loop {
                match self.read(&mut stream, &mut recv_buf, true) {
                    Ok(true) => {}
                    Ok(false) => break End::Done,
                    Err(end) => break end,
                }
                if let Err(end) = self.write(&mut stream, &send_buf) {
                    break end;
                }
                self.counts.transactions += 1;
                if self.units_reached(self.counts.transactions) {
                    break End::Done;
                }
            },
        };
        self.note_socket(&stream);
        if self.plan.mode == Mode::Send {
            // Our FIN ends the client's receive loop; its FIN (or a timeout) ends ours.
            let _ = stream.shutdown(Shutdown::Write);
            let until = Instant::now() + CLOSE_WAIT;
            let mut sink = [0u8; 4096];
            while Instant::now() < until && !self.stop.load(Ordering::Relaxed) {
                match stream.read(&mut sink) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if is_retry(&e) => {}
                    Err(_) => break,
                }
            }
        }
        end
    }

    fn note_socket(&mut self, stream: &TcpStream) {
        self.counts.buffers = crate::engine::sockopt::buffer_sizes(socket2::SockRef::from(stream));
        let (_, congestion) =
            crate::engine::sockopt::tcp_mss_and_congestion(socket2::SockRef::from(stream));
        self.counts.congestion = congestion;
        if let Some(info) = crate::sys::tcp_info(stream) {
            self.counts.retransmits = info.total_retrans;
        }
    }

    fn udp(&mut self, socket: &UdpSocket) -> End {
        if let Err(e) = socket.set_read_timeout(Some(POLL)) {
            return End::Failed(e);
        }
        // Any datagram fits; `recv_len` is what the client asked for and is reported as such.
        let mut buf = vec![0u8; UDP_READ_LEN];
        let response = payload(self.plan.send_len);
        // The test's source: the first datagram's from the client's address. The socket stays
        // unconnected so that what others send is read, counted and dropped here (a connected
        // socket would have the kernel answer it with ICMP port unreachable).
        let mut source: Option<SocketAddr> = None;
        let end = loop {
            if self.over() {
                break End::Timer;
            }
            if self.first_data_late(source.is_some()) {
                break no_data("datagram");
            }
            let (n, from) = match socket.recv_from(&mut buf) {
                Ok(got) => got,
                Err(e) if is_retry(&e) => continue,
                Err(e) => break End::Failed(e),
            };
            match source {
                Some(s) if s == from => {}
                None if is_client(from, self.plan.client) => {
                    source = Some(from);
                    self.begin();
                }
                _ => {
                    self.counts.foreign_dropped += 1;
                    FOREIGN_DATAGRAMS.warn(from, "not the test's source");
                    continue;
                }
            }
            if n == 0 {
                break End::Done;
            }
            self.counts.bytes_received += n as u64;
            self.counts.recv_calls += 1;
            match self.plan.mode {
                Mode::Transactions => {
                    // Checked up front (a response at most 3 times the request); a source that
                    // sends shorter requests than it asked for gets no more for them.
                    let budget = self
                        .counts
                        .bytes_received
                        .saturating_mul(UDP_AMPLIFICATION as u64);
                    if self.counts.bytes_sent + response.len() as u64 > budget {
                        self.counts.unanswered += 1;
                        continue;
                    }
                    match socket.send_to(&response, from) {
                        Ok(sent) => {
                            self.counts.bytes_sent += sent as u64;
                            self.counts.send_calls += 1;
                        }
                        Err(e) if crate::sys::is_no_buffer_space(&e) => {
                            self.counts.failed_sends += 1;
                        }
                        Err(e) => break End::Failed(e),
                    }
                    self.counts.transactions += 1;
                    if self.units_reached(self.counts.transactions) {
                        break End::Done;
                    }
                }
                _ => {
                    if self.units_reached(self.counts.bytes_received) {
                        break End::Done;
                    }
                }
            }
        };
        self.counts.buffers = crate::engine::sockopt::buffer_sizes(socket2::SockRef::from(socket));
        end
    }
}

/// Linux's ETIMEDOUT, for an error that has no errno of its own (no data in time).
const ETIMEDOUT: i32 = 110;

fn no_data(what: &str) -> End {
    End::Failed(io::Error::new(
        io::ErrorKind::TimedOut,
        format!(
            "no data {what} from the client in {} s",
            FIRST_DATA_WAIT.as_secs()
        ),
    ))
}

/// Runs the data phase until the client ends it, its count is reached, the deadline passes,
/// or `stop` is set. `on_begun` is called once, when the test begins: at the client's first
/// byte or datagram (its first connection in a connection test, its connection when the server
/// sends) — until then the client has only asked, and its place may be given to another.
pub(crate) fn run(
    plan: &Plan,
    endpoint: Endpoint,
    stop: &AtomicBool,
    on_begun: &(dyn Fn() + Sync),
) -> Counts {
    let start = Instant::now();
    let mut run = Run {
        plan,
        stop,
        on_begun,
        begun: false,
        start,
        deadline: start + plan.deadline_after,
        counts: Counts::default(),
    };
    let end = match &endpoint {
        Endpoint::Tcp(connections) => run.tcp(connections),
        Endpoint::Udp(socket) => run.udp(socket),
    };
    let mut elapsed = run.start.elapsed();
    match end {
        End::Done => {}
        End::Timer => {
            run.counts.timed_out = true;
            elapsed = elapsed.saturating_sub(plan.pad);
        }
        End::Failed(e) => {
            run.counts.error = Some((e.raw_os_error().unwrap_or(ETIMEDOUT), e.to_string()));
        }
    }
    run.counts.elapsed = elapsed;
    run.counts
}

/// Whether a data connection or datagram from `from` belongs to the test of `client`.
pub(crate) fn is_client(from: SocketAddr, client: IpAddr) -> bool {
    from.ip().to_canonical() == client
}
