//! Live output of `perfpeer test`: iperf3-style text as intervals arrive, one JSON object at the
//! end (`-J`), or JSON lines (`--json-stream`). Layout comes from `perfpeer_shared::format`.

use std::io;

use perfpeer_shared::format::iperf3::{self, Preamble, Voice};
use perfpeer_shared::format::wifi;
use perfpeer_shared::report::{PeerRole, TestResult};
use perfpeer_shared::rr::RrFinal;
use perfpeer_shared::spec::{Bursts, TestSpec};

use crate::hostinfo;
use crate::session::events::TestEvent;

/// Output style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    /// iperf3's human layout.
    Text,
    /// One iperf3 `-J` object at the end.
    Json,
    /// iperf3 `--json-stream` lines.
    JsonStream,
}

/// Prints events and the result to stdout.
pub(super) struct Printer<'a> {
    style: Style,
    spec: &'a TestSpec,
    voice: Voice,
    /// Where a peer kept the result (its id and page): printed after the summary, and in the
    /// JSON as `perfpeer.result_id` and `perfpeer.result_url`, for a script to hand the page on.
    stored: Option<(String, String)>,
    /// The far end's own output of the test (`--get-server-output`).
    far_end_output: Option<(Option<String>, Option<serde_json::Value>)>,
    /// Whether the Wi-Fi link is printed (`--no-wifi` leaves it out).
    wifi: bool,
}

impl<'a> Printer<'a> {
    /// A printer for `spec` in `style`.
    pub(super) fn new(style: Style, spec: &'a TestSpec) -> Self {
        Printer {
            style,
            spec,
            voice: Voice::Perfpeer,
            stored: None,
            far_end_output: None,
            wifi: true,
        }
    }

    /// Prints the Wi-Fi link (both ends' radios) or leaves it out.
    pub(super) fn with_wifi(mut self, shown: bool) -> Self {
        self.wifi = shown;
        self
    }

    /// Prints in `voice` (stock iperf3's for `perfpeer iperf3`).
    pub(super) fn with_voice(mut self, voice: Voice) -> Self {
        self.voice = voice;
        self
    }

    fn write(&self, text: &str) -> io::Result<()> {
        if text.ends_with('\n') {
            super::emit(text)
        } else {
            super::emit(&format!("{text}\n"))
        }
    }

