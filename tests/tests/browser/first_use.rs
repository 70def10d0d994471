//! A new user's first steps on a 390 px phone, where the page used to trip them up: an open
//! peer's History lists its results without a token; Back from a result opened from History
//! returns to History; a refused token is said to be refused when a test is started; a
//! `#token=` link with a wrong token does not lose the working one remembered; "Download as a
//! file" carries the notes and tags the peer's `/r/<id>` page shows. Each new state passes the
//! phone audit (overflow, tap targets, contrast).

use std::time::Duration;

use fantoccini::Client;
use perfpeer_tests::{Peer, TOKEN};
use serde_json::Value;

use super::history::{http_get, stored_test, wait_true};
use super::phone::{audit, hash};
use super::{click, fill, js, open_ui, text, wait_shown, with_browser_flags};

/// Each check runs in both themes: (its name, Chromium's flags for it).
const THEMES: [(&str, &[&str]); 2] = [("light", &[]), ("dark", &["--force-dark-mode"])];

/// The token this browser remembers (localStorage).
async fn remembered_token(c: &Client) -> Value {
    js(c, "return localStorage.getItem('perfpeer-token');").await
}

/// Opens History from the Peer screen and waits for the row of result `id`.
async fn history_with(c: &Client, id: &str) {
    click(c, "#open-history").await;
    wait_shown(c, "screen-history", Duration::from_secs(5)).await;
    wait_true(
        c,
        "the stored result listed",
        &format!("return !!document.querySelector(\"#history-list li[data-id='{id}']\");"),
    )
    .await;
}

/// Opens result `id` from History (from the Peer screen).
async fn open_from_history(c: &Client, id: &str) {
    history_with(c, id).await;
    click(c, &format!("button[data-open='{id}']")).await;
}

/// A peer (started with `extra`) that keeps one result, and that result's id.
fn peer_with_a_result(extra: &[&str]) -> (Peer, String) {
    let peer = Peer::start(extra);
    let id = stored_test(&peer, &["-t", "1"]);
    (peer, id)
}

/// The notes card of a page (`/r/<id>` or the downloaded file).
fn notes_card(page: &str) -> &str {
    let start = page
        .find("<section class='card notes'>")
        .unwrap_or_else(|| panic!("no notes card in the page: {page}"));
    let len = page[start..].find("</section>").expect("the card ends") + "</section>".len();
    &page[start..start + len]
}

#[tokio::test]
async fn an_open_peers_history_lists_its_results_without_a_token() {
    let (peer, id) = peer_with_a_result(&["--open"]);
    let (peer, id) = (&peer, &id);
    // The API answers without a token: the page must too.
    assert_eq!(http_get(&peer.control, "/api/results").0, 200);
    for (theme, flags) in THEMES {
        with_browser_flags(flags, |c| async move {
            c.goto(&format!("http://{}/", peer.control))
                .await
                .expect("open the page");
            wait_shown(&c, "screen-peer", Duration::from_secs(20)).await;
            wait_shown(&c, "open-history", Duration::from_secs(5)).await;
            history_with(&c, id).await;
            let status = text(&c, "history-status").await;
            assert!(status.starts_with("1 of 1 results"), "{status}");
            audit(&c, "open-peer-history", theme).await;
            // A row opens too: the result, without a token.
            click(&c, &format!("button[data-open='{id}']")).await;
            wait_shown(&c, "share", Duration::from_secs(10)).await;
        })
        .await;
    }
}

#[tokio::test]
async fn back_from_a_result_opened_from_history_returns_to_history() {
    let (peer, id) = peer_with_a_result(&[]);
    let (peer, id) = (&peer, &id);
    for (theme, flags) in THEMES {
        with_browser_flags(flags, |c| async move {
            open_ui(&c, peer).await;
            history_with(&c, id).await;
            assert_eq!(hash(&c).await, "#/history");
            click(&c, &format!("button[data-open='{id}']")).await;
            wait_shown(&c, "screen-result", Duration::from_secs(10)).await;
            assert_eq!(hash(&c).await, format!("#/result/{id}"));
            js(&c, "history.back(); return true;").await;
            wait_shown(&c, "screen-history", Duration::from_secs(5)).await;
            assert_eq!(hash(&c).await, "#/history");
            wait_true(
                &c,
                "the list again",
                "return document.querySelectorAll('#history-list li').length === 1;",
            )
            .await;
            audit(&c, "history-after-back", theme).await;
            // Forward goes to the result again; Back once more, to History again.
            js(&c, "history.forward(); return true;").await;
            wait_shown(&c, "screen-result", Duration::from_secs(10)).await;
            assert_eq!(hash(&c).await, format!("#/result/{id}"));
            js(&c, "history.back(); return true;").await;
            wait_shown(&c, "screen-history", Duration::from_secs(5)).await;
            js(&c, "history.back(); return true;").await;
            wait_shown(&c, "screen-peer", Duration::from_secs(5)).await;
        })
        .await;
    }
}

