//! The web UI in a real browser: Debian's headless Chromium, driven through chromedriver with
//! fantoccini, loads the page a real peer serves, at phone size, with the token in the URL
//! fragment; runs TCP and UDP tests to a second peer and checks the figures shown against the
//! peer's own result for that test (fetched with `attach` on /ws); shows an unreachable target
//! and a wrong token in plain words. Screenshots go to tests/artifacts/.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use futures_util::{FutureExt, SinkExt, StreamExt};
use perfpeer_shared::control::{ClientMsg, ServerMsg};
use perfpeer_shared::format::{iperf2, iperf3, ttcp};
use perfpeer_shared::report::TestResult;
use perfpeer_shared::units::{format_bytes, format_rate};
use perfpeer_tests::{Peer, TOKEN, wait_for};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

mod far_end_side;
mod first_use;
mod history;
mod lab_history;
mod latency;
mod modes;
mod multicast;
mod one_way;
mod phone;
mod plans;
mod verdict;
mod windows;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// A common phone's CSS viewport.
const PHONE: (u32, u32) = (390, 844);

/// chromedriver (and through it Chromium) for one test; both are gone when this drops.
struct Driver {
    child: Child,
    port: u16,
    profile: PathBuf,
}

impl Driver {
    fn start() -> Driver {
        for bin in [CHROMIUM, CHROMEDRIVER] {
            assert!(
                Path::new(bin).exists(),
                "{bin} is missing: run scripts/setup.sh (installs Debian's chromium and chromium-driver)"
            );
        }
        let port = free_port();
        let profile =
            std::env::temp_dir().join(format!("perfpeer-chromium-{}-{port}", std::process::id()));
        let child = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let up = wait_for(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "chromedriver did not listen on port {port}");
        Driver {
            child,
            port,
            profile,
        }
    }

