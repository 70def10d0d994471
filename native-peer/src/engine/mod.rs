//! The data plane: one OS thread per stream moving bytes over blocking sockets, with counters
//! the sampler reads. It knows nothing about control messages or output formats.
//!
//! Life of an [`Engine`]: [`Engine::start_with`] spawns a thread per stream; senders run until
//! [`Engine::stop`] (or their byte budget runs out), then close their direction (TCP shutdown,
//! UDP fin datagrams); receivers run until the sender's end-of-stream, or a drain limit after
//! `stop`; [`Engine::abort`] ends everything at once.

pub(crate) mod cpu;
pub(crate) mod datagram;
pub(crate) mod pacing;
pub(crate) mod patient;
pub(crate) mod probe;
mod rr;
mod rr_udp;
pub(crate) mod sampler;
pub(crate) mod sockopt;
mod tcp;
mod udp;
mod udp_batch;
mod video;
pub(crate) use perfpeer_proto::udp_stats;
pub(crate) use perfpeer_proto::wire;

use portable_atomic::{AtomicBool, AtomicU64, Ordering};
use std::io;
use std::net::{TcpStream, UdpSocket};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use perfpeer_shared::histogram::HistogramSpec;
use perfpeer_shared::one_way::ClockBasis;
use perfpeer_shared::report::StreamRole;
use perfpeer_shared::rr::RrFinal;
use perfpeer_shared::spec::{EndCondition, Protocol, RequestResponse, TestSpec};
use perfpeer_shared::units::BitRate;
use perfpeer_shared::video::VideoSpec;

use self::udp_stats::UdpRxStats;
use self::wire::DatagramFormat;

/// A connected data socket, shared by its worker thread and the sampler (which reads TCP_INFO).
#[derive(Debug, Clone)]
pub(crate) enum DataSocket {
    /// A TCP stream.
    Tcp(Arc<TcpStream>),
    /// A connected UDP socket.
    Udp(Arc<UdpSocket>),
    /// A connected DCCP socket (datagrams like UDP, in a congestion-controlled connection).
    Dccp(Arc<crate::dccp::DccpSocket>),
}

impl DataSocket {
    /// Local and peer address as text.
    pub(crate) fn addresses(&self) -> (String, String) {
        let (l, p) = match self {
            DataSocket::Tcp(s) => (s.local_addr(), s.peer_addr()),
            DataSocket::Udp(s) => (s.local_addr(), s.peer_addr()),
            DataSocket::Dccp(s) => (s.local_addr(), s.peer_addr()),
        };
        // IPv4 peers of a dual-stack socket show as plain IPv4, not ::ffff:a.b.c.d.
        let show = |a: io::Result<std::net::SocketAddr>| {
            a.map(|a| std::net::SocketAddr::new(a.ip().to_canonical(), a.port()).to_string())
                .unwrap_or_else(|_| "?".into())
        };
        (show(l), show(p))
    }

    /// Whether it carries datagrams with our sequence header (UDP, DCCP).
    pub(crate) fn is_datagram(&self) -> bool {
        matches!(self, DataSocket::Udp(_) | DataSocket::Dccp(_))
    }
}

/// One stream to run: its id, what this end does on it, and its socket.
#[derive(Debug)]
pub(crate) struct StreamSetup {
    /// Stream id.
    pub id: u32,
    /// Sender or receiver at this end.
    pub role: StreamRole,
    /// The connected socket.
    pub socket: DataSocket,
}

