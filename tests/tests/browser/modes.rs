//! The browser's datagram modes against real peers: a UDP packet-size sweep (its table, chart
//! and JSON download agree, and each paced size lands at its rate), an audio-like
//! constant-bitrate stream (live stream lines, then the Stream tab's summary), and DCCP asked
//! of a peer whose kernel has none (refused at the form with the peer's reason).

use std::time::Duration;

use fantoccini::Client;
use perfpeer_tests::Peer;
use serde_json::Value;

use super::{click, fill, js, open_ui, save_screenshot, select, text, wait_shown, with_browser};

async fn new_test(c: &Client, pc: &Peer, mode: &str) {
    click(c, "#nav-new").await;
    wait_shown(c, "screen-new", Duration::from_secs(5)).await;
    fill(c, "f-target", &pc.control).await;
    select(c, "f-mode", mode).await;
}

/// A UDP sweep of `sizes` at `bitrate` ("0": unpaced), 1 s a size, from the form to its Result.
pub(super) async fn udp_sweep(c: &Client, pc: &Peer, sizes: &str, bitrate: &str) {
    new_test(c, pc, "sweep").await;
    select(c, "f-protocol", "udp").await;
    wait_shown(c, "row-sizes", Duration::from_secs(2)).await;
    fill(c, "f-sizes", sizes).await;
    fill(c, "f-seconds", "1").await;
    fill(c, "f-bitrate", bitrate).await;
    click(c, "#start").await;
    wait_shown(c, "run-sweep", Duration::from_secs(5)).await;
    wait_shown(c, "result-sweep", Duration::from_secs(40)).await;
}

async fn sweep_from_the_form(c: &Client, pc: &Peer) {
    udp_sweep(c, pc, "200,1000", "2M").await;
    let rows = js(
        c,
        "return [...document.querySelectorAll('#sweep-rows tr')].map(r => \
         [Number(r.dataset.len), Number(r.dataset.bps ?? -1)]);",
    )
    .await;
    let rows: Vec<(u32, f64)> = serde_json::from_value(rows).expect("rows");
    assert_eq!(
        rows.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![200, 1000],
        "{rows:?}"
    );
    for (len, bps) in &rows {
        assert!(
            (1.6e6..2.4e6).contains(bps),
            "{len} B paced at 2 Mbit/s arrived at {bps} bit/s"
        );
    }
    // The JSON download holds the same rows.
    let downloaded = js(
        c,
        "return fetch(document.getElementById('sweep-json-download').href).then(r => r.text());",
    )
    .await;
    let sweep: perfpeer_shared::sweep::SweepResult =
        serde_json::from_str(downloaded.as_str().expect("text")).expect("sweep JSON");
    let from_json: Vec<(u32, f64)> = sweep
        .points
        .iter()
        .map(|p| (p.len, p.bits_per_second))
        .collect();
    assert_eq!(from_json, rows);
    let circles = js(
        c,
        "return document.querySelectorAll('#sweep-chart circle').length;",
    )
    .await;
    assert_eq!(circles, Value::from(4), "two sizes in each of two panels");
    // So does the self-contained page ("Download as a file").
    let page = js(
        c,
        "return fetch(document.getElementById('sweep-html-download').href).then(r => r.text());",
    )
    .await;
    let page = page.as_str().expect("page text");
    assert!(
        page.starts_with("<!doctype html>")
            && page.contains("<svg")
            && page.contains("<td>1000 B</td>"),
        "{page}"
    );
    // The peer kept the sweep: its share link opens without the token.
    wait_shown(c, "share", Duration::from_secs(2)).await;
    let shared = js(
        c,
        "return fetch(document.getElementById('share-url').value).then(r => r.text());",
    )
    .await;
    assert!(
        shared
            .as_str()
            .is_some_and(|p| p.contains("<td>200 B</td>")),
        "{shared}"
    );
    let table = text(c, "sweep-text").await;
    assert!(table.starts_with("Packet-size sweep: UDP"), "{table}");
    assert!(
        text(c, "result-title").await.contains("→"),
        "the title names the target"
    );
    save_screenshot(c, "browser-sweep").await;
}