    /// A session with extra Chromium flags (`--force-dark-mode`: the page's dark theme).
    async fn client_with(&self, extra: &[&str]) -> Client {
        let args = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ]
        .into_iter()
        .map(String::from)
        .chain(extra.iter().map(|a| a.to_string()))
        .chain([
            format!("--user-data-dir={}", self.profile.display()),
            format!("--window-size={},{}", PHONE.0, PHONE.1),
        ])
        .collect::<Vec<_>>();
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            // Headless Chromium keeps windows at least 500 px wide: emulate the phone's viewport.
            serde_json::json!({
                "binary": CHROMIUM,
                "args": args,
                "mobileEmulation": {
                    "deviceMetrics": { "width": PHONE.0, "height": PHONE.1, "pixelRatio": 1.0, "touch": true, "mobile": true }
                }
            }),
        );
        ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
            .capabilities(caps)
            .connect(&format!("http://127.0.0.1:{}", self.port))
            .await
            .expect("WebDriver session with headless Chromium")
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // A Chromium left behind by a failed session: ours, found by our unique profile dir.
        kill_processes_using(&self.profile);
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Kills processes whose command line names `profile` (only ever our own Chromium).
fn kill_processes_using(profile: &Path) {
    let needle = profile.display().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            // SAFETY: kill(2) with a pid read from /proc; no memory is involved.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Runs `body` with a fresh browser session, closing the session even when `body` fails.
async fn with_browser<F, Fut>(body: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    with_browser_flags(&[], body).await;
}

/// [`with_browser`] with extra Chromium flags.
async fn with_browser_flags<F, Fut>(flags: &[&str], body: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let driver = Driver::start();
    let client = driver.client_with(flags).await;
    let outcome = std::panic::AssertUnwindSafe(body(client.clone()))
        .catch_unwind()
        .await;
    let _ = client.close().await;
    drop(driver);
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// Waits until `#id` is shown (its `hidden` attribute gone), up to `limit`.
async fn wait_shown(c: &Client, id: &str, limit: Duration) {
    let script = format!("const e = document.getElementById('{id}'); return !!e && !e.hidden;");
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if c.execute(&script, vec![]).await.ok() == Some(Value::Bool(true)) {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            let notice = text(c, "notice").await;
            let shot = save_screenshot(c, &format!("timeout-{id}")).await;
            panic!(
                "#{id} not shown within {limit:?}; notice: {notice:?}; screenshot {}",
                shot.display()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs a script in the page and returns its value.
async fn js(c: &Client, script: &str) -> Value {
    c.execute(script, vec![]).await.expect("script runs")
}

/// Clicks the element `css` selects.
async fn click(c: &Client, css: &str) {
    let el = c
        .find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("no {css}: {e}"));
    if let Err(e) = el.click().await {
        let shot = save_screenshot(c, "click-failed").await;
        panic!("click {css}: {e}; screenshot {}", shot.display());
    }
}

async fn text(c: &Client, id: &str) -> String {
    let script =
        format!("const e = document.getElementById('{id}'); return e ? e.textContent : null;");
    match c.execute(&script, vec![]).await {
        Ok(Value::String(s)) => s,
        _ => String::new(),
    }
}

async fn summary_value(c: &Client, key: &str) -> String {
    c.find(Locator::Css(&format!("#summary dd[data-key='{key}']")))
        .await
        .unwrap_or_else(|e| panic!("no summary figure {key}: {e}"))
        .text()
        .await
        .expect("text")
}

async fn fill(c: &Client, id: &str, value: &str) {
    let el = c.find(Locator::Id(id)).await.expect("form field");
    el.clear().await.expect("clear");
    el.send_keys(value).await.expect("type");
}

async fn select(c: &Client, id: &str, value: &str) {
    let script = format!(
        "const e = document.getElementById('{id}'); e.value = '{value}'; \
         e.dispatchEvent(new Event('change')); return e.value;"
    );
    let got = c.execute(&script, vec![]).await.expect("select");
    assert_eq!(got, Value::String(value.into()));
}

async fn save_screenshot(c: &Client, name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("artifacts");
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}.png"));
    if let Ok(png) = c.screenshot().await {
        let _ = std::fs::write(&path, png);
    }
    path
}

/// Opens the UI of `dut` with the token and waits for the peer screen.
async fn open_ui(c: &Client, dut: &Peer) {
    c.goto(&format!("http://{}/#token={TOKEN}", dut.control))
        .await
        .expect("open the page");
    wait_shown(c, "screen-peer", Duration::from_secs(20)).await;
    let width = c
        .execute("return window.innerWidth;", vec![])
        .await
        .unwrap();
    assert_eq!(width, Value::from(PHONE.0), "phone-sized viewport");
    assert!(!text(c, "peer-name").await.is_empty());
    assert!(text(c, "screen-peer").await.contains("DCCP"));
}

/// The peer's own result for `test_id`, fetched with `attach` on its /ws.
async fn peer_result(dut: &Peer, test_id: &str) -> TestResult {
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", dut.control))
        .await
        .expect("connect to the peer's /ws");
    for msg in [
        ClientMsg::Hello {
            protocol_version: perfpeer_shared::PROTOCOL_VERSION,
            token: Some(TOKEN.into()),
        },
        ClientMsg::Attach {
            test_id: test_id.into(),
        },
    ] {
        ws.send(Message::text(msg.to_json())).await.expect("send");
    }
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(10), ws.next())
            .await
            .expect("the peer answers attach")
            .expect("open")
            .expect("frame");
        if let Message::Text(t) = frame
            && let Ok(ServerMsg::Result { result }) = ServerMsg::parse(t.as_str())
        {
            return result;
        }
    }
}

/// Equal JSON, numbers to within 1e-12 relative (the page parsed the result in wasm, this test
/// natively: a float may come out one unit in the last place apart).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y || (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
            _ => x == y,
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kx, vx), (ky, vy))| kx == ky && same_json(vx, vy))
        }
        _ => a == b,
    }
}

fn rate(bps: f64) -> String {
    format_rate(bps)
}