/// Counters a worker updates and the sampler reads. Single writer: plain stores suffice.
#[derive(Debug, Default)]
pub(crate) struct StreamCounters {
    /// Payload bytes written or read.
    pub bytes: AtomicU64,
    /// Sends: datagrams (UDP sender), or write calls that moved data (TCP sender).
    pub packets: AtomicU64,
    /// Receiver statistics (UDP receiver).
    pub udp_rx: Mutex<UdpRxStats>,
    /// Request/response figures, set once when a requesting stream ends.
    pub rr: Mutex<Option<RrFinal>>,
    /// Latency probes settled since the sampler last took them (a probe's requester).
    pub probes: Mutex<Vec<perfpeer_shared::latency::ProbeSample>>,
    /// When the stream ended, in ns since the engine's epoch plus one (0 = still running).
    finished_ns: AtomicU64,
    /// When a receiver last got data, in ns since the engine's epoch plus one (0 = never).
    last_data_ns: AtomicU64,
    /// The error that ended the stream, if any.
    pub error: Mutex<Option<String>>,
}

impl StreamCounters {
    fn mark_finished(&self, epoch: Instant) {
        self.mark_finished_at(epoch, Instant::now());
    }

    fn mark_finished_at(&self, epoch: Instant, at: Instant) {
        let ns = ns_plus_one(at.saturating_duration_since(epoch));
        let _ = self
            .finished_ns
            .compare_exchange(0, ns, Ordering::Release, Ordering::Relaxed);
    }

    /// A receiver got data `since_epoch` after the engine's epoch (the arrival time the caller
    /// already took for its statistics, where it took one).
    pub(crate) fn mark_data(&self, since_epoch: Duration) {
        self.last_data_ns
            .store(ns_plus_one(since_epoch), Ordering::Relaxed);
    }

    /// When a receiver last got data, relative to the epoch.
    pub(crate) fn last_data_at(&self) -> Option<Duration> {
        match self.last_data_ns.load(Ordering::Relaxed) {
            0 => None,
            ns => Some(Duration::from_nanos(ns - 1)),
        }
    }

    /// When the stream ended, relative to the epoch.
    pub(crate) fn finished_at(&self) -> Option<Duration> {
        match self.finished_ns.load(Ordering::Acquire) {
            0 => None,
            ns => Some(Duration::from_nanos(ns - 1)),
        }
    }
}

fn ns_plus_one(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX - 1) + 1
}

/// Flags shared by all workers of one end of a test.
#[derive(Debug)]
struct SideControl {
    stop: AtomicBool,
    abort: AtomicBool,
    stopped_at: Mutex<Option<Instant>>,
    /// Bytes left for this end's senders together (byte-count tests).
    budget: Option<AtomicU64>,
    epoch: Instant,
}

impl SideControl {
    /// Reserves up to `want` bytes of the budget; `None` once it is spent.
    fn take_budget(&self, want: usize) -> Option<usize> {
        let Some(budget) = &self.budget else {
            return Some(want);
        };
        let prev = budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                (left > 0).then(|| left.saturating_sub(u64::try_from(want).unwrap_or(u64::MAX)))
            })
            .ok()?;
        // At most `want`, so it fits a usize.
        Some(usize::try_from(prev).map_or(want, |p| p.min(want)))
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.aborted()
    }

    fn aborted(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
    }

    /// When `stop` (or `abort`) was called.
    fn stopped_instant(&self) -> Option<Instant> {
        *self.stopped_at.lock().ok()?
    }

    /// Time since `stop`, if it was called.
    fn draining_for(&self) -> Option<Duration> {
        self.stopped_at.lock().ok()?.map(|t| t.elapsed())
    }
}

/// How an engine's streams talk on the wire; perfpeer's own formats unless a compat driver
/// (iperf3, iperf2, ttcp) says otherwise.
#[derive(Debug, Clone, Default)]
pub(crate) struct WireOptions {
    /// Layout of UDP datagrams.
    pub format: DatagramFormat,
    /// First bytes of every payload buffer (e.g. iperf2's test header at offset 16); the
    /// per-datagram header is written over its start.
    pub payload_template: Option<Vec<u8>>,
    /// Datagrams that arrived on a listening socket before the stream's own socket existed
    /// (iperf2's first datagram, and any more of its flow queued behind it); the UDP receiver
    /// counts them, in order, before anything else.
    pub first_datagrams: Vec<Vec<u8>>,
    /// Measure each datagram's one-way delay (its wall-clock send time against ours), on the
    /// given clock assumption: only formats that stamp wall-clock time (iperf 2's) carry one.
    pub one_way: Option<ClockBasis>,
}

