//! The sampler turns an engine's cumulative counters into interval reports and, at the end,
//! per-stream finals. It is driven from outside (`tick(now)`, `finish(now)`) and reads TCP_INFO
//! from sending TCP sockets; nothing here runs on the data path.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use perfpeer_shared::report::{
    IntervalReport, StreamFinal, StreamInterval, StreamRole, TcpFinal, TcpSample,
};

use super::sockopt::{TcpInfo, tcp_info};
use super::udp_stats::UdpRxSnapshot;
use super::{DataSocket, Engine, StreamCounters};
use perfpeer_shared::dccp::TfrcSample;
use std::sync::Arc;

/// Cumulative counters of one stream at one instant.
#[derive(Debug, Clone, Copy, Default)]
struct Snap {
    bytes: u64,
    packets: u64,
    retrans: u64,
    udp: Option<UdpRxSnapshot>,
}

/// RTT and cwnd figures gathered from TCP_INFO over the test.
#[derive(Debug, Clone, Copy, Default)]
struct TcpAgg {
    max_cwnd: u64,
    max_wnd: Option<u64>,
    min_rtt: u32,
    max_rtt: u32,
    rtt_sum: u64,
    rtt_samples: u64,
}

impl TcpAgg {
    fn add(&mut self, info: &TcpInfo) {
        self.max_cwnd = self
            .max_cwnd
            .max(u64::from(info.snd_cwnd) * u64::from(info.snd_mss));
        if let Some(wnd) = info.snd_wnd {
            self.max_wnd = Some(self.max_wnd.unwrap_or(0).max(u64::from(wnd)));
        }
        if info.rtt > 0 {
            self.min_rtt = if self.rtt_samples == 0 {
                info.rtt
            } else {
                self.min_rtt.min(info.rtt)
            };
            self.max_rtt = self.max_rtt.max(info.rtt);
            self.rtt_sum += u64::from(info.rtt);
            self.rtt_samples += 1;
        }
    }
}

struct Sampled {
    id: u32,
    role: StreamRole,
    counters: Arc<StreamCounters>,
    socket: DataSocket,
    last: Snap,
    base: Snap,
    tcp: TcpAgg,
}

impl Sampled {
    fn is_udp_receiver(&self) -> bool {
        self.role == StreamRole::Receiver && self.socket.is_datagram()
    }

    fn is_udp_sender(&self) -> bool {
        self.role == StreamRole::Sender && self.socket.is_datagram()
    }

    fn is_tcp_sender(&self) -> bool {
        self.role == StreamRole::Sender && matches!(self.socket, DataSocket::Tcp(_))
    }

    fn tcp_sender_info(&self) -> Option<TcpInfo> {
        match (&self.socket, self.role) {
            (DataSocket::Tcp(s), StreamRole::Sender) => tcp_info(&**s),
            _ => None,
        }
    }

    /// CCID 3's state now, from the half-connection that carries this stream's data.
    fn tfrc(&self) -> Option<TfrcSample> {
        let DataSocket::Dccp(d) = &self.socket else {
            return None;
        };
        let info = d.info(self.role == StreamRole::Sender);
        info.tfrc_tx
            .as_ref()
            .map(TfrcSample::from)
            .or(info.tfrc_rx.as_ref().map(TfrcSample::from))
    }

    fn read(&mut self) -> (Snap, Option<TcpInfo>) {
        let info = self.tcp_sender_info();
        if let Some(i) = &info {
            self.tcp.add(i);
        }
        let c = &self.counters;
        let snap = Snap {
            bytes: c.bytes.load(Ordering::Relaxed),
            packets: c.packets.load(Ordering::Relaxed),
            retrans: info.map_or(self.last.retrans, |i| u64::from(i.total_retrans)),
            udp: self.is_udp_receiver().then(|| {
                c.udp_rx
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .snapshot()
            }),
        };
        (snap, info)
    }
}

/// Interval and final reports for one end of a test.
pub(crate) struct Sampler {
    epoch: Instant,
    omit: Duration,
    interval: Duration,
    last_end: Duration,
    /// End of the omitted start, once it is over.
    base_at: Option<Duration>,
    streams: Vec<Sampled>,
}

impl Sampler {
    /// A sampler over `engine`'s streams, skipping `omit` at the start.
    pub(crate) fn new(engine: &Engine, omit: Duration, interval: Duration) -> Self {
        let streams = engine
            .streams()
            .iter()
            .map(|s| Sampled {
                id: s.id,
                role: s.role,
                counters: s.counters.clone(),
                socket: s.socket.clone(),
                last: Snap::default(),
                base: Snap::default(),
                tcp: TcpAgg::default(),
            })
            .collect();
        Sampler {
            epoch: engine.epoch(),
            omit,
            interval,
            last_end: Duration::ZERO,
            base_at: omit.is_zero().then_some(Duration::ZERO),
            streams,
        }
    }

