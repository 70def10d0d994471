//! Expectations typed in the New test form's Expect field, judged where a phone reads the
//! result: a bad one is the field's error, a rate loopback cannot reach fails with the check's
//! words, a modest one passes — on the Result screen, on the result reopened from History and
//! on its page `/r/<id>`. The badge passes the phone audit (contrast, overflow) in both themes.

use std::time::Duration;

use fantoccini::Client;
use perfpeer_tests::Peer;
use serde_json::Value;

use super::history::wait_true;
use super::phone::audit;
use super::{click, fill, js, open_ui, text, wait_shown, with_browser_flags};

/// Runs a 2 s TCP test to `pc` from the form with `expect` in its Expect field; its Result
/// screen must say `badge` with checks that start with `first` and hold `words`. Ends scrolled
/// to the top of the screen.
async fn judged(c: &Client, pc: &Peer, expect: &str, badge: &str, first: &str, words: &str) {
    click(c, "#nav-new").await;
    wait_shown(c, "screen-new", Duration::from_secs(5)).await;
    fill(c, "f-target", &pc.control).await;
    fill(c, "f-seconds", "2").await;
    open_more_settings(c).await;
    fill(c, "f-expect", expect).await;
    click(c, "#start").await;
    wait_shown(c, "screen-run", Duration::from_secs(5)).await;
    wait_shown(c, "screen-result", Duration::from_secs(30)).await;
    wait_shown(c, "verdict", Duration::from_secs(2)).await;
    assert_eq!(text(c, "verdict-badge").await, badge);
    let checks = text(c, "verdict-checks").await;
    assert!(
        checks.starts_with(first) && checks.contains(words),
        "{checks}"
    );
    js(c, "window.scrollTo(0, 0); return true;").await;
}

/// Opens the form's More settings, where Expect is (it stays open once opened).
async fn open_more_settings(c: &Client) {
    if js(c, "return document.getElementById('more-settings').open;").await != Value::Bool(true) {
        click(c, "#more-settings summary").await;
    }
}

#[tokio::test]
async fn the_result_screen_and_page_say_whether_the_expectations_were_met() {
    for (theme, flags) in [("light", &[][..]), ("dark", &["--force-dark-mode"][..])] {
        let dut = Peer::start(&[]);
        let pc = Peer::start(&[]);
        let (dut, pc) = (&dut, &pc);
        with_browser_flags(flags, |c| async move {
            open_ui(&c, dut).await;
            // Written wrong: the field's error in the parser's words, nothing started.
            click(&c, "#nav-new").await;
            wait_shown(&c, "screen-new", Duration::from_secs(5)).await;
            fill(&c, "f-target", &pc.control).await;
            open_more_settings(&c).await;
            fill(&c, "f-expect", "rx>300M").await;
            click(&c, "#start").await;
            wait_shown(&c, "form-error", Duration::from_secs(2)).await;
            let error = text(&c, "form-error").await;
            assert!(error.contains("'rx>300M' is not an expectation"), "{error}");
            let invalid =
                "return document.getElementById('f-expect').classList.contains('invalid');";
            assert_eq!(js(&c, invalid).await, Value::Bool(true));

            // 10 Tbit/s over loopback: a fail, with the check that missed and by how much.
            judged(&c, pc, "rx>=10T", "FAIL", "rx>=10T: ", "% short").await;
            audit(&c, "result-verdict-fail", theme).await;
            // 1 kbit/s: a pass, each check with its figure.
            let expect = "rx>=1k, retransmits<=1000000";
            judged(&c, pc, expect, "PASS", "rx>=1k: ", "retransmits<=1000000: ").await;
            audit(&c, "result-verdict-pass", theme).await;

            // Reopened from History, the kept result is judged the same.
            wait_shown(&c, "share", Duration::from_secs(10)).await;
            let url = js(&c, "return document.getElementById('share-url').value;").await;
            let url = url.as_str().expect("the share link").to_string();
            let id = url.rsplit('/').next().expect("an id").to_string();
            click(&c, "#nav-history").await;
            wait_true(
                &c,
                "the judged result listed",
                &format!("return !!document.querySelector(\"button[data-open='{id}']\");"),
            )
            .await;
            click(&c, &format!("button[data-open='{id}']")).await;
            wait_shown(&c, "screen-result", Duration::from_secs(10)).await;
            wait_shown(&c, "verdict", Duration::from_secs(5)).await;
            assert_eq!(text(&c, "verdict-badge").await, "PASS");

            // Its page: the badge and every check, near the top.
            c.goto(&url).await.expect("open the result page");
            let badge = js(
                &c,
                "const b = document.querySelector('section.verdict.pass .badge'); \
                 return b ? b.textContent : null;",
            )
            .await;
            assert_eq!(badge, Value::from("PASS"));
            let rows = js(
                &c,
                "return [...document.querySelectorAll('table.checks tr')].map(r => r.innerText);",
            )
            .await;
            let rows: Vec<&str> = rows
                .as_array()
                .expect("rows")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            assert_eq!(rows.len(), 3, "a header and two checks: {rows:?}");
            assert!(
                rows[1].starts_with("rx>=1k\t") && rows[1].ends_with("\tPASS\t–"),
                "{rows:?}"
            );
            audit(&c, "result-page-verdict", theme).await;
        })
        .await;
    }
}