/// What a worker thread needs.
struct Worker {
    id: u32,
    counters: Arc<StreamCounters>,
    control: Arc<SideControl>,
    len: usize,
    rate: Option<BitRate>,
    /// Writes per burst at the rate (`-b RATE/BURST`).
    burst: Option<u32>,
    format: DatagramFormat,
    template: Option<Arc<Vec<u8>>>,
    first_datagrams: Vec<Vec<u8>>,
    /// Measure each datagram's one-way delay (its send time must be wall-clock time).
    one_way: Option<ClockBasis>,
    /// Also count those delays in bins (`--histograms`).
    histogram: Option<HistogramSpec>,
    /// Video-like frames (`--isochronous`, in perfpeer's or iperf 2's datagrams), and the
    /// streams of this direction that share their rate.
    video: Option<(VideoSpec, u16)>,
    /// A sender stamps wall-clock time, not time since the epoch, into perfpeer's datagram
    /// header, and each TCP write with its send time (perfpeer's or iperf 2's stamp)
    /// (`--trip-times`: the receiver reads it against its own wall clock).
    stamp_wall: bool,
    rr: Option<RequestResponse>,
    skip_rx_copy: bool,
    fq_pacing: bool,
    /// The end's only stream: a TCP sender then sends with sendfile from a memory file. That
    /// made one stream half again as fast on loopback and several streams at once slower
    /// (docs/benchmarks.md, "A sendfile sender").
    alone: bool,
}

/// Whether (and on what clock assumption) a stream measures one-way delays: a stock tool's
/// format when its driver asks (iperf 2's wall-clock stamps), perfpeer's own for a UDP or TCP
/// receiver of a `--trip-times` test (its sender stamps wall-clock time on each datagram or
/// write).
fn one_way_basis(
    spec: &TestSpec,
    wire: &WireOptions,
    role: StreamRole,
    socket: &DataSocket,
) -> Option<ClockBasis> {
    if wire.format.stamps_wall_clock() {
        return wire.one_way;
    }
    let ours =
        spec.trip_times && wire.format == DatagramFormat::Perfpeer && role == StreamRole::Receiver;
    let peer = match socket {
        DataSocket::Udp(udp) if spec.protocol == Protocol::Udp => udp.peer_addr(),
        DataSocket::Tcp(tcp) if spec.protocol == Protocol::Tcp => tcp.peer_addr(),
        _ => return None,
    };
    ours.then(|| {
        peer.map_or(ClockBasis::SynchronisedClocks, |peer| {
            ClockBasis::of_peer(peer.ip())
        })
    })
}

impl Worker {
    /// The stream's payload buffer, allocated once and reused for every write.
    fn payload(&self) -> Vec<u8> {
        let mut buf = payload(self.len.max(self.format.min_len()));
        if let Some(t) = &self.template {
            let n = t.len().min(buf.len());
            buf[..n].copy_from_slice(&t[..n]);
        }
        buf
    }
}

/// A running stream.
#[derive(Debug)]
pub(crate) struct EngineStream {
    /// Stream id.
    pub id: u32,
    /// Sender or receiver here.
    pub role: StreamRole,
    /// Its socket.
    pub socket: DataSocket,
    /// Its counters.
    pub counters: Arc<StreamCounters>,
    thread: Option<JoinHandle<()>>,
}

/// All streams of one end of one test.
#[derive(Debug)]
pub(crate) struct Engine {
    control: Arc<SideControl>,
    streams: Vec<EngineStream>,
}

