//! One-way latency from a phone: the preset fills the form (UDP both ways, one-way delay with a
//! histogram, shown under More settings), the test runs, and the Result card shows each
//! direction's one-way delay with the clock assumption and its histogram's points — the same
//! words as the peer's kept result.

use std::time::Duration;

use perfpeer_shared::report::TestResult;
use perfpeer_tests::Peer;
use serde_json::Value;

use super::{
    click, fill, js, open_ui, peer_result, save_screenshot, summary_value, wait_shown, with_browser,
};

/// On the phone page of `dut`: the preset `id` with no target (it only fills the form; the
/// values of `fields` are returned), then to `pc` for 2 s; the result the DUT kept.
async fn run_preset(
    c: &fantoccini::Client,
    (dut, pc): (&Peer, &Peer),
    id: &str,
    fields: &[&str],
) -> (Value, TestResult) {
    open_ui(c, dut).await;
    click(c, "#nav-new").await;
    wait_shown(c, "screen-new", Duration::from_secs(5)).await;
    fill(c, "f-target", "").await;
    click(c, &format!("#preset-{id}")).await;
    let form = js(
        c,
        &format!(
            "return {}.map(id => document.getElementById(id).value);",
            serde_json::to_string(fields).unwrap()
        ),
    )
    .await;
    fill(c, "f-target", &pc.control).await;
    fill(c, "f-seconds", "2").await;
    click(c, "#start").await;
    wait_shown(c, "screen-result", Duration::from_secs(30)).await;
    let test_id = js(
        c,
        "return document.getElementById('summary').getAttribute('data-test-id');",
    )
    .await;
    let Value::String(test_id) = test_id else {
        panic!("the summary names its test: {test_id}")
    };
    (form, peer_result(dut, &test_id).await)
}

#[tokio::test]
async fn the_one_way_preset_shows_each_directions_delay() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    with_browser(|c| async move {
        let fields = ["f-protocol", "f-direction", "f-trip-times"];
        let (form, kept) = run_preset(&c, (&dut, &pc), "oneway", &fields).await;
        assert_eq!(
            form,
            serde_json::json!(["udp", "both", "histogram"]),
            "the preset's fields"
        );
        for (i, flow) in kept.flows().iter().enumerate() {
            let delay = flow
                .received
                .as_ref()
                .and_then(|t| t.udp_rx.as_ref()?.one_way.as_ref())
                .unwrap_or_else(|| panic!("direction {i} kept no one-way delay"));
            let shown = summary_value(&c, &format!("flow{i}-one-way")).await;
            assert_eq!(shown, delay.words(), "direction {i}");
            assert!(shown.ends_with("one clock (same host)"), "{shown}");
            let bins = delay
                .histogram
                .as_ref()
                .unwrap_or_else(|| panic!("direction {i} kept no histogram"));
            assert_eq!(
                bins.total(),
                delay.count,
                "direction {i}: every delay in the bins"
            );
            let shown = summary_value(&c, &format!("flow{i}-histogram")).await;
            assert_eq!(shown, bins.words(), "direction {i}");
        }
        save_screenshot(&c, "browser-one-way").await;
    })
    .await;
}

/// Video from a phone: the preset fills the form (UDP, frames 60:20m,0), the test runs, and the
/// Result card shows the frames the far end received — the same words as the kept result.
#[tokio::test]
async fn the_video_preset_shows_the_frames() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    with_browser(|c| async move {
        let fields = ["f-protocol", "f-video", "f-bitrate"];
        let (form, kept) = run_preset(&c, (&dut, &pc), "video", &fields).await;
        assert_eq!(
            form,
            serde_json::json!(["udp", "60:20m,0", ""]),
            "the preset's fields"
        );
        let flows = kept.flows();
        let frames = flows[0]
            .received
            .as_ref()
            .and_then(|t| t.udp_rx.as_ref()?.frames.as_ref())
            .expect("the receiver counted frames");
        // 60 frames a second for 2 s.
        assert!((110..=130).contains(&frames.frames()), "{frames:?}");
        let shown = summary_value(&c, "flow0-frames").await;
        assert_eq!(shown, frames.words());
        save_screenshot(&c, "browser-video").await;
    })
    .await;
}
