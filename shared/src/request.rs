//! What a person asks for, as `perfpeer test`'s flags and the browser's form both say it: one
//! test, a packet-size sweep or a constant-bitrate stream, over TCP, UDP or DCCP. Both build a
//! [`RequestInput`] (the spec their common fields made, and the choices on top of it) and get
//! the same [`TestRequest`] from [`RequestInput::build`]: the same protocol rules, defaults
//! and checks, worded by each in its own terms from a [`RequestError`].

use std::time::Duration;

use crate::control::ClientMsg;
use crate::dccp::DccpSpec;
use crate::format::cbr::{self, StreamError};
use crate::spec::{EndCondition, Protocol, SpecError, TestSpec, ValidSpec};
use crate::sweep::check_request;

/// Seconds per size of a sweep unless a time is given.
pub const SWEEP_SECONDS: u64 = 2;
/// Length of a constant-bitrate stream unless a time or byte count is given: an hour (a cancel
/// ends it early).
pub const STREAM_SECONDS: u64 = 3600;

/// The kind of run asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// One test.
    Test,
    /// One short test per datagram size.
    Sweep(Vec<u32>),
    /// An evenly paced datagram stream: a rate (`48k`, with a length) or a preset (`mp3`).
    Stream(String),
}

/// A request before its defaults and checks.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestInput {
    /// The other peer (or a stock tool's `scheme://host`).
    pub target: String,
    /// Direction, streams, end, options: what the common fields made (its protocol is TCP
    /// unless UDP was asked for).
    pub spec: TestSpec,
    /// The kind of run.
    pub mode: Mode,
    /// DCCP, with its service code and CCID, if asked for.
    pub dccp: Option<DccpSpec>,
    /// Whether a length was given (else the protocol's default).
    pub len_given: bool,
    /// Whether a rate was given (else the protocol's default).
    pub bitrate_given: bool,
    /// Whether a time or a byte count was given (else the mode's default).
    pub end_given: bool,
}

/// A request ready to send: a checked spec, and a sweep's sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRequest {
    /// The other peer.
    pub target: String,
    /// The test (for a sweep: each size's, its `len` replaced per size).
    pub spec: ValidSpec,
    /// Sizes of a packet-size sweep; `None` for one test or a stream.
    pub sweep: Option<Vec<u32>>,
}

impl TestRequest {
    /// The control message that starts it on a peer (`run`, or `sweep` with its sizes).
    pub fn message(&self) -> ClientMsg {
        let spec = TestSpec::clone(&self.spec);
        match &self.sweep {
            Some(sizes) => ClientMsg::Sweep {
                target: self.target.clone(),
                spec,
                sizes: sizes.clone(),
            },
            None => ClientMsg::Run {
                target: self.target.clone(),
                spec,
            },
        }
    }
}

/// Why a request cannot be made.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RequestError {
    /// The spec it makes is not one a peer runs.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The stream's rate and packet size (`text`: the rate as given).
    #[error("{}", stream_words(*.error, .text))]
    Stream {
        /// What is wrong.
        error: StreamError,
        /// The rate or preset as given.
        text: String,
    },
    /// The sweep as a whole.
    #[error("{0}")]
    Sweep(String),
}

fn stream_words(error: StreamError, text: &str) -> String {
    match error {
        StreamError::NotARate => format!(
            "{text:?} is neither a rate (like 48k) nor a preset ({})",
            cbr::preset_names()
        ),
        StreamError::ZeroRate => "a stream needs a rate above 0".into(),
        StreamError::NeedsLen => {
            format!("a stream at {text} needs a length: the bytes in each packet (160 for audio)")
        }
    }
}