impl Engine {
    /// Spawns one worker thread per stream; measurement time counts from `epoch`. `wire` is
    /// perfpeer's own format by default, or a stock tool's.
    pub(crate) fn start_with(
        spec: &TestSpec,
        setups: Vec<StreamSetup>,
        epoch: Instant,
        wire: &WireOptions,
    ) -> io::Result<Engine> {
        let template = wire.payload_template.clone().map(Arc::new);
        let budget = match spec.end {
            EndCondition::Bytes { bytes } => Some(AtomicU64::new(bytes)),
            EndCondition::Time { .. } => None,
        };
        let control = Arc::new(SideControl {
            stop: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            stopped_at: Mutex::new(None),
            budget,
            epoch,
        });
        let mut engine = Engine {
            control: control.clone(),
            streams: Vec::with_capacity(setups.len()),
        };
        let alone = setups.len() == 1;
        for setup in setups {
            let counters = Arc::new(StreamCounters::default());
            let worker = Worker {
                id: setup.id,
                counters: counters.clone(),
                control: control.clone(),
                len: spec.len as usize,
                rate: spec.per_stream_rate(),
                burst: spec.burst,
                format: wire.format,
                template: template.clone(),
                first_datagrams: if setup.role == StreamRole::Receiver {
                    wire.first_datagrams.clone()
                } else {
                    Vec::new()
                },
                one_way: one_way_basis(spec, wire, setup.role, &setup.socket),
                histogram: spec.histogram,
                video: spec
                    .video
                    .filter(|_| wire.format.marks_frames())
                    .map(|v| (v, spec.streams)),
                stamp_wall: spec.trip_times && wire.format.marks_frames(),
                rr: spec.rr,
                skip_rx_copy: spec.skip_rx_copy,
                fq_pacing: spec.fq_pacing,
                alone,
            };
            let name = format!(
                "pp-{}-{}",
                if setup.role == StreamRole::Sender {
                    "tx"
                } else {
                    "rx"
                },
                setup.id
            );
            let socket = setup.socket.clone();
            let role = setup.role;
            let spawned = std::thread::Builder::new()
                .name(name)
                .spawn(move || run_worker(socket, role, worker));
            let thread = match spawned {
                Ok(t) => t,
                Err(e) => {
                    engine.abort();
                    return Err(e);
                }
            };
            engine.streams.push(EngineStream {
                id: setup.id,
                role: setup.role,
                socket: setup.socket,
                counters,
                thread: Some(thread),
            });
        }
        Ok(engine)
    }

    /// The engine's streams.
    pub(crate) fn streams(&self) -> &[EngineStream] {
        &self.streams
    }

    /// The instant measurement times are relative to.
    pub(crate) fn epoch(&self) -> Instant {
        self.control.epoch
    }

    /// Senders stop and close their direction; receivers drain what is in flight.
    pub(crate) fn stop(&self) {
        if !self.control.stop.swap(true, Ordering::Relaxed)
            && let Ok(mut at) = self.control.stopped_at.lock()
        {
            *at = Some(Instant::now());
        }
    }

    /// Every worker stops now.
    pub(crate) fn abort(&self) {
        self.control.abort.store(true, Ordering::Relaxed);
        self.stop();
    }

    fn all_finished(&self, role: StreamRole) -> bool {
        self.streams
            .iter()
            .filter(|s| s.role == role)
            .all(|s| s.counters.finished_at().is_some())
    }