    /// The interval from the previous tick to `now`.
    pub(crate) fn tick(&mut self, now: Instant) -> IntervalReport {
        let end = now.saturating_duration_since(self.epoch);
        let omitted = self.base_at.is_none();
        let mut streams = Vec::with_capacity(self.streams.len());
        for s in &mut self.streams {
            let (snap, info) = s.read();
            streams.push(StreamInterval {
                id: s.id,
                role: s.role,
                bytes: snap.bytes - s.last.bytes,
                packets: s.is_udp_sender().then(|| snap.packets - s.last.packets),
                writes: s.is_tcp_sender().then(|| snap.packets - s.last.packets),
                tcp: info.map(|i| TcpSample {
                    retransmits: snap.retrans.saturating_sub(s.last.retrans),
                    snd_cwnd: u64::from(i.snd_cwnd) * u64::from(i.snd_mss),
                    rtt_us: i.rtt,
                    rttvar_us: i.rttvar,
                    pmtu: i.pmtu,
                    snd_wnd: i.snd_wnd.map(u64::from),
                }),
                udp_rx: snap
                    .udp
                    .map(|u| u.interval_since(&s.last.udp.unwrap_or_default())),
                tfrc: s.tfrc(),
                probes: std::mem::take(
                    &mut *s.counters.probes.lock().unwrap_or_else(|p| p.into_inner()),
                ),
            });
            s.last = snap;
        }
        if self.base_at.is_none() && end + Duration::from_millis(1) >= self.omit {
            self.base_at = Some(end);
            for s in &mut self.streams {
                s.base = s.last;
            }
        }
        let report = IntervalReport {
            start: self.last_end,
            end,
            omitted,
            streams,
            wifi: None,
        };
        self.last_end = end;
        report
    }

    /// The last, short interval and the per-stream finals. The last interval ends when the
    /// last stream did (not when the caller got round to finishing: that may include a
    /// handshake); it is shown if it is at least a tenth of an interval, or if it is the only
    /// one (a short test), as iperf3 does.
    pub(crate) fn finish(&mut self, now: Instant) -> (Option<IntervalReport>, Vec<StreamFinal>) {
        let streams_end = self
            .streams
            .iter()
            .map(|s| s.counters.finished_at())
            .collect::<Option<Vec<_>>>()
            .and_then(|ends| ends.into_iter().max());
        let tail_end = streams_end.map_or(now, |d| {
            (self.epoch + d).min(now).max(self.epoch + self.last_end)
        });
        let since_last = tail_end
            .saturating_duration_since(self.epoch)
            .saturating_sub(self.last_end);
        let first = self.last_end.is_zero();
        // Probes settled since the last tick are reported even in a sliver of an interval.
        let probes_waiting = self.streams.iter().any(|s| {
            !s.counters
                .probes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
        });
        let tail = (since_last >= self.interval / 10
            || (first && !since_last.is_zero())
            || probes_waiting)
            .then(|| self.tick(tail_end));
        if tail.is_none() {
            // Bring the counters up to date even if the sliver is not reported on its own.
            for s in &mut self.streams {
                s.last = s.read().0;
            }
        }
        let base_at = self.base_at.unwrap_or(Duration::ZERO);
        let end = now.saturating_duration_since(self.epoch);
        let finals = self
            .streams
            .iter()
            .map(|s| self.final_of(s, base_at, end))
            .collect();
        (tail, finals)
    }

    fn final_of(&self, s: &Sampled, base_at: Duration, end: Duration) -> StreamFinal {
        let stream_end = s
            .counters
            .finished_at()
            .unwrap_or(end)
            .min(end)
            .max(base_at);
        let udp_rx = s.is_udp_receiver().then(|| {
            let stats = s.counters.udp_rx.lock().unwrap_or_else(|p| p.into_inner());
            stats.final_since(&s.base.udp.unwrap_or_default())
        });
        let is_udp_sender = s.is_udp_sender();
        let tcp_rx = (s.role == StreamRole::Receiver && !s.is_udp_receiver())
            .then(|| s.counters.udp_rx.lock().unwrap_or_else(|p| p.into_inner()));
        let tcp = (s.is_tcp_sender() && s.tcp.rtt_samples > 0).then(|| TcpFinal {
            retransmits: s.last.retrans.saturating_sub(s.base.retrans),
            max_snd_cwnd: s.tcp.max_cwnd,
            max_rtt_us: s.tcp.max_rtt,
            min_rtt_us: s.tcp.min_rtt,
            mean_rtt_us: u32::try_from(s.tcp.rtt_sum / s.tcp.rtt_samples.max(1))
                .unwrap_or(u32::MAX),
            max_snd_wnd: s.tcp.max_wnd,
        });
        StreamFinal {
            id: s.id,
            role: s.role,
            bytes: s.last.bytes - s.base.bytes,
            duration: stream_end - base_at,
            packets: is_udp_sender.then(|| s.last.packets - s.base.packets),
            tcp,
            udp_rx,
            rr: *s.counters.rr.lock().unwrap_or_else(|p| p.into_inner()),
            writes: s.is_tcp_sender().then(|| s.last.packets - s.base.packets),
            // A TCP receiver's write delays and video frames (kept in its counters' one-way
            // statistics).
            write_one_way: tcp_rx.as_ref().and_then(|r| r.one_way()),
            write_frames: tcp_rx.as_ref().and_then(|r| r.frames()),
        }
    }
}
