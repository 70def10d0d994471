//! The nl80211 answers captured in the guest (`hwsim_medium dump`, after the lossy-medium
//! cases): decoded with perfpeer-proto's codec and held against iw's words read right after;
//! with `PERFPEER_CAPTURE_NL80211=1` written to proto/fixtures/nl80211/ as one hex datagram
//! per line (`<dump>_<side>.hex`), iw's text beside them (`.txt`).

use std::collections::HashMap;

use perfpeer_proto::netlink::{self, Reply};
use perfpeer_proto::nl80211::{self, InterfaceReading, StationReading, SurveyReading};
use perfpeer_shared::wifi::{Mode, mac_words};

use super::guest::{self, Run};
use super::iw;

/// The hex datagrams of one dump in a `hwsim_medium dump` block.
fn hex_lines<'a>(out: &'a str, kind: &str) -> Vec<&'a str> {
    let marker = format!("NLDUMP {kind} ");
    out.lines()
        .filter_map(|l| l.strip_prefix(marker.as_str()))
        .collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex"))
        .collect()
}

/// Every answer of `lines` decoded by `decode`.
fn decoded<T>(
    lines: &[&str],
    decode: fn(u8, netlink::Attrs<'_>) -> Result<Option<T>, netlink::NetlinkError>,
) -> Vec<T> {
    let mut out = Vec::new();
    for line in lines {
        let bytes = unhex(line);
        for reply in netlink::replies(&bytes) {
            if let Reply::Genl { cmd, attrs, .. } = reply.expect("a well-formed datagram") {
                out.extend(decode(cmd, attrs).expect("decodes"));
            }
        }
    }
    out
}

/// One side's captures: the interface, its one station (held against iw), its survey.
fn side(
    runs: &HashMap<String, Run>,
    console: &str,
    side: &str,
) -> (InterfaceReading, StationReading, Vec<SurveyReading>) {
    let get = |name: &str| {
        let r = runs
            .get(name)
            .unwrap_or_else(|| panic!("no block {name}:\n{}", guest::markers(console)));
        assert_eq!(r.rc, 0, "{name}: {}", r.err);
        r
    };
    let out = &get(&format!("nl_{side}")).out;
    let interfaces = decoded(&hex_lines(out, "interface"), nl80211::interface_of);
    assert_eq!(interfaces.len(), 1, "nl_{side}: {interfaces:?}");
    let stations = decoded(&hex_lines(out, "station"), nl80211::station_of);
    assert_eq!(stations.len(), 1, "nl_{side}: {stations:?}");
    let surveys = decoded(&hex_lines(out, "survey"), nl80211::survey_of);
    let iw = iw::station(&get(&format!("station_{side}")).out, side);
    let s = &stations[0];
    assert_eq!(mac_words(&s.mac), iw.mac, "nl_{side}: {s:?}");
    assert_eq!(
        s.signal_dbm.map(i64::from),
        iw.signal,
        "nl_{side}: {s:?} / iw {iw:?}"
    );
    assert_eq!(
        s.tx_retries.map(u64::from),
        iw.tx_retries,
        "nl_{side}: {s:?} / iw {iw:?}"
    );
    let i = interfaces.into_iter().next().expect("one");
    (i, stations.into_iter().next().expect("one"), surveys)
}

/// Writes the fixtures (only when asked: they are committed, and a run must not churn them).
fn write_fixtures(runs: &HashMap<String, Run>) {
    let dir = guest::workspace().join("proto/fixtures/nl80211");
    std::fs::create_dir_all(&dir).expect("fixtures dir");
    for (side, dumps) in [
        ("ap", &["interface", "station"][..]),
        ("sta", &["interface", "station", "survey"][..]),
    ] {
        let out = &runs[&format!("nl_{side}")].out;
        for kind in dumps {
            let mut hex = hex_lines(out, kind).join("\n");
            hex.push('\n');
            std::fs::write(dir.join(format!("{kind}_{side}.hex")), hex).expect("fixture");
            let iw = &runs[&format!("{kind}_{side}")].out;
            std::fs::write(dir.join(format!("{kind}_{side}.txt")), iw).expect("fixture");
        }
    }
}

/// The captures decode, agree with iw, and are saved when `PERFPEER_CAPTURE_NL80211=1`.
pub fn check(console: &str, runs: &HashMap<String, Run>) -> Vec<String> {
    let (ap, ap_station, ap_survey) = side(runs, console, "ap");
    let (sta, sta_station, sta_survey) = side(runs, console, "sta");
    assert_eq!((ap.name.as_str(), ap.mode()), ("wlan0", Mode::Ap), "{ap:?}");
    assert_eq!(
        (sta.name.as_str(), sta.mode()),
        ("wlan1", Mode::Station),
        "{sta:?}"
    );
    for i in [&ap, &sta] {
        assert_eq!(i.ssid.as_deref(), Some("perfpeer-hwsim"), "{i:?}");
        assert_eq!(i.freq_mhz, Some(2437), "{i:?}");
    }
    // Only channels a software scan visited have survey entries: the AP never scanned.
    let iw_survey = runs["survey_sta"].out.matches("Survey data from").count();
    assert_eq!(
        sta_survey.len(),
        iw_survey,
        "survey entries: {sta_survey:?}"
    );
    assert!(
        sta_survey.iter().any(|s| s.freq_mhz == 2437),
        "{sta_survey:?}"
    );
    let written = std::env::var("PERFPEER_CAPTURE_NL80211").is_ok_and(|v| v == "1");
    if written {
        write_fixtures(runs);
    }
    vec![format!(
        "nl80211 captures: AP {} sees {} at {:?} dBm, tx {:?}; station {} sees {} at {:?} dBm; \
         survey: AP {} channels, station {} ({}written to proto/fixtures/nl80211)",
        ap.name,
        mac_words(&ap_station.mac),
        ap_station.signal_dbm,
        ap_station.tx_rate.map(|r| r.label()),
        sta.name,
        mac_words(&sta_station.mac),
        sta_station.signal_dbm,
        ap_survey.len(),
        sta_survey.len(),
        if written { "" } else { "not " }
    )]
}
