//! The page as a person next to a DUT uses it on a 390 px phone: every screen (Peer, New test
//! with its settings open, Running, Result, History, a sweep's Result), in the light and the
//! dark theme, is checked from the rendered styles — nothing wider than the screen, every tap
//! target at least 44 × 44 px, every text at WCAG AA contrast (4.5:1, 3:1 for large text)
//! against the background it is drawn on. On the way: a fresh profile's Peer screen starts a
//! test to the other peer typed there; Cancel stays on screen while a UDP test's lines grow;
//! Run again and Share are in the Result's first screenful; each tool's text (iperf3's
//! sender/receiver tags included) and a real sweep's table fit without a sideways swipe.
//! Then the flows a phone needs: a preset that starts at once, a reload mid-test that comes
//! back to the running test, Back through the screens, a cancelled audio stream that keeps the
//! receiver's loss and jitter, one tap from the printed URL to a running test against the last
//! peer, and a running test on the Peer screen that a tap follows.
//! Screenshots (light and dark) go to tests/artifacts/phone-*.png.

use std::time::Duration;

use fantoccini::Client;
use perfpeer_tests::{Peer, TOKEN};
use serde_json::Value;

use super::{
    PHONE, click, fill, js, open_ui, save_screenshot, select, summary_value, text, wait_shown,
    with_browser, with_browser_flags,
};

/// Lists what breaks the phone rules on the screen shown: overflow, small tap targets, low
/// contrast. Computed from the rendered boxes and styles.
const AUDIT: &str = r#"
const problems = [];
// The phone's width: a page wider than it can widen innerWidth under mobile emulation.
const vw = Math.min(window.innerWidth, arguments[0]);
const visible = e => {
  if (e.closest('[hidden]')) return false;
  const r = e.getBoundingClientRect(), cs = getComputedStyle(e);
  return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none';
};
const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') +
  (typeof e.className === 'string' && e.className.trim() ? '.' + e.className.trim().split(/\s+/).join('.') : '');
if (document.documentElement.scrollWidth > vw + 1)
  problems.push('the page scrolls sideways: ' + document.documentElement.scrollWidth + ' px');
const clipped = e => {
  for (let p = e.parentElement; p; p = p.parentElement) {
    const o = getComputedStyle(p).overflowX;
    if (o === 'auto' || o === 'scroll' || o === 'hidden') return true;
  }
  return false;
};
const all = [...document.querySelectorAll('body *')].filter(visible);
for (const e of all) {
  if (e.closest('svg') && e.tagName.toLowerCase() !== 'svg') continue;
  const r = e.getBoundingClientRect();
  if ((r.right > vw + 1 || r.left < -1) && !clipped(e))
    problems.push('wider than the screen: ' + name(e) + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
}
for (const e of all.filter(e => e.matches('button, a.button, input, select, summary, [data-open], [data-attach]'))) {
  const t = e.type === 'checkbox' ? (e.closest('label') || e) : e;
  const r = t.getBoundingClientRect();
  if (r.width < 43.5 || r.height < 43.5)
    problems.push('tap target under 44 px: ' + name(e) + ' ' + Math.round(r.width) + 'x' + Math.round(r.height));
}
const rgba = s => {
  const m = /rgba?\(([^)]+)\)/.exec(s || '');
  if (!m) return null;
  const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
  return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
};
const over = (top, under) => [0, 1, 2].map(i => top[i] * top[3] + under[i] * (1 - top[3])).concat([1]);
const background = e => {
  const layers = [];
  for (let p = e; p; p = p.parentElement) {
    const c = rgba(getComputedStyle(p).backgroundColor);
    if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
  }
  let out = [255, 255, 255, 1];
  if (!layers.length || layers[layers.length - 1][3] < 1) {
    const root = rgba(getComputedStyle(document.documentElement).backgroundColor);
    if (root && root[3] > 0) out = over(root, out);
  }
  for (let i = layers.length - 1; i >= 0; i--) out = over(layers[i], out);
  return out;
};
const lum = c => {
  const f = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
};
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
for (const e of all) {
  const own = [...e.childNodes].some(n => n.nodeType === 3 && n.textContent.trim());
  if (!own || e.closest(':disabled') || e.tagName.toLowerCase() === 'option') continue;
  const cs = getComputedStyle(e);
  const svg = e.closest('svg');
  const bg = background(svg ? svg.parentElement : e);
  let fg = rgba(svg ? cs.fill : cs.color);
  if (!fg) continue;
  fg = over(fg, bg);
  const size = parseFloat(cs.fontSize), bold = parseInt(cs.fontWeight, 10) >= 700;
  const need = size >= 24 || (size >= 18.66 && bold) ? 3 : 4.5;
  const got = ratio(fg, bg);
  if (got < need)
    problems.push('contrast ' + got.toFixed(2) + ':1 < ' + need + ' for ' + name(e) + ' "' + e.textContent.trim().slice(0, 30) + '"');
}
return problems;
"#;

