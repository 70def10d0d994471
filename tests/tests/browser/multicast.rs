//! Multicast from a phone: on a switched LAN of network namespaces, the phone's peer (host 0)
//! runs the "Multicast 10 Mbit/s to 239.255.1.1" preset with two perfpeer peers typed as the
//! other peer; each joins the group and the Result card shows the group and a row per
//! receiver, the same words as the result the phone's peer kept. The test's thread enters
//! host 0's namespace, so the peer, chromedriver and Chromium it starts all live there.

use std::time::Duration;

use perfpeer_tests::netns::{Bridged, available};
use perfpeer_tests::{Peer, skip};
use serde_json::Value;

use super::{
    click, fill, js, open_ui, peer_result, save_screenshot, summary_value, wait_shown, with_browser,
};

#[test]
fn the_multicast_preset_shows_a_row_per_receiver() {
    if !available() {
        skip("needs root and iproute2 for network namespaces");
        return;
    }
    let lan = Bridged::new("mcb", 3).expect("LAN");
    let receivers: Vec<Peer> = [1, 2]
        .iter()
        .map(|&k| {
            Peer::start_with(
                lan.prefix(k),
                &format!("{}:5210", Bridged::addr(k)),
                "5211",
                &["--open"],
            )
        })
        .collect();
    let typed = format!("{}, {}", receivers[0].control, receivers[1].control);
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                lan.enter(0).expect("enter host 0");
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime")
                    .block_on(phone_runs_the_preset(&typed, &receivers));
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    });
}

async fn phone_runs_the_preset(typed: &str, receivers: &[Peer]) {
    let dut = Peer::start(&[]);
    with_browser(|c| async move {
        open_ui(&c, &dut).await;
        click(&c, "#nav-new").await;
        wait_shown(&c, "screen-new", Duration::from_secs(5)).await;
        fill(&c, "f-target", "").await;
        click(&c, "#preset-multicast").await;
        let form = js(
            &c,
            "return ['f-protocol', 'f-bitrate', 'f-multicast'].map(id => document.getElementById(id).value);",
        )
        .await;
        assert_eq!(form, serde_json::json!(["udp", "10M", "239.255.1.1"]));
        fill(&c, "f-target", typed).await;
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
        let group = kept.spec.multicast.expect("a group test");
        assert_eq!(summary_value(&c, "group").await, group.words());
        let rows = kept.group_receiver_words();
        assert_eq!(rows.len(), receivers.len(), "{rows:?}");
        for (i, ((peer, words), receiver)) in rows.iter().zip(receivers).enumerate() {
            assert_eq!(peer, &receiver.control);
            // 10 Mbit/s for 2 s, every datagram there.
            assert!(words.contains("; lost 0/"), "{words}");
            assert_eq!(summary_value(&c, &format!("group{i}")).await, *words);
        }
        assert_eq!(kept.status, perfpeer_shared::report::TestStatus::Complete);
        save_screenshot(&c, "browser-multicast").await;
    })
    .await;
}
