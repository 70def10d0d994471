//! The medium itself: for every frame hwsim hands over, which tries of its retry chain get
//! through (a seeded loss per try, extra loss above an MCS, outages), a copy to every other
//! radio when one did, the sender's status, and the counts printed when it stops (SIGTERM).
//! SIGUSR1 starts the extra loss at once.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use perfpeer_proto::netlink::{self, Reply};

use super::frame::{self, Frame, TxRate};
use super::nl::Nl;

/// SIGTERM or SIGINT came: print the counts and leave.
static STOP: AtomicBool = AtomicBool::new(false);
/// SIGUSR1 came: the extra loss starts now.
static EXTRA_NOW: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(signal: libc::c_int) {
    if signal == libc::SIGUSR1 {
        EXTRA_NOW.store(true, Ordering::Relaxed);
    } else {
        STOP.store(true, Ordering::Relaxed);
    }
}

/// The medium's settings (see `USAGE`).
#[derive(Debug, Clone)]
pub(crate) struct Config {
    /// Loss probability of each try.
    pub(crate) loss: f64,
    /// Extra loss of tries above `threshold`, from `extra_after` (or SIGUSR1) on.
    pub(crate) extra: f64,
    /// The highest modulation (HT MCS mod 8) without the extra loss.
    pub(crate) threshold: u8,
    pub(crate) extra_after: Duration,
    /// The outage at the start of every second.
    pub(crate) outage: Duration,
    /// Management and control frames are lost too (else only data frames).
    pub(crate) all_frames: bool,
    pub(crate) seed: u64,
    pub(crate) signal_dbm: i32,
    /// hwsim's radios 0..radios receive from the start (others once they send).
    pub(crate) radios: u8,
}

/// xorshift64*: a seeded, repeatable generator (no dependency for a test helper).
struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// The radios it knows, its generator and what it counted.
struct Medium {
    config: Config,
    rng: Rng,
    start: Instant,
    radios: Vec<[u8; 6]>,
    seq: u32,
    frames: u64,
    delivered: u64,
    failed: u64,
    attempts: u64,
    /// Errors the kernel answered, by errno (ENOBUFS: notifications lost to a full buffer).
    kernel_errors: BTreeMap<i32, u64>,
    by_rate: BTreeMap<String, u64>,
    /// Unicast data frames by the tries their rate chain offered.
    chains: BTreeMap<u32, u64>,
}

impl Medium {
    fn new(config: Config) -> Medium {
        // hwsim's radio addresses: 42:00:00:00:NN:00, NN the radio's number.
        let radios = (0..config.radios).map(|n| [0x42, 0, 0, 0, n, 0]).collect();
        Medium {
            rng: Rng(config.seed.max(1)),
            start: Instant::now(),
            radios,
            config,
            seq: 1,
            frames: 0,
            delivered: 0,
            failed: 0,
            attempts: 0,
            kernel_errors: BTreeMap::new(),
            by_rate: BTreeMap::new(),
            chains: BTreeMap::new(),
        }
    }

    fn lost(&mut self, rate: TxRate, lossy: bool) -> bool {
        if !lossy {
            return false;
        }
        let elapsed = self.start.elapsed();
        if elapsed.subsec_nanos() < self.config.outage.subsec_nanos() {
            return true;
        }
        let extra = (elapsed >= self.config.extra_after || EXTRA_NOW.load(Ordering::Relaxed))
            && rate.modulation().is_some_and(|m| m > self.config.threshold);
        self.rng.unit() < self.config.loss || (extra && self.rng.unit() < self.config.extra)
    }

    /// The tries of `f`'s chain, in order, until one gets through: the tries used per rate,
    /// and the rate that got through.
    fn tries(&mut self, f: &Frame<'_>) -> ([TxRate; 4], Option<TxRate>) {
        let lossy = f.is_data() || self.config.all_frames;
        let mut used = [TxRate::UNUSED; 4];
        for (i, (slot, rate)) in used.iter_mut().zip(f.rates).enumerate() {
            // A frame without acknowledgement is sent once, at its first rate.
            if rate.idx < 0 || (f.no_ack() && i > 0) {
                break;
            }
            let tries = if f.no_ack() { 1 } else { rate.count.max(1) };
            *slot = rate.with_count(0);
            for _ in 0..tries {
                slot.count += 1;
                self.attempts += 1;
                if !self.lost(rate, lossy) {
                    return (used, Some(rate));
                }
            }
        }
        (used, None)
    }

    /// The messages answering one frame: a copy to every other radio when a try got through,
    /// then the sender's status.
    fn handle(&mut self, family: u16, f: &Frame<'_>) -> Vec<Vec<u8>> {
        self.frames += 1;
        if !self.radios.contains(&f.transmitter) {
            self.radios.push(f.transmitter);
        }
        if f.is_data() && !f.no_ack() {
            let offered = f.rates.iter().take_while(|r| r.idx >= 0);
            let offered = offered.map(|r| u32::from(r.count)).sum();
            *self.chains.entry(offered).or_default() += 1;
        }
        let (used, got_through) = self.tries(f);
        let signal = self.config.signal_dbm;
        let mut out = Vec::new();
        match got_through {
            Some(rate) => {
                self.delivered += 1;
                *self.by_rate.entry(rate.label()).or_default() += 1;
                for radio in self.radios.iter().filter(|r| **r != f.transmitter) {
                    self.seq = self.seq.wrapping_add(1);
                    out.push(f.delivery(family, self.seq, radio, rate, signal));
                }
            }
            None if !f.no_ack() => self.failed += 1,
            None => {}
        }
        self.seq = self.seq.wrapping_add(1);
        out.push(f.status(family, self.seq, &used, got_through.is_some(), signal));
        out
    }

