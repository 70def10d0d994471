//! What perfpeer reports about the Wi-Fi link in the guest, held against iw and against what
//! the test did to the link: every interval has both ends' samples; their signal and MCS agree
//! with iw; a stepped rx_rssi moves the far end's signal by the step; a lossy medium shows as
//! retries, failures, a lower expected throughput and a lower MCS. Relations, never exact
//! rates (docs/wifi-vm.md "Fragile").

use serde_json::Value;

use super::iw::IwStation;
use super::script::{Cli, STEP_DB};

/// The AP's and the station's interface MAC addresses (hwsim's radios 0 and 1).
const AP_MAC: &str = "02:00:00:00:00:00";
const STA_MAC: &str = "02:00:00:00:01:00";

/// Both sides' `iw station dump` read right after a case: (AP's view, station's view).
pub type IwPair = (IwStation, IwStation);

/// Every interval's sample of one end (`local` or `remote`); panics naming the interval that
/// has none.
pub fn samples<'a>(name: &str, v: &'a Value, end: &str) -> Vec<&'a Value> {
    let intervals = v["intervals"]
        .as_array()
        .unwrap_or_else(|| panic!("{name}: no intervals: {v}"));
    assert!(!intervals.is_empty(), "{name}: no intervals: {v}");
    intervals
        .iter()
        .enumerate()
        .map(|(i, iv)| {
            iv.pointer(&format!("/wifi/{end}"))
                .filter(|s| s.is_object())
                .unwrap_or_else(|| panic!("{name}: interval {i} has no wifi.{end}: {iv}"))
        })
        .collect()
}

fn int(s: &Value, pointer: &str) -> Option<i64> {
    s.pointer(pointer).and_then(Value::as_i64)
}

fn num(s: &Value, pointer: &str) -> Option<f64> {
    s.pointer(pointer).and_then(Value::as_f64)
}

/// A sample's tx MCS (HT index).
pub fn mcs(s: &Value) -> Option<i64> {
    int(s, "/tx_rate/mcs")
}

/// The whole intervals only (the last one may be a fraction of a second).
fn full<'a>(v: &Value, samples: Vec<&'a Value>) -> Vec<&'a Value> {
    let seconds: Vec<f64> = v["intervals"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|iv| num(iv, "/sum/seconds").unwrap_or(1.0))
                .collect()
        })
        .unwrap_or_default();
    samples
        .into_iter()
        .zip(seconds.iter().chain(std::iter::repeat(&1.0)))
        .filter(|(_, s)| **s >= 0.9)
        .map(|(x, _)| x)
        .collect()
}

/// Which iw reading is whose: (local, remote) for where the CLI ran.
fn by_end(cli: Cli, iw: &IwPair) -> (&IwStation, &IwStation) {
    match cli {
        Cli::Station => (&iw.1, &iw.0),
        Cli::Ap => (&iw.0, &iw.1),
    }
}

/// (interface, mode, station) each end must name for where the CLI ran.
fn identity(cli: Cli, end: &str) -> (&'static str, &'static str, &'static str) {
    let station_side = (cli == Cli::Station) == (end == "local");
    if station_side {
        ("wlan1", "station", AP_MAC)
    } else {
        ("wlan0", "ap", STA_MAC)
    }
}

fn rate_words(s: &Value) -> String {
    let r = &s["tx_rate"];
    match (int(r, "/mcs"), num(r, "/mbps")) {
        (Some(m), Some(mbps)) => format!("MCS {m} {} {mbps:.1}", r["gi"].as_str().unwrap_or("?")),
        (None, Some(mbps)) => format!("{mbps:.1} Mbit/s"),
        _ => "no rate".into(),
    }
}