pub(super) async fn audit(c: &Client, screen: &str, theme: &str) {
    let shot = save_screenshot(c, &format!("phone-{screen}-{theme}")).await;
    let problems = c
        .execute(AUDIT, vec![Value::from(PHONE.0)])
        .await
        .expect("script runs");
    let problems: Vec<String> = problems
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| p.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        problems.is_empty(),
        "{screen} ({theme}) at 390 px:\n  {}\nscreenshot {}",
        problems.join("\n  "),
        shot.display()
    );
}

pub(super) async fn hash(c: &Client) -> String {
    js(c, "return location.hash;")
        .await
        .as_str()
        .unwrap_or_default()
        .to_string()
}

async fn wait_true(c: &Client, what: &str, script: &str, limit: Duration) {
    let deadline = tokio::time::Instant::now() + limit;
    while js(c, script).await != Value::Bool(true) {
        if tokio::time::Instant::now() > deadline {
            let shot = save_screenshot(c, "phone-timeout").await;
            panic!(
                "{what}: not within {limit:?} (screenshot {})",
                shot.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The box of the element `css` selects (left, top, right, bottom) and the viewport's size.
async fn box_of(c: &Client, css: &str) -> ([f64; 4], f64, f64) {
    let script = format!(
        "const r = document.querySelector(\"{css}\").getBoundingClientRect(); \
         return [r.left, r.top, r.right, r.bottom, innerWidth, innerHeight];"
    );
    let b: Vec<f64> = serde_json::from_value(js(c, &script).await).expect("a box");
    // A page wider than the phone can widen innerWidth under mobile emulation.
    let (width, height) = (b[4].min(PHONE.0.into()), b[5].min(PHONE.1.into()));
    ([b[0], b[1], b[2], b[3]], width, height)
}

/// Fails unless the element `css` selects lies inside the viewport as the page is scrolled now
/// (`across`: only from left to right).
async fn assert_in_view(c: &Client, css: &str, across: bool, what: &str) {
    let ([left, top, right, bottom], width, height) = box_of(c, css).await;
    let inside = right > left
        && left >= -0.5
        && right <= width + 0.5
        && (across || (top >= -0.5 && bottom <= height + 0.5));
    if !inside {
        let shot = save_screenshot(c, "phone-out-of-view").await;
        panic!(
            "{what}: {css} at {left:.0},{top:.0}..{right:.0},{bottom:.0}, out of the \
             {width}x{height} viewport (screenshot {})",
            shot.display()
        );
    }
}

/// What keeps a text pane's lines out of reach: the pane scrolling sideways, or one of the
/// words given (each expected) outside the pane or the viewport.
const PANE_REACH: &str = r#"
const [id, words, vw] = arguments;
const pane = document.getElementById(id);
const problems = [];
if (pane.scrollWidth > pane.clientWidth + 1)
  problems.push('#' + id + ' scrolls sideways: ' + pane.scrollWidth + ' px in ' + pane.clientWidth);
const box = pane.getBoundingClientRect();
for (const word of words) {
  let found = 0;
  const walk = document.createTreeWalker(pane, NodeFilter.SHOW_TEXT);
  for (let n = walk.nextNode(); n; n = walk.nextNode()) {
    for (let i = n.data.indexOf(word); i >= 0; i = n.data.indexOf(word, i + 1)) {
      found++;
      const range = document.createRange();
      range.setStart(n, i);
      range.setEnd(n, i + word.length);
      const r = range.getBoundingClientRect();
      if (r.left < box.left - 0.5 || r.right > Math.min(box.right, vw) + 0.5)
        problems.push("'" + word + "' at " + Math.round(r.left) + '..' + Math.round(r.right) +
          ' px, the pane ' + Math.round(box.left) + '..' + Math.round(box.right));
    }
  }
  if (!found) problems.push("no '" + word + "' in #" + id);
}
return problems;
"#;

/// Fails unless every line of the text pane `#id` is in reach without a sideways swipe, the
/// `words` (a line's last) included.
async fn assert_pane_in_reach(c: &Client, id: &str, words: &[&str]) {
    let problems = c
        .execute(
            PANE_REACH,
            vec![
                Value::from(id),
                Value::from(words.to_vec()),
                Value::from(PHONE.0),
            ],
        )
        .await
        .expect("script runs");
    if problems.as_array().is_some_and(|p| !p.is_empty()) {
        let shot = save_screenshot(c, &format!("phone-{id}")).await;
        panic!("{problems} (screenshot {})", shot.display());
    }
}

/// A fresh profile's Peer screen: "Test this peer to [other peer] [Start]" on top, which
/// refuses this peer's own address and starts a default TCP test to the other peer; after it,
/// the one-tap "Test to <peer>" takes its place.
async fn first_open_starts_a_test(c: &Client, dut: &Peer, pc: &Peer, theme: &str) {
    wait_shown(c, "first-test", Duration::from_secs(5)).await;
    assert_in_view(c, "#first-start", false, "Start on the first screen").await;
    audit(c, "peer", theme).await;
    fill(c, "first-target", &dut.control).await;
    click(c, "#first-start").await;
    wait_shown(c, "first-error", Duration::from_secs(2)).await;
    assert!(text(c, "first-error").await.contains("is this peer"));
    fill(c, "first-target", &pc.control).await;
    click(c, "#first-start").await;
    wait_shown(c, "screen-run", Duration::from_secs(5)).await;
    let title = text(c, "run-title").await;
    assert!(
        title.starts_with("TCP TX") && title.ends_with(&format!("→ {}", pc.control)),
        "{title}"
    );
    wait_true(
        c,
        "live figures of the first test",
        "return document.getElementById('live-current').textContent.includes('bit/s');",
        Duration::from_secs(10),
    )
    .await;
    click(c, "#cancel").await;
    wait_shown(c, "screen-result", Duration::from_secs(20)).await;
    assert_eq!(summary_value(c, "status").await, "cancelled");
    click(c, "#nav-peer").await;
    wait_shown(c, "quick", Duration::from_secs(5)).await;
    assert_eq!(
        text(c, "quick-test").await,
        format!("Test to {}", pc.control)
    );
    assert_eq!(
        js(c, "return document.getElementById('first-test').hidden;").await,
        Value::Bool(true),
        "the first-open Start gives way to the one-tap test"
    );
}

/// Every screen in one theme: a short paced UDP test gives Running, Result and History.
async fn every_screen(c: &Client, dut: &Peer, pc: &Peer, theme: &str) {
    open_ui(c, dut).await;
    // The address the peer listens on (not every interface's), and both of its ports.
    let (host, control) = dut.control.rsplit_once(':').expect("host:port");
    assert_eq!(text(c, "peer-addresses").await, host);
    let ports = text(c, "peer-ports").await;
    assert!(
        ports.starts_with(&format!("{control} (web page and control")),
        "{ports}"
    );
    assert!(ports.contains("(data, TCP and UDP)"), "{ports}");
    first_open_starts_a_test(c, dut, pc, theme).await;
    click(c, "#nav-new").await;
    wait_shown(c, "screen-new", Duration::from_secs(5)).await;
    click(c, "#more-settings summary").await;
    select(c, "f-protocol", "dccp").await;
    wait_shown(c, "row-dccp", Duration::from_secs(2)).await;
    audit(c, "new", theme).await;
    fill(c, "f-target", &pc.control).await;
    select(c, "f-protocol", "udp").await;
    fill(c, "f-seconds", "6").await;
    fill(c, "f-bitrate", "5M").await;
    click(c, "#start").await;
    wait_shown(c, "screen-run", Duration::from_secs(5)).await;
    wait_true(
        c,
        "live figures",
        "return document.getElementById('live-current').textContent.includes('bit/s');",
        Duration::from_secs(10),
    )
    .await;
    // Cancel is on screen while the test runs, also once the stream's lines have grown.
    assert_in_view(c, "#cancel", false, "Cancel as the test starts").await;
    audit(c, "running", theme).await;
    wait_true(
        c,
        "the stream's lines grown",
        "return document.getElementById('run-lines').textContent.split('\\n').length > 6;",
        Duration::from_secs(10),
    )
    .await;
    assert_in_view(c, "#cancel", false, "Cancel with the stream's lines grown").await;
    assert_pane_in_reach(c, "run-lines", &[]).await;
    // At the end of the screen, Cancel sits below the lines, covering none of them.
    js(
        c,
        "window.scrollTo(0, document.documentElement.scrollHeight); return true;",
    )
    .await;
    let (lines, _, _) = box_of(c, "#run-lines").await;
    let (cancel, _, _) = box_of(c, "#cancel").await;
    assert!(
        lines[3] <= cancel[1],
        "Cancel over the lines: {lines:?} {cancel:?}"
    );
    wait_shown(c, "screen-result", Duration::from_secs(30)).await;
    assert!(
        !text(c, "text-iperf3").await.contains("? port ?"),
        "the iperf3 tab names both ends: {}",
        text(c, "text-iperf3").await
    );
    // Run again and Share in the first screenful, under the headline.
    wait_shown(c, "share", Duration::from_secs(10)).await;
    js(c, "window.scrollTo(0, 0); return true;").await;
    assert_in_view(
        c,
        "#run-again",
        false,
        "Run again on the Result's first screen",
    )
    .await;
    assert_in_view(
        c,
        "#share-copy",
        false,
        "Share on the Result's first screen",
    )
    .await;
    audit(c, "result", theme).await;
    // Each tool's text: its lines, the iperf3 sender/receiver tags at their ends, in reach.
    for (tool, words) in [
        ("iperf3", &["sender", "receiver"][..]),
        ("iperf2", &[]),
        ("ttcp", &[]),
        ("netperf", &[]),
    ] {
        click(c, &format!("#tab-{tool}")).await;
        wait_shown(c, &format!("text-{tool}"), Duration::from_secs(2)).await;
        assert_pane_in_reach(c, &format!("text-{tool}"), words).await;
        js(
            c,
            "document.getElementById('tab-iperf3').scrollIntoView(); return true;",
        )
        .await;
        audit(c, &format!("result-{tool}"), theme).await;
    }
    click(c, "#nav-history").await;
    wait_true(
        c,
        "history rows",
        "return document.querySelectorAll('#history-list li').length >= 1;",
        Duration::from_secs(10),
    )
    .await;
    audit(c, "history", theme).await;
    // A sweep's table, its last column (Lost/Total) included, and its text table. Unpaced, the
    // smallest and the largest size give the widest figures (six- and seven-digit counts).
    super::modes::udp_sweep(c, pc, "16,1420", "0").await;
    let (table, width, _) = box_of(c, "#result-sweep table.sweep").await;
    let (column, _, _) = box_of(c, "#result-sweep").await;
    assert!(
        table[0] >= column[0] - 0.5 && table[2] <= column[2].min(width) + 0.5,
        "the sweep table {table:?} is wider than its column {column:?}: {}",
        text(c, "sweep-rows").await
    );
    assert_pane_in_reach(c, "sweep-text", &[]).await;
    audit(c, "sweep", theme).await;
    // The sweep's own page, /r/<id>, when, which way and who, its table within its card.
    wait_shown(c, "share", Duration::from_secs(10)).await;
    let url = js(c, "return document.getElementById('share-url').value;").await;
    c.goto(url.as_str().expect("the share link"))
        .await
        .expect("open the sweep's page");
    let (table, width, _) = box_of(c, "table.sweep").await;
    let (card, _, _) = box_of(c, "section.card:has(table.sweep)").await;
    assert!(
        table[2] <= card[2].min(width) + 0.5,
        "the /r/ sweep table {table:?} is wider than its card {card:?}"
    );
    let page = js(c, "return document.body.innerText;").await;
    let page = page.as_str().unwrap_or_default();
    assert!(
        page.contains(" UTC")
            && page.contains("TX (this peer sends)")
            && page.contains("its far end"),
        "{page}"
    );
    audit(c, "sweep-page", theme).await;
}

#[tokio::test]
async fn every_screen_fits_a_phone_and_reads_in_both_themes() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    with_browser(|c| async move { every_screen(&c, &dut, &pc, "light").await }).await;
    let (dut, pc) = (Peer::start(&[]), Peer::start(&[]));
    with_browser_flags(&["--force-dark-mode"], |c| async move {
        assert_eq!(
            js(
                &c,
                "return matchMedia('(prefers-color-scheme: dark)').matches;"
            )
            .await,
            Value::Bool(true),
            "the dark theme is in use"
        );
        every_screen(&c, &dut, &pc, "dark").await;
    })
    .await;
}

#[tokio::test]
async fn a_phone_starts_with_one_tap_survives_a_reload_and_keeps_a_cancelled_streams_figures() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    with_browser(|c| async move {
        open_ui(&c, &dut).await;
        assert!(hash(&c).await == "#/peer", "the token leaves the URL: {}", hash(&c).await);
        click(&c, "#nav-new").await;
        wait_shown(&c, "screen-new", Duration::from_secs(5)).await;
        fill(&c, "f-target", &pc.control).await;
        // A preset starts at once when the other peer is there.
        click(&c, "#preset-audio").await;
        wait_shown(&c, "screen-run", Duration::from_secs(5)).await;
        let run = hash(&c).await;
        assert!(run.starts_with("#/run/"), "{run}");
        wait_true(
            &c,
            "focus on the Running heading",
            "return document.activeElement.matches('#screen-run h2');",
            Duration::from_secs(2),
        )
        .await;
        assert!(
            js(&c, "return document.title;")
                .await
                .as_str()
                .unwrap_or_default()
                .starts_with("Running: UDP"),
            "the title says what runs"
        );
        // A phone drops the tab: the reload comes back to the running test.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        c.refresh().await.expect("reload");
        wait_shown(&c, "screen-run", Duration::from_secs(20)).await;
        assert_eq!(hash(&c).await, run, "the same run after the reload");
        wait_true(
            &c,
            "the stream's lines after the reload",
            "return document.getElementById('run-lines').textContent.split('\\n').length > 3;",
            Duration::from_secs(10),
        )
        .await;
        // Cancel: both ends' figures, marked cancelled, over the time it ran.
        click(&c, "#cancel").await;
        wait_shown(&c, "screen-result", Duration::from_secs(20)).await;
        assert_eq!(summary_value(&c, "status").await, "cancelled");
        let loss = summary_value(&c, "flow0-loss").await;
        assert!(loss.starts_with("0/"), "the receiver's loss: {loss}");
        assert!(summary_value(&c, "flow0-jitter").await.ends_with(" ms"));
        assert!(text(&c, "result-headline").await.contains("(cancelled)"));
        let ticks = js(
            &c,
            "return [...document.querySelectorAll('#result-chart text.tick')].map(t => t.textContent).join(' ');",
        )
        .await;
        assert!(
            !ticks.as_str().unwrap_or_default().contains("60 s"),
            "the axis is the time it ran, not 60 s: {ticks}"
        );
        assert!(hash(&c).await.starts_with("#/result/"), "{}", hash(&c).await);
        // Notes on the kept result: saved with the token, shown on its share page.
        wait_shown(&c, "notes-edit", Duration::from_secs(5)).await;
        fill(&c, "notes-text", "fw 1.2 on the lab board").await;
        fill(&c, "notes-tags", "ch36 lab").await;
        click(&c, "#notes-save").await;
        wait_shown(&c, "notes-saved", Duration::from_secs(10)).await;
        assert!(text(&c, "notes-shown").await.contains("ch36"));
        let page = js(
            &c,
            "return fetch(document.getElementById('share-url').value).then(r => r.text());",
        )
        .await;
        assert!(
            page.as_str().unwrap_or_default().contains("<span class='tag'>ch36</span>"),
            "the share page shows the notes"
        );
        // Back steps to the screen before the run, inside the app.
        js(&c, "history.back(); return true;").await;
        wait_shown(&c, "screen-new", Duration::from_secs(5)).await;
        // The printed URL again: one tap on "Test to <peer>" runs the last test.
        // A fresh load, as opening the link on a phone is (not a fragment change in this page).
        c.goto("about:blank").await.expect("leave the page");
        c.goto(&format!("http://{}/#token={TOKEN}", dut.control))
            .await
            .expect("open the printed URL");
        wait_shown(&c, "screen-peer", Duration::from_secs(20)).await;
        wait_shown(&c, "quick", Duration::from_secs(5)).await;
        assert_eq!(
            text(&c, "quick-test").await,
            format!("Test to {}", pc.control)
        );
        click(&c, "#quick-test").await;
        wait_shown(&c, "screen-run", Duration::from_secs(5)).await;
        let second = hash(&c).await;
        assert!(second.starts_with("#/run/") && second != run, "{second}");
        save_screenshot(&c, "phone-running-light").await;
        // Another page load: the Peer screen lists the run; a tap follows it.
        c.goto("about:blank").await.expect("leave the page");
        c.goto(&format!("http://{}/#/peer", dut.control))
            .await
            .expect("open the Peer screen");
        wait_true(
            &c,
            "a running test to tap",
            "return !!document.querySelector('#peer-tests [data-attach]');",
            Duration::from_secs(20),
        )
        .await;
        let listed = text(&c, "peer-tests").await;
        assert!(listed.contains("TX (this peer sends)"), "{listed}");
        click(&c, "#peer-tests [data-attach]").await;
        wait_shown(&c, "screen-run", Duration::from_secs(10)).await;
        assert_eq!(hash(&c).await, second);
        click(&c, "#cancel").await;
        wait_shown(&c, "screen-result", Duration::from_secs(20)).await;
        assert_eq!(summary_value(&c, "status").await, "cancelled");
    })
    .await;
}
