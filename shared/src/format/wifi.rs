//! The Wi-Fi link in a result's text and JSON: one compact line under each interval (this
//! end's radio, and the far end's when it has one), a summary after the totals, the
//! `wifi` objects of `-J` (per interval and in `end`, beside iperf3's keys, which stock
//! parsers skip), and a history row's three figures. Figures come from `crate::wifi`;
//! nothing is derived here.

use serde_json::{Map, Value};

use crate::report::{IntervalReport, SideReport, TestResult};
use crate::units::format_rate;
use crate::wifi::{LinkBrief, LinkSample, LinkSummary, RateShare, WifiInterface};

/// Which end a line is about.
fn end_word(far: bool) -> &'static str {
    if far { "wifi far" } else { "wifi" }
}

/// One interval's line: `  wifi     wlan1 → 02:…: -30 dBm, tx HT MCS 15 … 144.4 Mbit/s, rx …,
/// retries 12 (0.5 %), failed 0, expected 47.1 Mbit/s, busy 12 %`. Figures not given are left
/// out.
pub fn interval_line(sample: &LinkSample, far: bool) -> String {
    let mut parts = Vec::new();
    if let Some(s) = sample.signal_dbm {
        parts.push(format!("{s} dBm"));
    }
    if let Some(r) = &sample.tx_rate {
        parts.push(format!("tx {}", r.words()));
    }
    if let Some(r) = &sample.rx_rate {
        parts.push(format!("rx {}", r.words()));
    }
    if let Some(n) = sample.tx_retries {
        match sample.retries_percent {
            Some(p) => parts.push(format!("retries {n} ({p:.1} %)")),
            None => parts.push(format!("retries {n}")),
        }
    }
    if let Some(n) = sample.tx_failed {
        parts.push(format!("failed {n}"));
    }
    if let Some(n) = sample.beacon_loss.filter(|n| *n > 0) {
        parts.push(format!("beacon loss {n}"));
    }
    if let Some(m) = sample.expected_mbps {
        parts.push(format!("expected {m:.1} Mbit/s"));
    }
    if let Some(b) = sample.channel.and_then(|c| c.busy_percent) {
        parts.push(format!("busy {b:.0} %"));
    }
    format!(
        "  {:<8} {} {} {}: {}",
        end_word(far),
        sample.iface,
        sample.mode.word(),
        sample.station,
        parts.join(", ")
    )
}

