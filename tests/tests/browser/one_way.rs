//! One-way latency from a phone: the preset fills the form (UDP both ways, one-way delay on,
//! shown under More settings), the test runs, and the Result card shows each direction's
//! one-way delay with the clock assumption — the same words as the peer's kept result.

use std::time::Duration;

use perfpeer_tests::Peer;
use serde_json::Value;

use super::{
    click, fill, js, open_ui, peer_result, save_screenshot, summary_value, wait_shown, with_browser,
};

#[tokio::test]
async fn the_one_way_preset_shows_each_directions_delay() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    with_browser(|c| async move {
        open_ui(&c, &dut).await;
        click(&c, "#nav-new").await;
        wait_shown(&c, "screen-new", Duration::from_secs(5)).await;
        // With no target a preset only fills the form.
        fill(&c, "f-target", "").await;
        click(&c, "#preset-oneway").await;
        let form = js(
            &c,
            "return ['f-protocol', 'f-direction', 'f-trip-times']\
             .map(id => document.getElementById(id).value);",
        )
        .await;
        assert_eq!(
            form,
            serde_json::json!(["udp", "both", "on"]),
            "the preset's fields"
        );
        fill(&c, "f-target", &pc.control).await;
        fill(&c, "f-seconds", "2").await;
        click(&c, "#start").await;
        wait_shown(&c, "screen-result", Duration::from_secs(30)).await;
        let test_id = js(
            &c,
            "return document.getElementById('summary').getAttribute('data-test-id');",
        )
        .await;
        let Value::String(test_id) = test_id else {
            panic!("the summary names its test: {test_id}")
        };
        let kept = peer_result(&dut, &test_id).await;
        for (i, flow) in kept.flows().iter().enumerate() {
            let delay = flow
                .received
                .and_then(|t| t.udp_rx?.one_way)
                .unwrap_or_else(|| panic!("direction {i} kept no one-way delay"));
            let shown = summary_value(&c, &format!("flow{i}-one-way")).await;
            assert_eq!(shown, delay.words(), "direction {i}");
            assert!(shown.ends_with("one clock (same host)"), "{shown}");
        }
        save_screenshot(&c, "browser-one-way").await;
    })
    .await;
}
