//! The web UI served by the Windows peer (the .exe under wine): at phone size it runs a TCP test
//! from the Windows peer to the Linux peer and shows the usual result page, figures and tabs
//! checked against the Windows peer's own result.

use super::*;

#[tokio::test]
async fn the_windows_peers_ui_runs_a_test_to_the_linux_peer() {
    let Some((exe, prefix)) = perfpeer_tests::windows_build() else {
        return;
    };
    let windows = Peer::start_binary(&exe, prefix, &[]);
    let linux = Peer::start(&[]);
    with_browser(|c| async move {
        open_ui(&c, &windows).await;
        assert!(
            text(&c, "screen-peer").await.contains("Windows"),
            "the peer screen names the system"
        );
        let (result, json) = run_from_form(&c, &windows, &linux, false).await;
        assert_eq!(result.local.role, perfpeer_shared::report::PeerRole::Client);
        let received = json.pointer("/end/sum_received").expect("sum_received");
        assert!(received["bytes"].as_f64().unwrap() > 0.0);
        assert_eq!(
            summary_value(&c, "flow0-received").await,
            rate(received["bits_per_second"].as_f64().unwrap())
        );
        c.execute("window.scrollTo(0, 0);", vec![]).await.unwrap();
        save_screenshot(&c, "browser-windows-result").await;
    })
    .await;
}