/// The kept sweep is on the History screen; opening it shows its table again.
async fn the_sweep_reopens_from_the_history(c: &Client) {
    click(c, "#nav-history").await;
    wait_shown(c, "screen-history", Duration::from_secs(5)).await;
    let row = "#history-list li[data-kind='sweep'] button.open";
    let mut listed = false;
    for _ in 0..50 {
        if js(c, &format!("return !!document.querySelector(\"{row}\");")).await == Value::Bool(true)
        {
            listed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(listed, "no sweep row: {}", text(c, "history-list").await);
    assert!(
        text(c, "history-list").await.contains("UDP TX size sweep"),
        "{}",
        text(c, "history-list").await
    );
    let id = js(
        c,
        &format!("return document.querySelector(\"{row}\").dataset.open;"),
    )
    .await;
    let id = id.as_str().expect("the row's id").to_string();
    click(c, row).await;
    // The Result screen comes back only with the peer's answer for this id.
    wait_shown(c, "screen-result", Duration::from_secs(10)).await;
    wait_shown(c, "result-sweep", Duration::from_secs(2)).await;
    let url = js(c, "return document.getElementById('share-url').value;").await;
    assert!(
        url.as_str()
            .is_some_and(|u| u.ends_with(&format!("/r/{id}"))),
        "{url} vs {id}"
    );
    let rows = js(
        c,
        "return document.querySelectorAll('#sweep-rows tr').length;",
    )
    .await;
    assert_eq!(rows, Value::from(2), "the reopened sweep's rows");
}

async fn audio_stream_from_the_form(c: &Client, pc: &Peer) {
    new_test(c, pc, "cbr").await;
    wait_shown(c, "row-cbr", Duration::from_secs(2)).await;
    fill(c, "f-cbr", "mp3").await;
    fill(c, "f-seconds", "3").await;
    click(c, "#start").await;
    wait_shown(c, "run-lines", Duration::from_secs(5)).await;
    let mut live = String::new();
    for _ in 0..50 {
        live = text(c, "run-lines").await;
        if live.lines().count() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        live.contains("Longest gap") && live.lines().count() >= 2,
        "live stream lines: {live}"
    );
    wait_shown(c, "screen-result", Duration::from_secs(30)).await;
    wait_shown(c, "tab-stream", Duration::from_secs(2)).await;
    click(c, "#tab-stream").await;
    wait_shown(c, "text-stream", Duration::from_secs(2)).await;
    let stream = text(c, "text-stream").await;
    let summary = stream
        .lines()
        .find(|l| l.starts_with("Constant bitrate client -> server"))
        .unwrap_or_else(|| panic!("no stream summary: {stream}"));
    // 48 kbit/s in 160-byte packets is 37.5 packets/s.
    let pps: f64 = summary
        .split(", ")
        .find_map(|f| f.strip_suffix(" packets/s"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no packet rate in {summary}"));
    assert!((33.0..42.0).contains(&pps), "{summary}");
    save_screenshot(c, "browser-audio-stream").await;
}

async fn dccp_is_refused_when_missing(c: &Client, pc: &Peer) {
    new_test(c, pc, "test").await;
    select(c, "f-protocol", "dccp").await;
    wait_shown(c, "row-dccp", Duration::from_secs(2)).await;
    let hint = text(c, "dccp-hint").await;
    if !hint.contains("not available") {
        perfpeer_tests::skip(&format!(
            "this kernel has DCCP ({hint}): the refusal is not tested here"
        ));
        return;
    }
    click(c, "#start").await;
    wait_shown(c, "form-error", Duration::from_secs(2)).await;
    let error = text(c, "form-error").await;
    assert!(error.contains("cannot run DCCP"), "{error}");
    let reason = hint.trim_start_matches("DCCP on this peer: not available: ");
    assert!(error.contains(reason), "{error} vs {hint}");
    assert!(
        js(c, "return document.getElementById('screen-new').hidden;").await == Value::Bool(false),
        "the form stays in front"
    );
}

#[tokio::test]
async fn a_phone_runs_a_sweep_and_an_audio_stream_and_hears_why_dccp_is_missing() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    with_browser(|c| async move {
        open_ui(&c, &dut).await;
        sweep_from_the_form(&c, &pc).await;
        the_sweep_reopens_from_the_history(&c).await;
        audio_stream_from_the_form(&c, &pc).await;
        dccp_is_refused_when_missing(&c, &pc).await;
    })
    .await;
}
