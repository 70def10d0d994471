//! The history screen in the browser: two tests served by a peer are listed with the throughput
//! the peer stored, filtered, overlaid in one chart and opened on the Result screen, whose share
//! link opens without the token; the link switch and delete act on the peer.

use std::io::{Read, Write};
use std::time::Duration;

use fantoccini::Client;
use perfpeer_shared::report::TestResult;
use perfpeer_shared::units::{format_bytes, format_rate};
use perfpeer_tests::Peer;
use serde_json::Value;

use super::{click, js, open_ui, rate, save_screenshot, select, text, wait_shown, with_browser};

/// A plain HTTP/1.0 GET without any token: (status, body).
pub(super) fn http_get(addr: &str, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the peer");
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, body.to_string())
}

/// Runs `perfpeer test` against `peer` and returns the id of the result the peer stored.
pub(super) fn stored_test(peer: &Peer, args: &[&str]) -> String {
    let mut full = vec![peer.control.as_str()];
    full.extend_from_slice(args);
    let out = perfpeer_tests::perfpeer_test(&full);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}");
    let url = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Result page: "))
        .unwrap_or_else(|| panic!("no result link: {stdout}"));
    url.rsplit('/').next().unwrap().to_string()
}

fn stored_result(peer: &Peer, id: &str) -> TestResult {
    let (status, body) = http_get(&peer.control, &format!("/r/{id}.json"));
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).expect("the stored result parses")
}