/// A VO-marked run on the perfect medium: both ends in every interval with signal and an HT
/// tx rate (MCS, width, GI); the last interval agrees with iw read right after.
pub fn placement(name: &str, cli: Cli, v: &Value, iw: &IwPair) -> String {
    assert_eq!(v["perfpeer"]["status"], "complete", "{name}: {v}");
    let (iw_local, iw_remote) = by_end(cli, iw);
    let mut words = vec![format!("{name}:")];
    for (end, iw) in [("local", iw_local), ("remote", iw_remote)] {
        let all = samples(name, v, end);
        let (iface, mode, station) = identity(cli, end);
        for (i, s) in all.iter().enumerate() {
            let at = format!("{name} interval {i} {end}");
            assert_eq!(s["iface"], iface, "{at}: {s}");
            assert_eq!(s["mode"], mode, "{at}: {s}");
            assert_eq!(s["station"], station, "{at}: {s}");
            assert!(int(s, "/signal_dbm").is_some(), "{at}: no signal: {s}");
            assert_eq!(s["tx_rate"]["kind"], "ht", "{at}: not an HT rate: {s}");
            assert!(mcs(s).is_some(), "{at}: no MCS: {s}");
            assert!(
                int(s, "/tx_rate/width_mhz").is_some(),
                "{at}: no width: {s}"
            );
            assert!(s["tx_rate"]["gi"].is_string(), "{at}: no GI: {s}");
        }
        let last = all.last().expect("intervals");
        let signal = int(last, "/signal_dbm").expect("checked");
        let iw_signal = iw
            .signal
            .unwrap_or_else(|| panic!("{name}: iw has no signal: {iw:?}"));
        assert!(
            (signal - iw_signal).abs() <= 3,
            "{name} {end}: signal {signal} dBm, iw {iw_signal} dBm"
        );
        // The MCS at the test's end is iw's unless rate control was still moving.
        let seen: Vec<i64> = all.iter().filter_map(|s| mcs(s)).collect();
        let steady = seen.windows(2).all(|w| w[0] == w[1]);
        let iw_mcs = iw.tx.and_then(|r| r.mcs).map(|m| m.cast_signed());
        if steady {
            assert_eq!(
                iw_mcs,
                seen.last().copied(),
                "{name} {end}: MCS {seen:?} in the intervals, iw {iw:?}"
            );
        }
        let summary = v
            .pointer(&format!("/end/wifi/{end}"))
            .unwrap_or_else(|| panic!("{name}: no end.wifi.{end}: {}", v["end"]));
        assert_eq!(summary["iface"], iface, "{name}: {summary}");
        let median = num(summary, "/signal_dbm/median")
            .unwrap_or_else(|| panic!("{name}: no signal spread: {summary}"));
        assert!((median - signal as f64).abs() <= 3.0, "{name}: {summary}");
        words.push(format!(
            "{end} {iface} {signal} dBm (iw {iw_signal}), {} (MCS per interval {seen:?}{}), \
             expected {:.1} Mbit/s, retries {}",
            rate_words(last),
            if steady { "" } else { ", moving" },
            num(last, "/expected_mbps").unwrap_or(f64::NAN),
            summary["tx_retries"]
        ));
    }
    words.join(" ")
}

/// The station radio's rx_rssi stepped mid-test: the AP's (far) view of the station moves
/// by the step, the station's own view of the AP does not.
pub fn step(v: &Value) -> String {
    assert_eq!(v["perfpeer"]["status"], "complete", "step: {v}");
    let signals = |end: &str| -> Vec<i64> {
        samples("step", v, end)
            .iter()
            .map(|s| int(s, "/signal_dbm").unwrap_or_else(|| panic!("step {end}: {s}")))
            .collect()
    };
    let (local, remote) = (signals("local"), signals("remote"));
    let moved = remote.last().expect("intervals") - remote[0];
    assert!(
        (moved - STEP_DB).abs() <= 3,
        "step: the far end's signal {remote:?} should move by {STEP_DB} dB"
    );
    let still = local.last().expect("intervals") - local[0];
    assert!(still.abs() <= 3, "step: the local signal {local:?} moved");
    format!("step: far end's signal per interval {remote:?} dBm, local {local:?} dBm")
}

/// The text output: a local and a far-end Wi-Fi line under the intervals.
pub fn text(out: &str) -> String {
    let local = out
        .lines()
        .filter(|l| l.starts_with("  wifi ") && !l.starts_with("  wifi far "))
        .count();
    let far = out.lines().filter(|l| l.starts_with("  wifi far ")).count();
    assert!(
        local >= 2 && far >= 2,
        "be_text: wifi lines {local}/{far} in:\n{out}"
    );
    let first = out
        .lines()
        .find(|l| l.starts_with("  wifi "))
        .unwrap_or_default();
    format!("be_text: {local} local and {far} far wifi lines, e.g. {first:?}")
}

/// A per-interval counter of the local end (the sender in an upload from the station).
fn counters(name: &str, v: &Value, key: &str, whole: bool) -> Vec<i64> {
    let all = samples(name, v, "local");
    let all = if whole { full(v, all) } else { all };
    all.iter()
        .map(|s| int(s, &format!("/{key}")).unwrap_or_else(|| panic!("{name}: no {key}: {s}")))
        .collect()
}

fn mean_expected(name: &str, v: &Value) -> f64 {
    let e: Vec<f64> = samples(name, v, "local")
        .iter()
        .filter_map(|s| num(s, "/expected_mbps"))
        .collect();
    assert!(!e.is_empty(), "{name}: no expected throughput");
    e.iter().sum::<f64>() / e.len() as f64
}