    fn summary(&self) -> String {
        fn list<K: std::fmt::Display>(m: &BTreeMap<K, u64>, prefix: &str) -> String {
            let items: Vec<String> = m.iter().map(|(k, n)| format!("{prefix}{k}: {n}")).collect();
            items.join(", ")
        }
        format!(
            "hwsim_medium: {} frames, {} delivered in {} attempts, {} failed, {} kernel errors \
             ({}); delivered at {}; tries offered per data frame {}",
            self.frames,
            self.delivered,
            self.attempts,
            self.failed,
            self.kernel_errors.values().sum::<u64>(),
            list(&self.kernel_errors, "errno "),
            list(&self.by_rate, ""),
            list(&self.chains, ""),
        )
    }

    /// Reads one datagram's frames and answers them.
    fn take(&mut self, nl: &mut Nl, family: u16) -> Result<(), String> {
        let Some(datagram) = nl.recv()? else {
            return Ok(());
        };
        if datagram.is_empty() {
            *self.kernel_errors.entry(libc::ENOBUFS).or_default() += 1;
            return Ok(());
        }
        let mut out = Vec::new();
        for reply in netlink::replies(datagram) {
            match reply.map_err(|e| e.to_string())? {
                Reply::Genl {
                    cmd: frame::CMD_FRAME,
                    attrs,
                    ..
                } => match Frame::parse(attrs) {
                    Ok(f) => out.extend(self.handle(family, &f)),
                    Err(e) => eprintln!("hwsim_medium: {e}"),
                },
                Reply::Error { errno, .. } if errno != 0 && self.frames == 0 => {
                    return Err(format!("registering with hwsim: errno {errno}"));
                }
                Reply::Error { errno, .. } if errno != 0 => {
                    *self.kernel_errors.entry(errno).or_default() += 1;
                }
                _ => {}
            }
        }
        out.iter().try_for_each(|msg| nl.send(msg))
    }
}

/// Registers as hwsim's medium and serves it until SIGTERM; then prints the counts.
pub(crate) fn run(config: Config) -> Result<(), String> {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to atomics.
    unsafe {
        libc::signal(libc::SIGTERM, handler);
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGUSR1, handler);
    }
    let mut nl = Nl::open(Duration::from_millis(200))?;
    let family = nl.family(frame::FAMILY)?;
    let seq = nl.next_seq();
    nl.send(&frame::register(family, seq))?;
    eprintln!(
        "hwsim_medium: registered with {} (family {family}), {config:?}",
        frame::FAMILY
    );
    let mut m = Medium::new(config);
    while !STOP.load(Ordering::Relaxed) {
        m.take(&mut nl, family)?;
    }
    eprintln!("{}", m.summary());
    Ok(())
}

#[cfg(test)]
mod tests {
    use perfpeer_proto::netlink::{self, Reply};

    use super::*;

    fn config(loss: f64) -> Config {
        Config {
            loss,
            extra: 0.0,
            threshold: 7,
            extra_after: Duration::ZERO,
            outage: Duration::ZERO,
            all_frames: false,
            seed: 7,
            signal_dbm: -60,
            radios: 2,
        }
    }

    fn answers(m: &mut Medium, data: bool, flags: u32) -> Vec<Vec<u8>> {
        let bytes = frame::sample_frame(data, flags);
        let Some(Ok(Reply::Genl { attrs, .. })) = netlink::replies(&bytes).next() else {
            panic!("a frame message");
        };
        m.handle(33, &Frame::parse(attrs).expect("parses"))
    }

    #[test]
    fn without_loss_each_frame_goes_through_at_its_first_try() {
        let mut m = Medium::new(config(0.0));
        let out = answers(&mut m, true, 1);
        // A copy to radio 0, then the status to radio 1.
        assert_eq!(out.len(), 2);
        assert_eq!((m.delivered, m.attempts, m.failed), (1, 1, 0));
        assert_eq!(m.chains.get(&9), Some(&1));
    }

    #[test]
    fn a_lost_frame_uses_its_whole_chain_and_fails() {
        let mut m = Medium::new(config(1.0));
        let out = answers(&mut m, true, 1);
        assert_eq!(out.len(), 1, "only the status");
        assert_eq!((m.delivered, m.attempts, m.failed), (0, 9, 1));
        // Management frames are not lost unless -a; a frame without ack is sent once.
        answers(&mut m, false, 1);
        assert_eq!(m.delivered, 1);
        let mut all = Medium::new(Config {
            all_frames: true,
            ..config(1.0)
        });
        answers(&mut all, false, 2);
        assert_eq!((all.attempts, all.failed), (1, 0));
    }

    #[test]
    fn the_loss_is_seeded() {
        let runs: Vec<u64> = (0..2)
            .map(|_| {
                let mut m = Medium::new(config(0.5));
                for _ in 0..200 {
                    answers(&mut m, true, 1);
                }
                m.attempts
            })
            .collect();
        assert_eq!(runs[0], runs[1]);
        assert!((300..500).contains(&runs[0]), "{runs:?}");
    }
}
