//! A result this peer kept as the far end of another peer's test, read on this peer's page at
//! 390 px: History's row, the opened result's title, headline, rows and CPU are all from this
//! peer's side (it received what the other sent), and the other peer is named by its host name
//! and address, not by its control connection's passing port.

use std::time::Duration;

use fantoccini::Client;
use perfpeer_tests::Peer;
use serde_json::Value;

use super::history::{http_get, stored_test, wait_true};
use super::{click, js, open_ui, summary_value, text, wait_shown, with_browser};

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

#[tokio::test]
async fn a_result_kept_as_the_far_end_is_told_from_this_peers_side() {
    let dut = Peer::start(&[]);
    // Two tests another peer (`perfpeer test`) ran against the DUT: it sent, then it received.
    let received_here = stored_test(&dut, &["-u", "-b", "20M", "-t", "2"]);
    let sent_here = stored_test(&dut, &["-u", "-b", "20M", "-t", "2", "-R"]);
    let (status, body) = http_get(&dut.control, &format!("/r/{received_here}.json"));
    assert_eq!(status, 200, "{body}");
    let kept: perfpeer_shared::report::TestResult = serde_json::from_str(&body).unwrap();
    let client_name = kept.server_addr.clone();
    assert!(
        client_name.ends_with(" (127.0.0.1)") && !client_name.starts_with(" ("),
        "the client by its host name and address: {client_name}"
    );
    with_browser(|c| async move {
        open_ui(&c, &dut).await;
        click(&c, "#open-history").await;
        wait_shown(&c, "screen-history", Duration::from_secs(5)).await;
        wait_true(
            &c,
            "two rows",
            "return document.querySelectorAll('#history-list li').length === 2;",
        )
        .await;
        assert_eq!(
            row_words(&c, &received_here).await,
            format!("UDP RX (far end) · {client_name}")
        );
        assert_eq!(
            row_words(&c, &sent_here).await,
            format!("UDP TX (far end) · {client_name}")
        );
        // Filtering by the other peer's address finds its tests.
        c.find(fantoccini::Locator::Id("h-peer"))
            .await
            .unwrap()
            .send_keys("127.0.0.1")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            js(
                &c,
                "return document.querySelectorAll('#history-list li').length;"
            )
            .await,
            Value::from(2)
        );

        // Opened: the title, headline and rows say this peer received.
        click(&c, &format!("button[data-open='{received_here}']")).await;
        wait_shown(&c, "screen-result", Duration::from_secs(10)).await;
        let title = text(&c, "result-title").await;
        assert!(
            title.starts_with("UDP RX (this peer receives)")
                && title.ends_with(&format!("started by {client_name}")),
            "{title}"
        );
        assert!(text(&c, "result-headline").await.starts_with("RX "));
        assert_eq!(summary_label(&c, "flow0-received").await, "RX receiver");
        assert_eq!(summary_label(&c, "cpu-this").await, "CPU this peer");
        let cpu = kept.local.cpu;
        assert_eq!(
            summary_value(&c, "cpu-this").await,
            format!(
                "{:.1}% host ({} CPUs), process {:.1}% of one CPU",
                cpu.host_total_percent(),
                cpu.cpus,
                cpu.process_total_percent()
            ),
            "this peer's own CPU"
        );
    })
    .await;
}