fn rates_words(rates: &[RateShare]) -> String {
    rates
        .iter()
        .map(|r| match r.mbps {
            Some(m) => format!("{} {m:.1} Mbit/s {:.0} %", r.rate, r.share_percent),
            None => format!("{} {:.0} %", r.rate, r.share_percent),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The summary of one end's link: signal spread, rates used, retries, airtime, efficiency.
pub fn summary_text(summary: &LinkSummary, far: bool) -> String {
    let who = if far { "far end" } else { "this end" };
    let mut out = format!(
        "Wi-Fi at {who}: {} ({} {}), {} intervals\n",
        summary.iface,
        summary.mode.word(),
        summary.station,
        summary.intervals
    );
    if let Some(s) = summary.signal_dbm {
        out += &format!(
            "  signal       {:.0} / {:.0} / {:.0} dBm (min / median / max)\n",
            s.min, s.median, s.max
        );
    }
    if !summary.tx_rates.is_empty() {
        out += &format!("  tx rates     {}\n", rates_words(&summary.tx_rates));
    }
    if !summary.rx_rates.is_empty() {
        out += &format!("  rx rates     {}\n", rates_words(&summary.rx_rates));
    }
    let mut counts = Vec::new();
    if let (Some(r), Some(p)) = (summary.tx_retries, summary.tx_packets) {
        let share = summary
            .retries_percent
            .map_or(String::new(), |s| format!(" ({s:.1} %)"));
        counts.push(format!("retries {r} of {p} packets{share}"));
    }
    if let Some(f) = summary.tx_failed {
        counts.push(format!("failed {f}"));
    }
    if let (Some(tx), Some(rx)) = (summary.tx_airtime_us, summary.rx_airtime_us) {
        counts.push(format!(
            "airtime tx {:.0} ms rx {:.0} ms",
            tx as f64 / 1e3,
            rx as f64 / 1e3
        ));
    }
    if !counts.is_empty() {
        out += &format!("  link         {}\n", counts.join(", "));
    }
    if let (Some(e), Some(phy)) = (summary.efficiency_percent, summary.phy_mbps) {
        out += &format!("  goodput / PHY rate {e:.0} % (median PHY rate {phy:.1} Mbit/s)\n");
    }
    out
}

/// The Wi-Fi summaries of a result as text (this end's, then the far end's), empty without
/// any.
pub fn result_text(result: &TestResult) -> String {
    let mut out = String::new();
    if let Some(s) = result.local.link_summary() {
        out += &summary_text(&s, false);
    }
    if let Some(s) = result.remote.as_ref().and_then(|r| r.link_summary()) {
        out += &summary_text(&s, true);
    }
    out
}

/// A history row's Wi-Fi figures: `Wi-Fi -52 dBm · 144 Mbit/s PHY · 2.1 % retries`, `Wi-Fi
/// (other peer) …` when the radio is the other peer's; figures not given are left out, and
/// without any the words are empty. `perfpeer results list` and the browser's History say it
/// so.
pub fn brief_words(brief: &LinkBrief) -> String {
    let mut parts = Vec::new();
    if let Some(s) = brief.signal_dbm {
        parts.push(format!("{s:.0} dBm"));
    }
    if let Some(m) = brief.phy_mbps {
        parts.push(format!("{} PHY", format_rate(m * 1e6)));
    }
    if let Some(r) = brief.retries_percent {
        parts.push(format!("{r:.1} % retries"));
    }
    if parts.is_empty() {
        return String::new();
    }
    let whose = if brief.far { " (other peer)" } else { "" };
    format!("Wi-Fi{whose} {}", parts.join(" · "))
}

/// The far end's interval that best matches `local` (the nearest end time), if it has a
/// reading.
pub fn far_match<'a>(local: &IntervalReport, far: &'a [IntervalReport]) -> Option<&'a LinkSample> {
    far.iter()
        .min_by_key(|f| f.end.abs_diff(local.end))
        .filter(|f| {
            f.end.abs_diff(local.end) * 2
                <= local
                    .end
                    .saturating_sub(local.start)
                    .max(f.end.saturating_sub(f.start))
        })
        .and_then(|f| f.wifi.as_deref())
}

fn pair(local: Option<Value>, far: Option<Value>) -> Option<Value> {
    if local.is_none() && far.is_none() {
        return None;
    }
    let mut m = Map::new();
    if let Some(v) = local {
        m.insert("local".into(), v);
    }
    if let Some(v) = far {
        m.insert("remote".into(), v);
    }
    Some(Value::Object(m))
}

/// `-J`'s `wifi` of one interval: `{"local": …, "remote": …}` (each side where it has a
/// radio), `None` when neither has.
pub fn interval_json(local: &IntervalReport, far: Option<&[IntervalReport]>) -> Option<Value> {
    pair(
        local.wifi.as_ref().map(super::json_value),
        far.and_then(|f| far_match(local, f)).map(super::json_value),
    )
}

/// `-J`'s `end.wifi`: each side's summary.
pub fn end_json(result: &TestResult) -> Option<Value> {
    pair(
        result.local.link_summary().as_ref().map(super::json_value),
        result
            .remote
            .as_ref()
            .and_then(SideReport::link_summary)
            .as_ref()
            .map(super::json_value),
    )
}

/// A host's radios as `perfpeer wifi` prints them: one block per interface, a line per
/// station.
pub fn interfaces_text(list: &[WifiInterface]) -> String {
    let mut out = String::new();
    for i in list {
        out += &format!("{} ({}, {})", i.iface, i.mode.word(), i.mac);
        if let Some(ssid) = &i.ssid {
            out += &format!(" ssid \"{}\"", ssid.escape_debug());
        }
        if let Some(f) = i.freq_mhz {
            out += &format!(", {f} MHz");
        }
        if let Some(c) = i.channel {
            out += &format!(" (channel {c})");
        }
        if let Some(w) = i.width_mhz {
            out += &format!(", {w} MHz wide");
        }
        out.push('\n');
        if i.stations.is_empty() {
            out += "  no stations\n";
        }
        for s in &i.stations {
            let mut parts = vec![s.mac.clone().unwrap_or_else(|| "station".into())];
            if let Some(sig) = s.signal_dbm {
                parts.push(format!("{sig} dBm"));
            }
            if let Some(r) = &s.tx_rate {
                parts.push(format!("tx {}", r.words()));
            }
            if let Some(r) = &s.rx_rate {
                parts.push(format!("rx {}", r.words()));
            }
            if let Some(c) = s.connected_s {
                parts.push(format!("connected {c} s"));
            }
            out += &format!("  {}\n", parts.join(", "));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wifi::{GuardInterval, Mode, Rate, RateKind};

    fn sample() -> LinkSample {
        LinkSample {
            iface: "wlan1".into(),
            mode: Mode::Station,
            station: "02:00:00:00:00:00".into(),
            signal_dbm: Some(-30),
            signal_avg_dbm: Some(-30),
            chain_signal_dbm: Vec::new(),
            tx_rate: Some(Rate {
                kind: RateKind::Ht,
                mcs: Some(15),
                nss: Some(2),
                width_mhz: Some(20),
                gi: Some(GuardInterval::Short),
                mbps: Some(144.4),
            }),
            rx_rate: None,
            tx_packets: Some(1000),
            tx_retries: Some(5),
            tx_failed: Some(0),
            retries_percent: Some(0.5),
            beacon_loss: Some(0),
            expected_mbps: Some(47.149),
            tx_airtime_us: None,
            rx_airtime_us: None,
            connected_s: Some(5),
            channel: None,
        }
    }

    #[test]
    fn an_interval_line_leaves_out_what_is_not_given() {
        let line = interval_line(&sample(), false);
        assert_eq!(
            line,
            "  wifi     wlan1 station 02:00:00:00:00:00: -30 dBm, tx HT MCS 15 2SS 20MHz short GI \
             144.4 Mbit/s, retries 5 (0.5 %), failed 0, expected 47.1 Mbit/s"
        );
        assert!(interval_line(&sample(), true).starts_with("  wifi far "));
    }

    #[test]
    fn a_brief_says_its_figures_and_whose_radio() {
        let mut brief = LinkBrief {
            signal_dbm: Some(-52.4),
            phy_mbps: Some(144.4),
            retries_percent: Some(2.06),
            far: false,
        };
        assert_eq!(
            brief_words(&brief),
            "Wi-Fi -52 dBm · 144 Mbit/s PHY · 2.1 % retries"
        );
        (brief.far, brief.phy_mbps, brief.retries_percent) = (true, Some(1201.0), None);
        assert_eq!(
            brief_words(&brief),
            "Wi-Fi (other peer) -52 dBm · 1.20 Gbit/s PHY"
        );
        brief.signal_dbm = None;
        brief.phy_mbps = None;
        assert_eq!(brief_words(&brief), "", "nothing given, nothing said");
    }

    #[test]
    fn json_pairs_each_side_where_it_has_a_radio() {
        assert_eq!(pair(None, None), None);
        let v = pair(Some(super::super::json_value(&sample())), None).unwrap();
        assert_eq!(v["local"]["tx_rate"]["mcs"], 15);
        assert_eq!(v["local"]["tx_rate"]["gi"], "short");
        assert!(
            v["local"].get("tx_airtime_us").is_none(),
            "not given is absent"
        );
        assert!(v.get("remote").is_none());
    }
}
