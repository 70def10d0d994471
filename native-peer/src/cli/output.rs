//! Live output of `perfpeer test`: iperf3-style text as intervals arrive, one JSON object at the
//! end (`-J`), or JSON lines (`--json-stream`). Layout comes from `perfpeer_shared::format`.

use std::io::{self, Write};
use std::time::{SystemTime, UNIX_EPOCH};

use perfpeer_shared::format::iperf3::{self, Preamble};
use perfpeer_shared::report::{PeerRole, TestResult};
use perfpeer_shared::spec::TestSpec;

use crate::hostinfo;
use crate::session::client::TestEvent;

/// Output style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// iperf3's human layout.
    Text,
    /// One iperf3 `-J` object at the end.
    Json,
    /// iperf3 `--json-stream` lines.
    JsonStream,
}

/// Prints events and the result to stdout.
pub struct Printer<'a> {
    style: Style,
    spec: &'a TestSpec,
    /// The far peer's result page, printed after the summary.
    stored_url: Option<String>,
}

impl<'a> Printer<'a> {
    /// A printer for `spec` in `style`.
    pub fn new(style: Style, spec: &'a TestSpec) -> Self {
        Printer { style, spec, stored_url: None }
    }

    fn write(&self, text: &str) -> io::Result<()> {
        let mut out = io::stdout().lock();
        out.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            out.write_all(b"\n")?;
        }
        out.flush()
    }

    /// Prints one live event (only this end's intervals, as iperf3 does).
    pub fn event(&mut self, ev: &TestEvent) -> io::Result<()> {
        match (ev, self.style) {
            (_, Style::Json) => Ok(()),
            (
                TestEvent::Started {
                    server_addr,
                    sockets,
                    ..
                },
                style,
            ) => {
                let p = Preamble {
                    role: PeerRole::Client,
                    server_addr,
                    spec: self.spec,
                    sockets,
                };
                if style == Style::Text {
                    self.write(&iperf3::text_preamble(&p))?;
                    self.write(&iperf3::text_interval_header(self.spec, PeerRole::Client))
                } else {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map(|d| d.as_millis() as u64)
                        .unwrap_or(0);
                    self.write(&iperf3::json_stream_start(&p, now, &hostinfo::host_info()))
                }
            }
            (
                TestEvent::Interval {
                    role: PeerRole::Client,
                    report,
                },
                Style::Text,
            ) => self.write(&iperf3::text_interval(self.spec, PeerRole::Client, report)),
            (
                TestEvent::Interval {
                    role: PeerRole::Client,
                    report,
                },
                Style::JsonStream,
            ) => self.write(&iperf3::json_stream_interval(self.spec, report)),
            (TestEvent::Stored { url }, _) => {
                self.stored_url = Some(url.clone());
                Ok(())
            }
            (TestEvent::Interval { .. }, _) => Ok(()),
        }
    }

    /// Prints the final result.
    pub fn result(&mut self, result: &TestResult) -> io::Result<()> {
        match self.style {
            Style::Text => {
                self.write(&iperf3::text_summary(result))?;
                match self.stored_url.clone() {
                    Some(url) => self.write(&format!("Result page: {url}")),
                    None => Ok(()),
                }
            }
            Style::Json => {
                self.write(&serde_json::to_string_pretty(&iperf3::json(result)).unwrap_or_default())
            }
            Style::JsonStream => self.write(&iperf3::json_stream_end(result)),
        }
    }

    /// Reports a failure in the JSON styles (text goes to stderr from `main`).
    pub fn error(&mut self, message: &str) -> io::Result<()> {
        match self.style {
            Style::Text => Ok(()),
            Style::Json => self.write(
                &serde_json::to_string_pretty(&serde_json::json!({ "error": message }))
                    .unwrap_or_default(),
            ),
            Style::JsonStream => {
                self.write(&serde_json::json!({ "event": "error", "data": message }).to_string())
            }
        }
    }
}