    /// Prints one live event (only this end's intervals, as iperf3 does).
    pub(super) fn event(&mut self, ev: &TestEvent) -> io::Result<()> {
        match (ev, self.style) {
            (TestEvent::FarEndOutput { text, json }, _) => {
                self.far_end_output = Some((text.clone(), json.clone()));
                Ok(())
            }
            // Kept for the end in every style; a JSON stream also says it now.
            (TestEvent::Stored { id, url }, style) => {
                self.stored = Some((id.clone(), url.clone()));
                if style == Style::JsonStream {
                    let line = serde_json::json!({
                        "event": "perfpeer_stored",
                        "data": { "result_id": id, "result_url": url },
                    });
                    return self.write(&line.to_string());
                }
                Ok(())
            }
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
                    let now = crate::util::unix_ms_now();
                    self.write(&iperf3::json_stream_start(&p, now, &hostinfo::host_info()))
                }
            }
            (
                TestEvent::Interval {
                    role: PeerRole::Client,
                    report,
                },
                Style::Text,
            ) => {
                self.write(&iperf3::text_interval_as(
                    self.spec,
                    PeerRole::Client,
                    report,
                    self.voice.rate(),
                ))?;
                match report.wifi.as_ref().filter(|_| self.wifi) {
                    Some(w) => self.write(&wifi::interval_line(w, false)),
                    None => Ok(()),
                }
            }
            // The far end's radio, as its interval arrives.
            (
                TestEvent::Interval {
                    role: PeerRole::Server,
                    report,
                },
                style,
            ) if self.wifi && report.wifi.is_some() => match style {
                Style::Text => self.write(&wifi::interval_line(
                    report.wifi.as_ref().expect("checked"),
                    true,
                )),
                _ => match iperf3::json_stream_far_wifi(report) {
                    Some(line) => self.write(&line),
                    None => Ok(()),
                },
            },
            (
                TestEvent::Interval {
                    role: PeerRole::Client,
                    report,
                },
                Style::JsonStream,
            ) => self.write(&iperf3::json_stream_interval(self.spec, report)),
            (TestEvent::Interval { .. }, _) => Ok(()),
        }
    }

    /// Prints the final result (with a request/response line or `perfpeer.rr` object in `--rr`).
    pub(super) fn result(&mut self, result: &TestResult) -> io::Result<()> {
        let without;
        let result = if self.wifi {
            result
        } else {
            without = result.without_wifi();
            &without
        };
        let rr = rr_of(result);
        match self.style {
            Style::Text => {
                self.write(&iperf3::text_summary_as(result, self.voice))?;
                if let Some((fin, secs, bursts)) = rr {
                    self.write(&rr_text(&fin, secs, bursts))?;
                }
                if let Some(load) = &result.working_load {
                    self.write(&format!("\nWorking load: {}", load.words()))?;
                }
                let link = wifi::result_text(result);
                if !link.is_empty() {
                    self.write(&format!("\n{link}"))?;
                }
                if let Some(verdict) = result.verdict() {
                    self.write(&format!("\nVerdict: {}\n", verdict.line()))?;
                }
                if let Some(text) = self.far_end_output.as_ref().and_then(|(t, _)| t.as_deref()) {
                    self.write(&format!("\nServer output:\n{text}"))?;
                }
                match self.stored.clone() {
                    Some((_, url)) => self.write(&format!("Result page: {url}")),
                    None => Ok(()),
                }
            }
            Style::Json => {
                let mut json = iperf3::json(result);
                if let Some(obj) = json
                    .get_mut("perfpeer")
                    .and_then(serde_json::Value::as_object_mut)
                {
                    if let Some((fin, secs, bursts)) = rr {
                        obj.insert("rr".into(), rr_json(&fin, secs, bursts));
                    }
                    if let Some((id, url)) = &self.stored {
                        obj.insert("result_id".into(), id.clone().into());
                        obj.insert("result_url".into(), url.clone().into());
                    }
                }
                if let (Some((text, far_json)), Some(top)) =
                    (self.far_end_output.take(), json.as_object_mut())
                {
                    if let Some(v) = far_json {
                        top.insert("server_output_json".into(), v);
                    }
                    if let Some(t) = text {
                        top.insert("server_output_text".into(), t.into());
                    }
                }
                self.write(&perfpeer_shared::format::pretty_json(&json).unwrap_or_default())
            }
            Style::JsonStream => self.write(&iperf3::json_stream_end(result)),
        }
    }

    /// Reports a failure in the JSON styles (text goes to stderr from `main`).
    pub(super) fn error(&mut self, message: &str) -> io::Result<()> {
        match self.style {
            Style::Text => Ok(()),
            Style::Json => self.write(&iperf3::json_error(message, &hostinfo::host_info())),
            Style::JsonStream => self.write(&iperf3::json_stream_error(message)),
        }
    }
}

/// The request/response figures of a `--rr` test (from whichever end sent the requests), the
/// seconds they cover, and the bursts of a bounce-back test.
fn rr_of(result: &TestResult) -> Option<(RrFinal, f64, Option<Bursts>)> {
    let bursts = result.spec.rr.and_then(|r| r.bursts);
    result.rr_final().map(|(fin, secs)| (fin, secs, bursts))
}

fn rr_json(rr: &RrFinal, seconds: f64, bursts: Option<Bursts>) -> serde_json::Value {
    let mut v = perfpeer_shared::format::json_value(rr);
    if let Some(obj) = v.as_object_mut() {
        obj.insert("seconds".into(), seconds.into());
        obj.insert(
            "transactions_per_second".into(),
            rr.transactions_per_second(seconds).into(),
        );
        if let Some(b) = bursts {
            obj.insert("bursts".into(), perfpeer_shared::format::json_value(&b));
            if let Some(rps) = rr.requests_per_second_at_mean() {
                obj.insert("requests_per_second_at_mean".into(), rps.into());
            }
        }
    }
    v
}

fn rr_text(rr: &RrFinal, seconds: f64, bursts: Option<Bursts>) -> String {
    let mut line = String::new();
    if let Some(b) = bursts {
        let rps = rr
            .requests_per_second_at_mean()
            .map_or_else(String::new, |r| {
                format!(", {r:.0} rps at the mean round trip")
            });
        line += &format!(
            "Bounce-back: bursts of {} every {:.3} s, answers held {:.3} ms{rps}\n",
            b.count,
            f64::from(b.period_us) / 1e6,
            f64::from(b.hold_us) / 1e3
        );
    }
    line += &format!(
        "Request/response: {} transactions of {} B / {} B in {:.2} s = {:.0} trans/s",
        rr.transactions,
        rr.request_len,
        rr.response_len,
        seconds,
        rr.transactions_per_second(seconds)
    );
    if let Some(t) = rr.rtt {
        line += &format!(
            "\nRound trip (us): min {:.1}  mean {:.1}  p50 {:.1}  p90 {:.1}  p99 {:.1}  max {:.1}",
            t.min_us, t.mean_us, t.p50_us, t.p90_us, t.p99_us, t.max_us
        );
    }
    line
}