impl RequestInput {
    /// The request: datagram modes run over UDP unless DCCP is asked for; a protocol the
    /// common fields did not pick takes its own default length and rate (unless given); a
    /// stream takes its rate and packet size from its preset or rate, and runs an hour unless
    /// told; a sweep's sizes run 2 s each unless told. Then the spec is checked (and a sweep
    /// as a whole).
    pub fn build(self) -> Result<TestRequest, RequestError> {
        let RequestInput {
            target,
            mut spec,
            mode,
            dccp,
            len_given,
            bitrate_given,
            end_given,
        } = self;
        let datagrams = !matches!(mode, Mode::Test);
        let protocol = match (dccp.is_some(), datagrams || spec.protocol == Protocol::Udp) {
            (true, _) => Protocol::Dccp,
            (false, true) => Protocol::Udp,
            (false, false) => spec.protocol,
        };
        if protocol != spec.protocol {
            let defaults = TestSpec::new(protocol);
            spec.protocol = protocol;
            if !len_given {
                spec.len = defaults.len;
            }
            if !bitrate_given {
                spec.bitrate = defaults.bitrate;
            }
        }
        spec.dccp = dccp;
        let mut sweep = None;
        match mode {
            Mode::Test => {}
            Mode::Stream(text) => {
                let (rate, len) = cbr::rate_and_len(&text, len_given.then_some(spec.len))
                    .map_err(|error| RequestError::Stream { error, text })?;
                spec.bitrate = Some(rate);
                spec.len = len;
                if !end_given {
                    spec.end = EndCondition::Time {
                        duration: Duration::from_secs(STREAM_SECONDS),
                    };
                }
            }
            Mode::Sweep(sizes) => {
                if !end_given {
                    spec.end = EndCondition::Time {
                        duration: Duration::from_secs(SWEEP_SECONDS),
                    };
                }
                sweep = Some(sizes);
            }
        }
        if let Some(sizes) = &sweep {
            check_request(&spec, sizes).map_err(RequestError::Sweep)?;
        }
        Ok(TestRequest {
            target,
            spec: ValidSpec::new(spec)?,
            sweep,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Direction;
    use crate::units::BitRate;

    fn input(mode: Mode) -> RequestInput {
        RequestInput {
            target: "pc".into(),
            spec: TestSpec::new(Protocol::Tcp),
            mode,
            dccp: None,
            len_given: false,
            bitrate_given: false,
            end_given: false,
        }
    }

    #[test]
    fn a_plain_test_keeps_its_spec_and_is_checked() {
        let req = input(Mode::Test).build().unwrap();
        assert_eq!(*req.spec, TestSpec::new(Protocol::Tcp));
        assert_eq!(req.sweep, None);
        let mut bad = input(Mode::Test);
        bad.spec.streams = 0;
        assert_eq!(bad.build(), Err(RequestError::Spec(SpecError::Streams(0))));
    }

    #[test]
    fn datagram_modes_switch_to_udp_with_its_defaults_unless_given() {
        let req = input(Mode::Sweep(vec![16, 1400])).build().unwrap();
        assert_eq!(req.spec.protocol, Protocol::Udp);
        assert_eq!(req.spec.len, TestSpec::new(Protocol::Udp).len);
        assert_eq!(
            req.spec.total_time(),
            Some(Duration::from_secs(SWEEP_SECONDS))
        );
        assert_eq!(req.sweep, Some(vec![16, 1400]));
        let mut given = input(Mode::Sweep(vec![16]));
        given.end_given = true;
        given.spec.end = EndCondition::Time {
            duration: Duration::from_secs(5),
        };
        assert_eq!(
            given.build().unwrap().spec.total_time(),
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn a_stream_takes_its_preset_or_its_rate_and_length() {
        let req = input(Mode::Stream("g711".into())).build().unwrap();
        let g711 = cbr::preset("g711").unwrap();
        assert_eq!(
            (req.spec.bitrate, req.spec.len),
            (Some(BitRate(g711.bits_per_second)), g711.len)
        );
        assert_eq!(
            req.spec.total_time(),
            Some(Duration::from_secs(STREAM_SECONDS))
        );
        let needs_len = input(Mode::Stream("48k".into())).build().unwrap_err();
        assert!(
            needs_len.to_string().contains("needs a length"),
            "{needs_len}"
        );
        let mut with_len = input(Mode::Stream("48k".into()));
        with_len.len_given = true;
        with_len.spec.len = 160;
        let req = with_len.build().unwrap();
        assert_eq!(
            (req.spec.bitrate, req.spec.len),
            (Some(BitRate(48_000)), 160)
        );
        assert!(matches!(
            input(Mode::Stream("fast".into())).build(),
            Err(RequestError::Stream {
                error: StreamError::NotARate,
                ..
            })
        ));
    }

    #[test]
    fn dccp_wins_over_udp_and_a_sweep_is_checked_whole() {
        let mut dccp = input(Mode::Test);
        dccp.dccp = Some(DccpSpec {
            service: crate::dccp::DEFAULT_SERVICE,
            ccid: Some(3),
        });
        let req = dccp.build().unwrap();
        assert_eq!(req.spec.protocol, Protocol::Dccp);
        assert_eq!(req.spec.len, TestSpec::new(Protocol::Dccp).len);
        let mut both_ways = input(Mode::Sweep(vec![64]));
        both_ways.spec.direction = Direction::Bidir;
        assert!(matches!(both_ways.build(), Err(RequestError::Sweep(_))));
        assert!(matches!(
            input(Mode::Sweep(vec![])).build(),
            Err(RequestError::Sweep(_))
        ));
    }
}
