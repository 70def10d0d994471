//! Latency under load from a phone: the preset fills the form, the Running screen draws the
//! phases live (the timeline and the phase table grow as events arrive), the Result screen shows
//! the headline, table, timeline and CDF with the same figures as the peer's kept result
//! (`/r/<id>.json` through the share link), and two kept runs reopen and overlay from the
//! History screen.

use std::time::Duration;

use fantoccini::Client;
use perfpeer_shared::latency::LatencyResult;
use perfpeer_tests::Peer;
use serde_json::Value;

use super::{click, fill, js, open_ui, save_screenshot, text, wait_shown, with_browser};

/// Starts a short run from the preset (1 s phases, 2 streams) and waits for its result.
async fn run_from_the_preset(c: &Client, pc: &Peer, screenshot: Option<&str>) -> LatencyResult {
    click(c, "#nav-new").await;
    wait_shown(c, "screen-new", Duration::from_secs(5)).await;
    // With no target a preset only fills the form (with one it would start at once).
    fill(c, "f-target", "").await;
    click(c, "#preset-latency").await;
    assert_eq!(
        js(c, "return document.getElementById('f-mode').value;").await,
        Value::from("latency"),
        "the preset picks the kind"
    );
    wait_shown(c, "row-latency", Duration::from_secs(2)).await;
    assert_eq!(
        js(c, "return document.getElementById('row-protocol').hidden;").await,
        Value::Bool(true),
        "protocol does not apply"
    );
    fill(c, "f-target", &pc.control).await;
    fill(c, "f-seconds", "1").await;
    fill(c, "f-streams", "2").await;
    // Paced, so the load does not take both cores from the tests beside it.
    fill(c, "f-bitrate", "300M").await;
    click(c, "#start").await;
    wait_shown(c, "run-latency", Duration::from_secs(5)).await;
    // Live: once a phase is done, its row and the timeline are on the Running screen.
    let mut live = false;
    for _ in 0..100 {
        let rows = js(
            c,
            "return document.querySelectorAll('#run-latency-rows tr[data-phase]:not(.detail)').length;",
        )
        .await;
        let drawn = js(
            c,
            "return !!document.querySelector('#run-chart svg.latency-timeline') && \
             !!document.querySelector('#run-latency-cdf svg.latency-cdf');",
        )
        .await;
        if rows.as_u64().is_some_and(|n| n >= 2) && drawn == Value::Bool(true) {
            live = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(live, "no live phases: {}", text(c, "screen-run").await);
    assert!(text(c, "run-title").await.contains("Latency under load"));
    if let Some(name) = screenshot {
        save_screenshot(c, &format!("{name}-running")).await;
    }
    // The Result screen comes with this run's result (the previous one's stays in its box).
    wait_shown(c, "screen-result", Duration::from_secs(40)).await;
    wait_shown(c, "result-latency", Duration::from_secs(1)).await;
    wait_shown(c, "share", Duration::from_secs(5)).await;
    // The figures shown are the kept result's.
    let kept = js(
        c,
        "return fetch(document.getElementById('share-url').value + '.json').then(r => r.text());",
    )
    .await;
    serde_json::from_str(kept.as_str().expect("text")).expect("the kept LatencyResult")
}

async fn result_shows_the_kept_figures(c: &Client, kept: &LatencyResult) {
    let headline = text(c, "latency-headline").await;
    let worst = kept.worst_loaded().expect("a loaded phase");
    assert!(
        headline.contains(worst.phase.name()) && headline.contains("RPM"),
        "{headline}"
    );
    let phases = js(
        c,
        "return [...document.querySelectorAll('#latency-table tr[data-phase]:not(.detail)')]\
         .map(r => [r.dataset.phase, r.children[1].textContent]);",
    )
    .await;
    let phases: Vec<(String, String)> = serde_json::from_value(phases).expect("rows");
    assert_eq!(phases.len(), 4, "{phases:?}");
    for ((name, rtt), figures) in phases.iter().zip(&kept.phases) {
        assert_eq!(name, figures.phase.name());
        let p50 = figures.rtt.expect("round trips").p50;
        let shown: f64 = rtt
            .split(' ')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(f64::NAN);
        assert!(
            (shown - p50).abs() <= 0.006 * p50.max(1.0),
            "{name}: shown {rtt}, kept p50 {p50}"
        );
    }
    for chart in ["latency-timeline", "latency-cdf"] {
        let drawn = js(
            c,
            &format!("return !!document.querySelector('#{chart} svg');"),
        )
        .await;
        assert_eq!(drawn, Value::Bool(true), "{chart}");
    }
    // Nothing is wider than the phone.
    let overflow = js(
        c,
        "return [...document.querySelectorAll('#result-latency > *')]\
         .filter(e => !e.hidden && e.getBoundingClientRect().right > window.innerWidth + 1)\
         .map(e => e.id || e.tagName);",
    )
    .await;
    assert_eq!(overflow, Value::Array(vec![]), "wider than the screen");
}

async fn two_runs_reopen_and_overlay_from_the_history(c: &Client) {
    click(c, "#nav-history").await;
    wait_shown(c, "screen-history", Duration::from_secs(5)).await;
    let rows = "#history-list li[data-kind='latency']";
    let mut listed = 0;
    for _ in 0..50 {
        listed = js(
            c,
            &format!("return document.querySelectorAll(\"{rows}\").length;"),
        )
        .await
        .as_u64()
        .unwrap_or(0);
        if listed >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(listed, 2, "{}", text(c, "history-list").await);
    assert!(text(c, "history-list").await.contains("Latency under load"));
    click(c, &format!("{rows} input[data-pick]")).await;
    click(c, &format!("{rows}:nth-child(2) input[data-pick]")).await;
    click(c, "#compare").await;
    wait_shown(c, "overlay-chart", Duration::from_secs(10)).await;
    let compared = js(
        c,
        "return document.querySelectorAll('#overlay-chart svg.latency-compare polyline').length;",
    )
    .await;
    assert_eq!(compared, Value::from(2), "one loaded-RTT line per run");
    save_screenshot(c, "browser-latency-compare").await;
    // A run reopens as itself.
    click(c, &format!("{rows} button.open")).await;
    wait_shown(c, "result-latency", Duration::from_secs(10)).await;
}

#[tokio::test]
async fn a_phone_runs_latency_under_load_sees_it_live_and_compares_two_runs() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    with_browser(|c| async move {
        open_ui(&c, &dut).await;
        let kept = run_from_the_preset(&c, &pc, Some("browser-latency")).await;
        result_shows_the_kept_figures(&c, &kept).await;
        save_screenshot(&c, "browser-latency").await;
        run_from_the_preset(&c, &pc, None).await;
        two_runs_reopen_and_overlay_from_the_history(&c).await;
        // One tap runs the last test again; a reload comes back to the result shown, the
        // form starts at that peer, and the peers tested are offered.
        wait_shown(&c, "run-again", Duration::from_secs(2)).await;
        c.refresh().await.expect("reload");
        wait_shown(&c, "result-latency", Duration::from_secs(20)).await;
        click(&c, "#nav-new").await;
        let target = js(&c, "return document.getElementById('f-target').value;").await;
        assert_eq!(target, Value::from(pc.control.clone()), "remembered");
        let offered = js(
            &c,
            "return [...document.querySelectorAll('#recent-peers option')].map(o => o.value);",
        )
        .await;
        assert_eq!(offered, serde_json::json!([pc.control.clone()]));
    })
    .await;
}