    /// A check, for another thread, that every stream has finished (what [`Engine::senders_done`]
    /// and [`Engine::receivers_done`] say together).
    pub(crate) fn all_done_check(&self) -> impl Fn() -> bool + Send + 'static {
        let counters: Vec<Arc<StreamCounters>> =
            self.streams.iter().map(|s| s.counters.clone()).collect();
        move || counters.iter().all(|c| c.finished_at().is_some())
    }

    /// Whether every sending stream has finished (its budget spent, or stopped).
    pub(crate) fn senders_done(&self) -> bool {
        self.all_finished(StreamRole::Sender)
    }

    /// Whether every receiving stream has seen its end.
    pub(crate) fn receivers_done(&self) -> bool {
        self.all_finished(StreamRole::Receiver)
    }

    /// Bytes moved so far by the streams with `role`.
    pub(crate) fn bytes(&self, role: StreamRole) -> u64 {
        self.streams
            .iter()
            .filter(|s| s.role == role)
            .map(|s| s.counters.bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Whether this end sends on any stream.
    pub(crate) fn has_senders(&self) -> bool {
        self.streams.iter().any(|s| s.role == StreamRole::Sender)
    }

    /// Waits for every worker thread (blocking: call from a blocking context).
    pub(crate) fn join(&mut self) {
        for s in &mut self.streams {
            if let Some(t) = s.thread.take()
                && t.join().is_err()
            {
                *s.counters.error.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some("worker panicked".into());
                s.counters.mark_finished(self.control.epoch);
            }
        }
    }

    /// Errors that ended streams, as `stream N: message`.
    pub(crate) fn errors(&self) -> Vec<String> {
        self.streams
            .iter()
            .filter_map(|s| {
                let err = s.counters.error.lock().ok()?.clone()?;
                Some(format!("stream {}: {err}", s.id))
            })
            .collect()
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Threads notice within their socket timeout and exit on their own.
        self.abort();
    }
}

fn run_worker(socket: DataSocket, role: StreamRole, w: Worker) {
    let result = match (&socket, role, w.rr, w.video) {
        (DataSocket::Tcp(s), StreamRole::Sender, Some(rr), _) => rr::request(s, &w, rr),
        (DataSocket::Tcp(s), StreamRole::Receiver, Some(rr), _) => rr::answer(s, &w, rr),
        (DataSocket::Tcp(s), StreamRole::Sender, None, Some((video, streams))) => {
            video::send_tcp(s, &w, video, streams)
        }
        (DataSocket::Tcp(s), StreamRole::Sender, None, _) => tcp::send(s, &w),
        (DataSocket::Tcp(s), StreamRole::Receiver, None, _) => tcp::receive(s, &w),
        (DataSocket::Udp(s), StreamRole::Sender, Some(rr), _) => match rr.probe_interval_us {
            Some(us) => probe::request(s, &w, rr, Duration::from_micros(u64::from(us))),
            None => rr_udp::request(&**s, &w, rr),
        },
        (DataSocket::Udp(s), StreamRole::Receiver, Some(rr), _) => match rr.probe_interval_us {
            Some(_) => probe::answer(&**s, &w, rr),
            None => rr_udp::answer(&**s, &w, rr),
        },
        (DataSocket::Udp(s), StreamRole::Sender, None, Some((video, streams))) => {
            video::send(&**s, &w, video, streams)
        }
        (DataSocket::Udp(s), StreamRole::Sender, _, _) if udp_batch::sends(&w) => {
            udp_batch::send(s, &w)
        }
        (DataSocket::Udp(s), StreamRole::Receiver, _, _) if udp_batch::receives(&w) => {
            udp_batch::receive(s, &w)
        }
        (DataSocket::Udp(s), StreamRole::Sender, _, _) => udp::send(&**s, &w),
        (DataSocket::Udp(s), StreamRole::Receiver, _, _) => udp::receive(&**s, &w),
        (DataSocket::Dccp(s), StreamRole::Sender, _, _) => udp::send(&**s, &w),
        (DataSocket::Dccp(s), StreamRole::Receiver, _, _) => udp::receive(&**s, &w),
    };
    // A sender told to stop whose far end closes first (it stopped reading at the end, as a
    // stock iperf3 does at TEST_END) has not failed: the test was over.
    let result = result.or_else(|e| {
        let closed = matches!(
            e.kind(),
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
        );
        if role == StreamRole::Sender && closed && w.control.stopping() {
            Ok(())
        } else {
            Err(e)
        }
    });
    if let Err(e) = result {
        tracing::debug!(stream = w.id, error = %e, "stream ended with an error");
        if let Ok(mut slot) = w.counters.error.lock() {
            *slot = Some(e.to_string());
        }
    }
    // An aborted stream ended when the abort came, not when its thread noticed. A sender told
    // to stop ended then (not when its last blocked write came back). A receiver told to stop
    // ended with the last data that reached it: its figures cover the time data was arriving,
    // not the end-of-test handshake or the wait for the stream to go quiet.
    let now = Instant::now();
    let end = match (w.control.aborted(), w.control.stopped_instant(), role) {
        (true, Some(at), _) => at,
        (false, Some(stop), StreamRole::Sender) => stop.min(now),
        (false, Some(stop), StreamRole::Receiver) => w
            .counters
            .last_data_at()
            .map_or(stop, |d| w.control.epoch + d)
            .min(now),
        _ => now,
    };
    w.counters.mark_finished_at(w.control.epoch, end);
}

/// A payload buffer of `len` bytes of pseudo-random filler (so compression on the path gains
/// nothing), allocated once per stream and reused for every write.
#[allow(
    clippy::cast_possible_truncation,
    reason = "filler bytes: keeping the low bits of the generator is the intent"
)]
pub(crate) fn payload(len: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// What one stream costs besides its buffers: the part of its thread's stack it touches, its
/// counters and socket.
pub(crate) const STREAM_OVERHEAD: u64 = 64 * 1024;

/// Bytes of memory this end's workers take for `spec`'s streams in `roles`: payload and receive
/// buffers as the workers allocate them, and socket buffers asked for with `-w` (which the
/// kernel doubles). This is what the peer's memory budget is charged before a test starts, so
/// it errs on the high side.
pub(crate) fn memory_needed(spec: &TestSpec, roles: impl IntoIterator<Item = StreamRole>) -> u64 {
    let len = u64::from(spec.len.max(64));
    let window = spec.window.map_or(0, |w| 2 * 2 * u64::from(w));
    let per_stream = |role: StreamRole| -> u64 {
        let buffers = match (spec.rr, spec.protocol, role) {
            (Some(rr), _, _) => len + u64::from(rr.response_len),
            (None, Protocol::Tcp, StreamRole::Sender) => len,
            (None, Protocol::Tcp, StreamRole::Receiver) => {
                len.clamp(64 * 1024, tcp::MAX_READ as u64)
            }
            // Datagrams: a batch of them at once (sendmmsg / GSO, recvmmsg), plus one whole
            // 64 KiB datagram buffer.
            (None, Protocol::Udp | Protocol::Dccp, _) => {
                len.next_multiple_of(64) * udp_batch::BATCH as u64 + 64 * 1024
            }
        };
        // A receiver's histogram: 4 bytes a bin at most (the counters grow as bins fill).
        let bins = match (spec.histogram, role) {
            (Some(h), StreamRole::Receiver) => 4 * u64::from(h.bins),
            _ => 0,
        };
        buffers + window + bins + STREAM_OVERHEAD
    };
    roles.into_iter().map(per_stream).sum()
}

/// Whether an I/O error only means "try again" on a socket with a timeout.
pub(crate) fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Whether a datagram send failed only for this datagram (the socket is fine): no buffer space
/// for now, a time-out, or an ICMP "port unreachable" from an earlier datagram reported on this
/// one. Request/response and probe streams count such a datagram as lost and go on.
fn datagram_dropped(e: &io::Error) -> bool {
    is_retry(e) || crate::sys::is_no_buffer_space(e) || e.kind() == io::ErrorKind::ConnectionRefused
}

/// Socket timeout that bounds how long a worker takes to notice stop/abort.
pub(crate) const POLL: Duration = Duration::from_millis(100);