/// The medium cases: no retries without loss; retries every interval and a lower expected
/// throughput at 30 % loss; MCS capped at 3/11 under extra loss above it; failures for
/// best-effort traffic at 50 % loss.
pub fn lossy(lossless: &Value, loss30: &Value, mcs_cap: &Value, be_loss: &Value) -> Vec<String> {
    for (name, v) in [
        ("lossless", lossless),
        ("loss30", loss30),
        ("mcs_cap", mcs_cap),
        ("be_loss", be_loss),
    ] {
        assert_eq!(v["perfpeer"]["status"], "complete", "{name}: {v}");
    }
    let clean = counters("lossless", lossless, "tx_retries", false);
    let far_clean: Vec<i64> = samples("lossless", lossless, "remote")
        .iter()
        .filter_map(|s| int(s, "/tx_retries"))
        .collect();
    assert!(
        clean.iter().chain(&far_clean).all(|r| *r == 0),
        "lossless: retries {clean:?} / far {far_clean:?}"
    );
    let retries = counters("loss30", loss30, "tx_retries", true);
    assert!(
        retries.iter().all(|r| *r > 0),
        "loss30: retries per interval {retries:?}"
    );
    let (e0, e30) = (
        mean_expected("lossless", lossless),
        mean_expected("loss30", loss30),
    );
    assert!(
        e30 < e0,
        "expected throughput {e30:.1} at 30 % loss, {e0:.1} without"
    );
    let failed = counters("be_loss", be_loss, "tx_failed", false);
    assert!(
        failed.iter().sum::<i64>() > 0,
        "be_loss: tx_failed per interval {failed:?}"
    );
    vec![
        format!(
            "lossless: retries per interval {clean:?} (far {far_clean:?}), expected {e0:.1} Mbit/s"
        ),
        format!("loss30: retries per interval {retries:?}, expected {e30:.1} Mbit/s"),
        capped(mcs_cap),
        format!("be_loss: tx_failed per interval {failed:?}"),
    ]
}

/// Extra loss above MCS 3/11 from 2 s into the traffic: the tx MCS steps down to 11 or below
/// and minstrel expects less. An interval's MCS is its last frame's, which may be a lower rate
/// of the retry chain or a probe (seen: 15, 15, 11, 5, 11, 11), so the capped intervals are
/// judged by their majority.
fn capped(v: &Value) -> String {
    let all = samples("mcs_cap", v, "local");
    let steps: Vec<i64> = all.iter().filter_map(|s| mcs(s)).collect();
    assert!(steps.len() >= 5, "mcs_cap: MCS per interval {steps:?}");
    let tail = &steps[steps.len() - 3..];
    assert!(
        tail.iter().filter(|m| *m % 8 <= 3).count() >= 2,
        "mcs_cap: MCS per interval {steps:?}: the last intervals are not at 3/11 or below"
    );
    assert!(
        steps[..2].iter().any(|m| m % 8 > 3),
        "mcs_cap: MCS per interval {steps:?} shows no step down"
    );
    let expected: Vec<f64> = all
        .iter()
        .filter_map(|s| num(s, "/expected_mbps"))
        .collect();
    let (first, last) = (expected.first(), expected.last());
    assert!(
        first.zip(last).is_some_and(|(f, l)| l < f),
        "mcs_cap: expected throughput per interval {expected:?}"
    );
    format!("mcs_cap: MCS per interval {steps:?}, expected {expected:.1?} Mbit/s")
}

/// `perfpeer wifi -J` on one side: its interface with the mode, the network, the channel and
/// one station.
pub fn wifi_list(side: &str, v: &Value, iface: &str, mode: &str) -> String {
    let list = v
        .as_array()
        .or_else(|| v["interfaces"].as_array())
        .unwrap_or_else(|| panic!("wifi_{side}: no list of interfaces: {v}"));
    let i = list
        .iter()
        .find(|i| i["iface"] == iface)
        .unwrap_or_else(|| panic!("wifi_{side}: no {iface}: {v}"));
    assert_eq!(i["mode"], mode, "wifi_{side}: {i}");
    assert_eq!(i["ssid"], "perfpeer-hwsim", "wifi_{side}: {i}");
    assert_eq!(i["freq_mhz"], 2437, "wifi_{side}: {i}");
    let stations = i["stations"].as_array().map_or(0, Vec::len);
    assert_eq!(stations, 1, "wifi_{side}: {i}");
    let s = &i["stations"][0];
    assert!(int(s, "/signal_dbm").is_some(), "wifi_{side}: {i}");
    format!(
        "wifi_{side}: {iface} {mode} ssid {} {} MHz, station {} {} dBm {}",
        i["ssid"],
        i["freq_mhz"],
        s["mac"],
        s["signal_dbm"],
        rate_words(s)
    )
}
