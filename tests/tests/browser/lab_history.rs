//! The History screen of a peer attached to a lab's PostgreSQL store (a cluster of the test's
//! own): the whole lab's results, each row saying which peer kept it, a page of 200 with "More
//! results" under it, and the peer's filters — a tag, a time, a peer's name — asked of the peer.

use std::time::Duration;

use perfpeer_tests::postgres::{self, Cluster};
use perfpeer_tests::{Peer, wait_for};
use serde_json::Value;

use super::history::{stored_test, wait_true};
use super::{click, js, open_ui, select, text, wait_shown, with_browser};

fn rows(n: usize) -> String {
    format!("return document.querySelectorAll('#history-list li').length === {n};")
}

#[tokio::test]
async fn a_labs_history_pages_and_filters_on_the_peer() {
    if !postgres::available() {
        return;
    }
    let cluster = Cluster::start();
    let peer = Peer::start(&["--store", &cluster.url(), "--peer-name", "pc-lab-1"]);
    // One real test kept by this peer, written to the lab.
    let own = stored_test(&peer, &["-t", "1"]);
    assert!(
        wait_for(Duration::from_secs(20), || {
            cluster.psql(&format!(
                "SELECT count(*) FROM perfpeer_kept WHERE id = '{own}'"
            )) == "1"
        }),
        "the test reaches the lab"
    );
    // 250 results another PC kept against a board, one a minute back from now (and half a
    // minute off the minute, so "2h" has no row on its edge); every fifth tagged fw=1.2.4.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    cluster.psql(&format!(
        "INSERT INTO perfpeer_kept (id, kind, kept_by, created_ms, peer, origin, status, tags,
             link_enabled, summary_json, body_json, written_ms)
         SELECT md5(n::text), 'test', 'pc-lab-2', {now_ms} - n * 60000 - 30000, 'dut-7:5201',
             'cli', 'complete',
             CASE WHEN n % 5 = 0 THEN ARRAY['fw=1.2.4'] ELSE ARRAY[]::text[] END, true,
             json_build_object('id', md5(n::text), 'kind', 'test',
                 'created_ms', {now_ms} - n * 60000 - 30000, 'origin', 'cli', 'role', 'client',
                 'peer', 'dut-7:5201', 'protocol', 'tcp', 'direction', 'normal',
                 'status', 'complete', 'bits_per_second', 9.4e8, 'link_enabled', true,
                 'kept_by', 'pc-lab-2')::text,
             '{{}}', 0
         FROM generate_series(1, 250) AS n"
    ));
    with_browser(|c| async move {
        open_ui(&c, &peer).await;
        click(&c, "#open-history").await;
        wait_shown(&c, "screen-history", Duration::from_secs(5)).await;
        wait_true(&c, "a full page", &rows(200)).await;
        assert!(text(&c, "history-status").await.contains("in the lab store"));
        let kept_by = js(
            &c,
            "return [...document.querySelectorAll('#history-list .peer')]
                 .map(p => p.textContent.replace(/.* · kept by /, ''));",
        )
        .await;
        let kept_by: Vec<&str> = kept_by
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(kept_by[0], "pc-lab-1", "the newest: this peer's own test");
        assert!(kept_by[1..].iter().all(|k| *k == "pc-lab-2"), "{kept_by:?}");
        // The next page below: 251 in all, and no more to ask for.
        click(&c, "#history-more").await;
        wait_true(&c, "both pages", &rows(251)).await;
        wait_true(
            &c,
            "no next page",
            "return document.getElementById('history-more').hidden;",
        )
        .await;
        // A tag: asked of the peer, 50 rows.
        select(&c, "h-tag", "fw=1.2.4").await;
        wait_true(&c, "the tagged rows", &rows(50)).await;
        select(&c, "h-tag", "").await;
        // A time: the last two hours, 119 of the other PC's and this peer's own.
        select(&c, "h-since", "2h").await;
        wait_true(&c, "two hours", &rows(120)).await;
        // A peer's name in part: this peer's own result only.
        select(&c, "h-peer", "LAB-1").await;
        wait_true(&c, "this peer's", &rows(1)).await;
        let only = js(
            &c,
            "return document.querySelector('#history-list li').dataset.id;",
        )
        .await;
        assert_eq!(only, Value::from(own.clone()));
        // The board's name finds every result run against it, whoever kept it.
        select(&c, "h-peer", "dut-7").await;
        wait_true(&c, "the board's", &rows(119)).await;
        // A time that does not read is said, and the list is not asked again.
        select(&c, "h-since", "yesterday").await;
        wait_true(
            &c,
            "the refusal",
            "return document.getElementById('history-status').textContent.includes(\"'yesterday' is not a time\");",
        )
        .await;
    })
    .await;
}
