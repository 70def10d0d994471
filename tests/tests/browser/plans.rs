//! A regression plan run from the phone: the New screen's Plans button lists the peer's plans
//! (`perfpeer serve --plans DIR`; a bad file listed with its error, no button), one tap runs
//! one with the tags typed above the list, the table fills in row by row, the verdict badge says PASS at the end with a link to
//! the plan run's page; History lists the run with its badge and opens it as that page. Each
//! of these passes the phone audit (width, tap targets, contrast).

use std::time::Duration;

use perfpeer_tests::Peer;
use serde_json::Value;

use super::history::wait_true;
use super::phone::audit;
use super::{click, fill, js, open_ui, text, wait_shown, with_browser};

#[tokio::test]
async fn a_phone_runs_a_plan_of_the_peer_and_sees_its_table_fill_in() {
    let pc = Peer::start(&[]);
    let dir = perfpeer_tests::plans_dir(&pc.control);
    let dut = Peer::start(&["--plans", dir.to_str().unwrap()]);
    let dut = &dut;
    with_browser(|c| async move {
        open_ui(&c, dut).await;
        click(&c, "#nav-new").await;
        wait_shown(&c, "screen-new", Duration::from_secs(5)).await;
        click(&c, "#open-plans").await;
        wait_shown(&c, "screen-plans", Duration::from_secs(5)).await;
        wait_true(
            &c,
            "the plans listed",
            "return !!document.querySelector(\"button[data-plan='quick']\");",
        )
        .await;
        let list = text(&c, "plans-list").await;
        assert!(list.contains("broken: broken.toml:"), "{list}");
        assert!(list.contains("quick · 2 cases · about 4 s"), "{list}");
        assert_eq!(
            js(
                &c,
                "return document.querySelectorAll('#plans-list button').length;"
            )
            .await,
            Value::from(1),
            "a bad plan has no button"
        );
        audit(&c, "plans", "light").await;
        // Tags typed before the tap go with the run (and each of its tests).
        fill(&c, "plan-tags", "fw=9.9.9 board=a7").await;
        click(&c, "button[data-plan='quick']").await;
        wait_shown(&c, "plan-run", Duration::from_secs(5)).await;
        // Row by row: one row while the second case runs, then two.
        let rows = "return document.querySelectorAll('#plan-table tr').length - 1;";
        wait_true(
            &c,
            "the first row",
            &format!("return (() => {{ {rows} }})() >= 1;"),
        )
        .await;
        wait_shown(&c, "plan-verdict", Duration::from_secs(30)).await;
        assert_eq!(js(&c, rows).await, Value::from(2));
        assert_eq!(text(&c, "plan-badge").await, "PASS");
        let class = js(
            &c,
            "return document.getElementById('plan-verdict').className;",
        )
        .await;
        assert_eq!(class, Value::from("card verdict pass"));
        let table = text(&c, "plan-table").await;
        assert!(table.contains("up") && table.contains("down"), "{table}");
        // Each case's kept repeat is linked from its row.
        assert_eq!(
            js(
                &c,
                "return document.querySelectorAll(\"#plan-table a[href^='/r/']\").length;"
            )
            .await,
            Value::from(2)
        );
        assert!(text(&c, "plan-progress").await.starts_with("Done"));
        wait_shown(&c, "plan-link", Duration::from_secs(2)).await;
        let href = js(
            &c,
            "return document.getElementById('plan-link').getAttribute('href');",
        )
        .await;
        let href = href.as_str().expect("a link").to_string();
        assert!(href.starts_with("/r/"), "{href}");
        let id = href.trim_start_matches("/r/").to_string();
        audit(&c, "plan-done", "light").await;
        // The run is over for the connection too: the list comes again.
        click(&c, "#plan-list-again").await;
        wait_shown(&c, "plans-box", Duration::from_secs(5)).await;
        wait_true(
            &c,
            "the plans listed again",
            "return !!document.querySelector(\"button[data-plan='quick']\");",
        )
        .await;

        // History: the plan run with its badge, opening its page.
        click(&c, "#nav-history").await;
        let row = format!("#history-list li[data-id='{id}']");
        wait_true(
            &c,
            "the plan run listed",
            &format!("return !!document.querySelector(\"{row} a.open\");"),
        )
        .await;
        let badge = js(
            &c,
            &format!(
                "const b = document.querySelector(\"{row} .badge.pass\"); \
                 return b ? b.textContent : null;"
            ),
        )
        .await;
        assert_eq!(badge, Value::from("PASS"));
        audit(&c, "history-plan", "light").await;
        click(&c, &format!("{row} a.open")).await;
        wait_true(
            &c,
            "the plan run's page",
            &format!("return location.pathname === '/r/{id}';"),
        )
        .await;
        let page = js(&c, "return document.body.innerText;").await;
        assert!(
            page.as_str().unwrap_or_default().contains("quick"),
            "{page}"
        );
        assert!(
            page.as_str().unwrap_or_default().contains("fw=9.9.9"),
            "the run's tags on its page: {page}"
        );
    })
    .await;
    let _ = std::fs::remove_dir_all(dir);
}