#[tokio::test]
async fn a_wrong_token_after_start_is_said_to_be_refused() {
    let peer = Peer::start(&[]);
    let peer = &peer;
    for (theme, flags) in THEMES {
        with_browser_flags(flags, |c| async move {
            c.goto(&format!("http://{}/#token=not-the-token", peer.control))
                .await
                .expect("open the page");
            wait_shown(&c, "token-error", Duration::from_secs(20)).await;
            click(&c, "#nav-new").await;
            wait_shown(&c, "screen-new", Duration::from_secs(5)).await;
            fill(&c, "f-target", "127.0.0.1:1").await;
            click(&c, "#start").await;
            wait_shown(&c, "notice", Duration::from_secs(5)).await;
            // The Connect screen's words: refused, not missing.
            assert_eq!(
                text(&c, "notice-title").await,
                "This peer did not accept the token"
            );
            assert!(
                text(&c, "notice-detail")
                    .await
                    .contains("refused the one this page has")
            );
            assert!(text(&c, "notice-hint").await.contains("#token="));
            // The error box follows the theme: a dark ground in the dark one, not the light one's pink.
            let ground = js(
            &c,
            "const [r, g, b] = getComputedStyle(document.getElementById('notice')).backgroundColor \
               .match(/\\d+/g).map(Number); return r + g + b;",
        )
        .await;
            let sum = ground.as_f64().unwrap_or(f64::NAN);
            assert!(
                if theme == "dark" {
                    sum < 200.0
                } else {
                    sum > 600.0
                },
                "the notice's background in the {theme} theme: {ground}"
            );
            audit(&c, "new-token-refused", theme).await;
        })
        .await;
    }
}

#[tokio::test]
async fn a_token_link_does_not_lose_a_working_token() {
    let peer = Peer::start(&[]);
    let peer = &peer;
    for (theme, flags) in THEMES {
        with_browser_flags(flags, |c| async move {
            open_ui(&c, peer).await;
            assert_eq!(remembered_token(&c).await, Value::from(TOKEN));
            // A link with a wrong token, opened as a new page (a tap on a phone).
            c.goto("about:blank").await.expect("leave the page");
            c.goto(&format!("http://{}/#token=not-the-token", peer.control))
                .await
                .expect("open the link");
            wait_shown(&c, "notice", Duration::from_secs(20)).await;
            assert_eq!(
                text(&c, "notice-title").await,
                "The peer did not accept the new token"
            );
            wait_shown(&c, "screen-peer", Duration::from_secs(5)).await;
            assert_eq!(remembered_token(&c).await, Value::from(TOKEN));
            audit(&c, "peer-link-token-refused", theme).await;
            // Opened over the page (the fragment changes): the same.
            click(&c, "#dismiss").await;
            js(&c, "location.hash = '#token=still-not-it'; return true;").await;
            wait_shown(&c, "notice", Duration::from_secs(20)).await;
            wait_shown(&c, "open-history", Duration::from_secs(5)).await;
            assert_eq!(remembered_token(&c).await, Value::from(TOKEN));
            // The next load needs no link: the working token is still there.
            c.goto("about:blank").await.expect("leave the page");
            c.goto(&format!("http://{}/", peer.control))
                .await
                .expect("open the page");
            wait_shown(&c, "screen-peer", Duration::from_secs(20)).await;
            wait_shown(&c, "open-history", Duration::from_secs(5)).await;
        })
        .await;
    }
}

#[tokio::test]
async fn the_downloaded_file_carries_the_notes_and_tags() {
    let (peer, id) = peer_with_a_result(&[]);
    let (peer, id) = (&peer, &id);
    for (theme, flags) in THEMES {
        with_browser_flags(flags, |c| async move {
            let download =
                "return fetch(document.getElementById('html-download').href).then(r => r.text());";
            open_ui(&c, peer).await;
            open_from_history(&c, id).await;
            wait_shown(&c, "notes-edit", Duration::from_secs(10)).await;
            fill(&c, "notes-text", "fw 1.2 on the lab board").await;
            fill(&c, "notes-tags", "ch36 lab").await;
            click(&c, "#notes-save").await;
            wait_shown(&c, "notes-saved", Duration::from_secs(10)).await;
            // Just saved: the file has them, as the peer's page does.
            let (status, page) = http_get(&peer.control, &format!("/r/{id}"));
            assert_eq!(status, 200);
            let file = js(&c, download).await;
            let file = file.as_str().expect("the file's text");
            assert!(file.contains("<span class='tag'>ch36</span>"), "{file}");
            assert!(file.contains("fw 1.2 on the lab board"), "{file}");
            assert_eq!(notes_card(file), notes_card(&page));
            audit(&c, "result-notes-saved", theme).await;
            // Opened afresh from History: the notes it was kept with.
            c.goto("about:blank").await.expect("leave the page");
            open_ui(&c, peer).await;
            open_from_history(&c, id).await;
            wait_shown(&c, "notes", Duration::from_secs(10)).await;
            let file = js(&c, download).await;
            assert_eq!(
                notes_card(file.as_str().expect("the file's text")),
                notes_card(&page)
            );
        })
        .await;
    }
}