/// Waits until `script` returns `true`.
pub(super) async fn wait_true(c: &Client, what: &str, script: &str) {
    for _ in 0..100 {
        if js(c, script).await == Value::Bool(true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let shot = save_screenshot(c, &format!("timeout-{what}")).await;
    panic!("{what}: not within 10 s; screenshot {}", shot.display());
}

fn rows(n: usize) -> String {
    format!("return document.querySelectorAll('#history-list li').length === {n};")
}

#[tokio::test]
async fn the_browser_history_lists_overlays_and_shares_stored_results() {
    let dut = Peer::start(&[]);
    let tcp_id = stored_test(&dut, &["-t", "2"]);
    let udp_id = stored_test(&dut, &["-u", "-b", "20M", "-t", "2"]);
    let tcp = stored_result(&dut, &tcp_id);
    let udp = stored_result(&dut, &udp_id);
    with_browser(|c| async move {
        open_ui(&c, &dut).await;
        click(&c, "#open-history").await;
        wait_shown(&c, "screen-history", Duration::from_secs(5)).await;
        wait_true(&c, "two rows", &rows(2)).await;
        // Newest first, each with its protocol and the throughput the peer stored.
        let order = js(
            &c,
            "return [...document.querySelectorAll('#history-list li')].map(l => l.dataset.id);",
        )
        .await;
        assert_eq!(order, serde_json::json!([udp_id, tcp_id]));
        for (id, result, proto) in [(&tcp_id, &tcp, "tcp"), (&udp_id, &udp, "udp")] {
            let row = format!("#history-list li[data-id='{id}']");
            let got = js(
                &c,
                &format!("return document.querySelector(\"{row}\").dataset.protocol;"),
            )
            .await;
            assert_eq!(got, Value::from(proto));
            let shown = js(
                &c,
                &format!("return document.querySelector(\"{row} .rate\").textContent;"),
            )
            .await;
            let received = result.flows()[0]
                .received
                .clone()
                .expect("receiver figures");
            assert_eq!(
                shown,
                Value::from(rate(received.bits_per_second)),
                "row {id}"
            );
            let what = js(
                &c,
                &format!("return document.querySelector(\"{row} .peer\").textContent;"),
            )
            .await;
            assert!(
                what.as_str().unwrap().starts_with(&proto.to_uppercase()),
                "{what}"
            );
        }
        // Filter by protocol, then back to all.
        select(&c, "h-protocol", "udp").await;
        wait_true(&c, "the UDP row only", &rows(1)).await;
        let only = js(
            &c,
            "return document.querySelector('#history-list li').dataset.id;",
        )
        .await;
        assert_eq!(only, Value::from(udp_id.clone()));
        select(&c, "h-protocol", "").await;
        wait_true(&c, "both rows again", &rows(2)).await;
        // Overlay the two: one chart, a line and a legend row each.
        click(&c, &format!("input[data-pick='{tcp_id}']")).await;
        click(&c, &format!("input[data-pick='{udp_id}']")).await;
        click(&c, "#compare").await;
        wait_shown(&c, "overlay-chart", Duration::from_secs(10)).await;
        let lines = js(
            &c,
            "return document.querySelectorAll('#overlay-chart svg polyline').length;",
        )
        .await;
        assert_eq!(lines, Value::from(2));
        let legend = text(&c, "overlay-chart").await;
        // The DUT kept both as the far end of tests that sent to it: it received.
        assert!(
            legend.contains("TCP RX") && legend.contains("UDP RX"),
            "{legend}"
        );
        js(&c, "window.scrollTo(0, 0);").await;
        let shot = save_screenshot(&c, "browser-history").await;
        assert!(
            std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000),
            "{}",
            shot.display()
        );

        // Open the TCP result: the Result screen with its tabs and the share box.
        click(&c, &format!("button[data-open='{tcp_id}']")).await;
        wait_shown(&c, "screen-result", Duration::from_secs(10)).await;
        wait_shown(&c, "share", Duration::from_secs(5)).await;
        let test_id = js(
            &c,
            "return document.getElementById('summary').dataset.testId;",
        )
        .await;
        assert_eq!(test_id, Value::from(tcp.id.clone()));
        let url = js(&c, "return document.getElementById('share-url').value;").await;
        let url = url.as_str().unwrap().to_string();
        assert_eq!(url, format!("http://{}/r/{tcp_id}", dut.control));
        click(&c, "#share-copy").await;
        assert_eq!(text(&c, "share-copy").await, "Copied");
        js(&c, "document.getElementById('share').scrollIntoView();").await;
        save_screenshot(&c, "browser-history-result").await;
        // "Download as a file" is the self-contained page, with the stored numbers.
        let received = tcp.flows()[0].received.clone().unwrap();
        let expected = format!(
            "{}, {}",
            format_bytes(received.bytes as f64).trim(),
            format_rate(received.bits_per_second)
        );
        let file = js(
            &c,
            "return fetch(document.getElementById('html-download').href).then(r => r.text());",
        )
        .await;
        let file = file.as_str().unwrap();
        assert!(
            file.starts_with("<!doctype html>") && file.contains("<svg"),
            "a page with its chart"
        );
        assert!(file.contains(&expected), "the file shows {expected}");
        assert!(
            !file.contains("<script src") && !file.contains("href='http"),
            "nothing fetched"
        );
        // Turn the link off and on again: the peer follows.
        click(&c, "#share-toggle").await;
        wait_true(
            &c,
            "link off",
            "return document.getElementById('share-toggle').textContent === 'Turn link on';",
        )
        .await;
        assert_eq!(http_get(&dut.control, &format!("/r/{tcp_id}")).0, 404);
        click(&c, "#share-toggle").await;
        wait_true(
            &c,
            "link on",
            "return document.getElementById('share-toggle').textContent === 'Turn link off';",
        )
        .await;
        // The share link in this browser, without the token: the stored numbers.
        c.goto(&url).await.expect("open the share link");
        let page = js(&c, "return document.body.innerText;").await;
        assert!(
            page.as_str().unwrap().contains(&expected),
            "the shared page shows {expected}: {page}"
        );
        save_screenshot(&c, "browser-share-link").await;

        // Delete the UDP result: a second tap confirms; it leaves the list and its link dies.
        open_ui(&c, &dut).await;
        click(&c, "#open-history").await;
        wait_true(&c, "two rows after reload", &rows(2)).await;
        click(&c, &format!("button[data-open='{udp_id}']")).await;
        wait_shown(&c, "share", Duration::from_secs(10)).await;
        click(&c, "#share-delete").await;
        assert_eq!(text(&c, "share-delete").await, "Tap again to delete");
        click(&c, "#share-delete").await;
        wait_shown(&c, "screen-history", Duration::from_secs(10)).await;
        wait_true(&c, "one row after delete", &rows(1)).await;
        assert_eq!(http_get(&dut.control, &format!("/r/{udp_id}.json")).0, 404);
    })
    .await;
}
