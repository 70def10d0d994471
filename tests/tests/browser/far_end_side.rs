//! A result this peer kept as the far end of another peer's test, read on this peer's page at
//! 390 px: History's row, the opened result's title, headline, rows and CPU are all from this
//! peer's side (it received what the other sent), and the other peer is named by its host name
//! and address, not by its control connection's passing port.

use std::time::Duration;

use fantoccini::Client;
use perfpeer_tests::Peer;
use serde_json::Value;

use perfpeer_shared::report::TestResult;

use super::history::{http_get, stored_test, wait_true};
use super::phone::audit;
use super::{
    click, fill, js, open_ui, summary_value, text, wait_shown, with_browser, with_browser_flags,
};

/// The label of the summary row `key`.
async fn summary_label(c: &Client, key: &str) -> String {
    let got = js(
        c,
        &format!(
            "const d = document.querySelector(\"#summary dd[data-key='{key}']\"); \
             return d ? d.previousElementSibling.textContent : '';"
        ),
    )
    .await;
    got.as_str().unwrap_or_default().to_string()
}

/// History's "what · peer" cell of the row for `id`.
async fn row_words(c: &Client, id: &str) -> String {
    let got = js(
        c,
        &format!(
            "return document.querySelector(\"#history-list li[data-id='{id}'] .peer\").textContent;"
        ),
    )
    .await;
    got.as_str().unwrap_or_default().to_string()
}

/// The DUT's page, `theme`: History's rows and the opened result from the DUT's side.
async fn told_from_the_duts_side(c: &Client, dut: &Peer, ids: (&str, &str), kept: &TestResult) {
    let (received_here, sent_here) = ids;
    let client_name = kept.server_addr.clone();
    open_ui(c, dut).await;
    click(c, "#open-history").await;
    wait_shown(c, "screen-history", Duration::from_secs(5)).await;
    wait_true(
        c,
        "two rows",
        "return document.querySelectorAll('#history-list li').length === 2;",
    )
    .await;
    assert_eq!(
        row_words(c, received_here).await,
        format!("UDP RX (far end) · {client_name}")
    );
    assert_eq!(
        row_words(c, sent_here).await,
        format!("UDP TX (far end) · {client_name}")
    );
    // Filtering by the other peer's address finds its tests.
    fill(c, "h-peer", "127.0.0.1").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        js(
            c,
            "return document.querySelectorAll('#history-list li').length;"
        )
        .await,
        Value::from(2)
    );

    // Opened: the title, headline and rows say this peer received.
    click(c, &format!("button[data-open='{received_here}']")).await;
    wait_shown(c, "screen-result", Duration::from_secs(10)).await;
    let title = text(c, "result-title").await;
    assert!(
        title.starts_with("UDP RX (this peer receives)")
            && title.ends_with(&format!("started by {client_name}")),
        "{title}"
    );
    assert!(text(c, "result-headline").await.starts_with("RX "));
    assert_eq!(summary_label(c, "flow0-received").await, "RX receiver");
    assert_eq!(summary_label(c, "cpu-this").await, "CPU this peer");
    let cpu = kept.local.cpu;
    assert_eq!(
        summary_value(c, "cpu-this").await,
        format!(
            "{:.1}% host ({} CPUs), process {:.1}% of one CPU",
            cpu.host_total_percent(),
            cpu.cpus,
            cpu.process_total_percent()
        ),
        "this peer's own CPU"
    );
    // netperf's table is its client's report: the tab says whose columns are whose.
    click(c, "#tab-netperf").await;
    wait_shown(c, "text-netperf", Duration::from_secs(2)).await;
    assert!(
        text(c, "text-netperf")
            .await
            .starts_with("(This peer was the far end"),
        "{}",
        text(c, "text-netperf").await
    );
}

#[tokio::test]
async fn a_result_kept_as_the_far_end_is_told_from_this_peers_side() {
    let dut = Peer::start(&[]);
    // Two tests another peer (`perfpeer test`) ran against the DUT: it sent, then it received.
    let received_here = stored_test(&dut, &["-u", "-b", "20M", "-t", "2"]);
    let sent_here = stored_test(&dut, &["-u", "-b", "20M", "-t", "2", "-R"]);
    let (status, body) = http_get(&dut.control, &format!("/r/{received_here}.json"));
    assert_eq!(status, 200, "{body}");
    let kept: TestResult = serde_json::from_str(&body).unwrap();
    assert!(
        kept.server_addr.ends_with(" (127.0.0.1)") && !kept.server_addr.starts_with(" ("),
        "the client by its host name and address: {}",
        kept.server_addr
    );
    let ids = (received_here.as_str(), sent_here.as_str());
    let (dut, kept) = (&dut, &kept);
    with_browser(|c| async move {
        told_from_the_duts_side(&c, dut, ids, kept).await;
        audit(&c, "far-end-result", "light").await;
    })
    .await;
    with_browser_flags(&["--force-dark-mode"], |c| async move {
        told_from_the_duts_side(&c, dut, ids, kept).await;
        audit(&c, "far-end-result", "dark").await;
    })
    .await;
}