/// Starts the test described by the form values and returns the peer's result for it, after
/// checking the live screen and the figures of the result screen.
async fn run_from_form(c: &Client, dut: &Peer, pc: &Peer, udp: bool) -> (TestResult, Value) {
    c.find(Locator::Id("nav-new"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_shown(c, "screen-new", Duration::from_secs(5)).await;
    fill(c, "f-target", &pc.control).await;
    select(c, "f-protocol", if udp { "udp" } else { "tcp" }).await;
    fill(c, "f-seconds", "3").await;
    if udp {
        wait_shown(c, "row-bitrate", Duration::from_secs(2)).await;
        fill(c, "f-bitrate", "20M").await;
    }
    c.find(Locator::Id("start"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_shown(c, "screen-run", Duration::from_secs(5)).await;
    let mut live = false;
    for _ in 0..60 {
        if text(c, "live-current").await.contains("bit/s") {
            live = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        live,
        "live figures while running: {:?}",
        text(c, "live-current").await
    );
    assert!(
        text(c, "run-chart").await.contains("#1"),
        "live chart with a stream line"
    );
    wait_shown(c, "screen-result", Duration::from_secs(30)).await;
    let test_id = c
        .find(Locator::Id("summary"))
        .await
        .unwrap()
        .attr("data-test-id")
        .await
        .unwrap()
        .expect("the summary names its test");
    let result = peer_result(dut, &test_id).await;
    let json = iperf3::json(&result);
    assert_eq!(summary_value(c, "status").await, "complete");
    // The JSON download is the peer's -J JSON for this test.
    let downloaded = c
        .execute(
            "return fetch(document.getElementById('json-download').href).then(r => r.text());",
            vec![],
        )
        .await
        .expect("read the JSON download");
    let downloaded: Value =
        serde_json::from_str(downloaded.as_str().expect("text")).expect("JSON download parses");
    assert!(
        same_json(&downloaded, &json),
        "the JSON download differs from the peer's:\n{downloaded}\n{json}"
    );
    // The iperf3 tab prints what the CLI prints, both ends' addresses included.
    let shown = text(c, "text-iperf3").await;
    assert!(shown.contains(&iperf3::text_summary(&result)), "{shown}");
    assert!(!shown.contains("? port ?"), "{shown}");
    // So do the iperf2, ttcp and netperf tabs, through the shared renderers.
    assert_eq!(text(c, "text-iperf2").await, iperf2::text(&result));
    assert_eq!(text(c, "text-ttcp").await, ttcp::text(&result));
    c.find(Locator::Id("tab-netperf"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    wait_shown(c, "text-netperf", Duration::from_secs(2)).await;
    let netperf = text(c, "text-netperf").await;
    let expected = if udp {
        "MIGRATED UDP STREAM TEST"
    } else {
        "MIGRATED TCP STREAM TEST"
    };
    assert!(netperf.starts_with(expected), "{netperf}");
    c.execute(
        "document.getElementById('tab-iperf3').scrollIntoView({block: 'center'});",
        vec![],
    )
    .await
    .unwrap();
    save_screenshot(
        c,
        if udp {
            "browser-udp-netperf"
        } else {
            "browser-tcp-netperf"
        },
    )
    .await;
    c.find(Locator::Id("tab-iperf3"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    (result, json)
}

#[tokio::test]
async fn a_phone_runs_tcp_and_udp_tests_and_sees_the_peers_figures() {
    let dut = Peer::start(&[]);
    let pc = Peer::start(&[]);
    with_browser(|c| async move {
        open_ui(&c, &dut).await;
        let (_, json) = run_from_form(&c, &dut, &pc, false).await;
        let received = json.pointer("/end/sum_received").expect("sum_received");
        let sent = json.pointer("/end/sum_sent").expect("sum_sent");
        assert_eq!(
            summary_value(&c, "flow0-received").await,
            rate(received["bits_per_second"].as_f64().unwrap())
        );
        assert_eq!(
            summary_value(&c, "flow0-sent").await,
            rate(sent["bits_per_second"].as_f64().unwrap())
        );
        assert_eq!(
            summary_value(&c, "flow0-bytes").await,
            format_bytes(received["bytes"].as_f64().unwrap()).trim()
        );
        assert_eq!(
            summary_value(&c, "flow0-retr").await,
            sent["retransmits"].as_u64().unwrap().to_string()
        );
        c.execute("window.scrollTo(0, 0);", vec![]).await.unwrap();
        let shot = save_screenshot(&c, "browser-tcp-result").await;
        assert!(
            std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000),
            "{}",
            shot.display()
        );

        let (result, json) = run_from_form(&c, &dut, &pc, true).await;
        let sum = json.pointer("/end/sum").expect("UDP end.sum");
        let lost = sum["lost_packets"].as_u64().unwrap();
        let total = sum["packets"].as_u64().unwrap();
        let loss = summary_value(&c, "flow0-loss").await;
        assert!(
            loss.starts_with(&format!("{lost}/{total} (")),
            "{loss} vs {sum}"
        );
        assert_eq!(
            summary_value(&c, "flow0-jitter").await,
            format!("{:.3} ms", sum["jitter_ms"].as_f64().unwrap())
        );
        let received = result.flows()[0].received.clone().expect("receiver totals");
        assert_eq!(
            summary_value(&c, "flow0-received").await,
            rate(received.bits_per_second)
        );
        c.execute("window.scrollTo(0, 0);", vec![]).await.unwrap();
        save_screenshot(&c, "browser-udp-result").await;
    })
    .await;
}

#[tokio::test]
async fn an_unreachable_target_and_a_wrong_token_are_said_plainly() {
    let dut = Peer::start(&[]);
    with_browser(|c| async move {
        open_ui(&c, &dut).await;
        c.find(Locator::Id("nav-new"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        // Port 1 on loopback: nothing listens there, the connection is refused at once.
        fill(&c, "f-target", "127.0.0.1:1").await;
        fill(&c, "f-seconds", "3").await;
        c.find(Locator::Id("start"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_shown(&c, "notice", Duration::from_secs(20)).await;
        assert_eq!(
            text(&c, "notice-title").await,
            "Could not reach 127.0.0.1:1"
        );
        assert!(text(&c, "notice-hint").await.contains("perfpeer serve"));
        wait_shown(&c, "screen-new", Duration::from_secs(2)).await;
        save_screenshot(&c, "browser-unreachable").await;
        // A bad form value is caught before anything is sent.
        fill(&c, "f-target", "pc:99999").await;
        c.find(Locator::Id("start"))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        wait_shown(&c, "form-error", Duration::from_secs(2)).await;
        assert!(text(&c, "form-error").await.contains("port"));

        // A fresh load in a browser with no working token to fall back on (with one, the page
        // goes on with it: `first_use`).
        js(
            &c,
            "localStorage.removeItem('perfpeer-token'); return true;",
        )
        .await;
        c.goto("about:blank").await.unwrap();
        c.goto(&format!("http://{}/#token=not-the-token", dut.control))
            .await
            .unwrap();
        wait_shown(&c, "token-error", Duration::from_secs(20)).await;
        assert!(
            text(&c, "token-error")
                .await
                .contains("did not accept the token")
        );
        assert!(text(&c, "screen-connect").await.contains("Access token"));
    })
    .await;
}

/// A stored result's page (`/r/<id>`, no token) and the same result exported as a file, opened
/// from disk after the peer is gone: both show the numbers the peer stored.
#[tokio::test]
async fn a_result_page_and_its_exported_file_show_the_stored_numbers() {
    let mut peer = Peer::start(&[]);
    let out = perfpeer_tests::perfpeer_test(&[&peer.control, "-t", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let url = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Result page: "))
        .unwrap_or_else(|| panic!("no link: {stdout}"))
        .to_string();
    let id = url.rsplit('/').next().unwrap().to_string();
    // The stored result, as the peer serves it to tools.
    let json = {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(&peer.control).unwrap();
        write!(s, "GET /r/{id}.json HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut body = String::new();
        s.read_to_string(&mut body).unwrap();
        body.split_once("\r\n\r\n").unwrap().1.to_string()
    };
    let stored: TestResult = serde_json::from_str(&json).unwrap();
    let received = stored.flows()[0]
        .received
        .clone()
        .expect("the far end's receive figures");
    let expected = format!(
        "{}, {}",
        format_bytes(received.bytes as f64).trim(),
        format_rate(received.bits_per_second)
    );
    let file = peer.dir.join("result.html");
    let export = perfpeer_tests::Running::spawn(
        &perfpeer_tests::perfpeer_bin(),
        &[
            "results",
            "--data-dir",
            peer.dir.to_str().unwrap(),
            "export",
            &id,
            "--html",
            file.to_str().unwrap(),
        ],
    )
    .wait(Duration::from_secs(20));
    assert!(export.status.success(), "{export:?}");
    let copy =
        std::env::temp_dir().join(format!("perfpeer-export-{}-{id}.html", std::process::id()));
    std::fs::copy(&file, &copy).unwrap();
    with_browser(|c| async move {
        c.goto(&url).await.expect("open the result page");
        let page = c
            .execute("return document.body.innerText;", vec![])
            .await
            .unwrap();
        let page = page.as_str().unwrap_or_default().to_string();
        assert!(
            page.contains(&expected),
            "the page shows {expected}: {page}"
        );
        assert!(
            c.find(Locator::Css("svg.chart polyline")).await.is_ok(),
            "a chart"
        );
        save_screenshot(&c, "result-page").await;
        // No peer now: the file must stand alone.
        peer.kill();
        c.goto(&format!("file://{}", copy.display()))
            .await
            .expect("open the exported file");
        let offline = c
            .execute("return document.body.innerText;", vec![])
            .await
            .unwrap();
        assert!(
            offline.as_str().unwrap_or_default().contains(&expected),
            "the file shows {expected}"
        );
        assert!(
            c.find(Locator::Css("svg.chart polyline")).await.is_ok(),
            "a chart, offline"
        );
        save_screenshot(&c, "result-file").await;
        let _ = std::fs::remove_file(&copy);
    })
    .await;
}
