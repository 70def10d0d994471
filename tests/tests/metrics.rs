//! `/metrics` on real peers: the token (401 and its header, `--metrics-open`), the counts after
//! known tests, `promtool check metrics` on a real scrape, a real Prometheus scraping two
//! peers every second, the far-peer series cap against more far ends than it holds, and every
//! metric the Grafana dashboard (docs/grafana-dashboard.json) queries.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use perfpeer_tests::{Peer, TOKEN, free_port, have, perfpeer_test, temp_dir, wait_for};

/// A scrape's status, `Content-Type` and body (HTTP/1.0, the peer's `Host`).
fn scrape(peer: &Peer, token: Option<&str>) -> (u16, String, String) {
    let mut s = TcpStream::connect(&peer.control).expect("connect to the control port");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    write!(
        s,
        "GET /metrics HTTP/1.0\r\nHost: {}\r\n{auth}\r\n",
        peer.control
    )
    .unwrap();
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    let content_type = if status == 401 {
        header("www-authenticate")
    } else {
        header("content-type")
    };
    (status, content_type, body.to_string())
}

/// The value of the sample written exactly as `series` (name and labels) in `page`.
fn sample(page: &str, series: &str) -> Option<f64> {
    page.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// A 1 s TCP test (or UDP at 10 Mbit/s) from this machine to `peer`; asserts it ran.
fn run_test(peer: &Peer, udp: bool) {
    let mut args = vec![peer.control.as_str(), "-t", "1"];
    if udp {
        args.extend(["-u", "-b", "10M"]);
    }
    let out = perfpeer_test(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn metrics_need_the_token_unless_metrics_open() {
    let peer = Peer::start(&[]);
    let (status, www_authenticate, _) = scrape(&peer, None);
    assert_eq!((status, www_authenticate.as_str()), (401, "Bearer"));
    let (status, _, _) = scrape(&peer, Some("a-wrong-token-of-some-length"));
    assert_eq!(status, 401);
    let (status, content_type, page) = scrape(&peer, Some(TOKEN));
    assert_eq!(status, 200);
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    // Both refusals were counted.
    assert_eq!(
        sample(&page, "perfpeer_refusals_total{reason=\"token\"}"),
        Some(2.0),
        "{page}"
    );
    let open = Peer::start(&["--metrics-open"]);
    let (status, _, page) = scrape(&open, None);
    assert_eq!(status, 200);
    assert!(page.contains("# TYPE perfpeer_tests_started_total counter\n"));
    // The rest of the API still needs the token.
    let (status, _) = perfpeer_tests::http_request(&open.control, "GET", "/api/results", "", "");
    assert_eq!(status, 401);
}

#[test]
fn the_counters_say_how_many_tests_ran() {
    let peer = Peer::start(&[]);
    run_test(&peer, false);
    run_test(&peer, false);
    run_test(&peer, true);
    let (_, _, page) = scrape(&peer, Some(TOKEN));
    let at = |series: &str| sample(&page, series).unwrap_or_else(|| panic!("{series}:\n{page}"));
    assert_eq!(at("perfpeer_tests_started_total{kind=\"served\"}"), 3.0);
    assert_eq!(
        at("perfpeer_tests_finished_total{kind=\"served\",outcome=\"complete\"}"),
        3.0
    );
    assert_eq!(
        at("perfpeer_tests_finished_total{kind=\"served\",outcome=\"failed\"}"),
        0.0
    );
    assert_eq!(at("perfpeer_tests_running"), 0.0);
    assert_eq!(
        at("perfpeer_data_connections_total{transport=\"tcp\"}"),
        2.0
    );
    assert_eq!(
        at("perfpeer_data_connections_total{transport=\"udp\"}"),
        1.0
    );
    assert!(at("perfpeer_data_bytes_total{protocol=\"tcp\"}") > 0.0);
    assert!(at("perfpeer_datagrams_total{protocol=\"udp\"}") > 0.0);
    // The last tests, one series per far peer, protocol and direction.
    let tcp = "{far_peer=\"127.0.0.1\",protocol=\"tcp\",direction=\"up\"}";
    let udp = "{far_peer=\"127.0.0.1\",protocol=\"udp\",direction=\"up\"}";
    assert!(
        at(&format!(
            "perfpeer_last_test_throughput_bytes_per_second{tcp}"
        )) > 0.0
    );
    assert!(at(&format!("perfpeer_last_test_loss_ratio{udp}")) >= 0.0);
    assert!(at(&format!("perfpeer_last_test_jitter_seconds{udp}")) >= 0.0);
    assert!(at("process_resident_memory_bytes") > 0.0);
    assert!(at("process_open_fds") > 0.0);
}

#[test]
fn promtool_finds_nothing_to_fix_in_a_scrape() {
    if !have("promtool") {
        return;
    }
    let peer = Peer::start(&[]);
    run_test(&peer, true);
    let (status, _, page) = scrape(&peer, Some(TOKEN));
    assert_eq!(status, 200);
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start promtool");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = promtool.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool: {said}\n{page}"
    );
}

/// Forty far ends (127.0.0.2 … 127.0.0.41, each a test of its own) against a series cap of
/// 32: the oldest go. (A thousand are the unit tests' `a_thousand_far_ends_keep_to_the_cap`:
/// the map is the same, and forty real tests show the peer puts every finished test through
/// it.)
#[test]
fn more_far_ends_than_the_cap_do_not_grow_the_series() {
    let peer = Peer::start(&["--max-tests", "16"]);
    let sources: Vec<String> = (2..42).map(|n| format!("127.0.0.{n}")).collect();
    for batch in sources.chunks(8) {
        let runs: Vec<_> = batch
            .iter()
            .map(|source| {
                let (control, source) = (peer.control.clone(), source.clone());
                std::thread::spawn(move || perfpeer_test(&[&control, "-B", &source, "-n", "256K"]))
            })
            .collect();
        for run in runs {
            let out = run.join().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
    let (_, _, page) = scrape(&peer, Some(TOKEN));
    assert_eq!(
        sample(
            &page,
            "perfpeer_tests_finished_total{kind=\"served\",outcome=\"complete\"}"
        ),
        Some(40.0)
    );
    let far_peers: std::collections::BTreeSet<&str> = page
        .lines()
        .filter(|l| l.starts_with("perfpeer_last_test_finished_seconds{"))
        .filter_map(|l| l.split("far_peer=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(far_peers.len(), 32, "{far_peers:?}");
    // The first eight went (the tests ran in batches of eight).
    for gone in &sources[..8] {
        assert!(!far_peers.contains(gone.as_str()), "{gone} still there");
    }
}

/// Percent-encodes a PromQL query for a URL.
fn url_encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The one number Prometheus at `port` answers `query` with, if it has one.
fn query(port: u16, query: &str) -> Option<f64> {
    // Not http_request: Prometheus may not listen yet.
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let path = format!("/api/v1/query?query={}", url_encoded(query));
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.0 200") && !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    let answer: serde_json::Value = serde_json::from_str(body).ok()?;
    let results = answer.pointer("/data/result")?.as_array()?;
    let [one] = results.as_slice() else {
        return None;
    };
    one.pointer("/value/1")?.as_str()?.parse().ok()
}

/// Prometheus started by a test, killed and its directory removed when dropped.
struct Prometheus {
    child: std::process::Child,
    dir: std::path::PathBuf,
    port: u16,
}

impl Prometheus {
    /// Scrapes `targets` every second with the peers' token.
    fn start(targets: &[&str]) -> Prometheus {
        let dir = temp_dir("prometheus");
        let port = free_port();
        let listed: Vec<String> = targets.iter().map(|t| format!("'{t}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             scrape_configs:\n  - job_name: perfpeer\n    authorization:\n      credentials: {TOKEN}\n\
             \x20   static_configs:\n      - targets: [{}]\n",
            listed.join(", ")
        );
        std::fs::write(dir.join("prometheus.yml"), config).unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        Prometheus { child, dir, port }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_real_prometheus_counts_the_tests_two_peers_ran() {
    if !have("prometheus") {
        return;
    }
    let a = Peer::start(&[]);
    let b = Peer::start(&[]);
    let prometheus = Prometheus::start(&[&a.control, &b.control]);
    let port = prometheus.port;
    assert!(
        wait_for(Duration::from_secs(30), || query(
            port,
            "count(up{job=\"perfpeer\"} == 1)"
        ) == Some(2.0)),
        "both peers up: {}",
        prometheus.log()
    );
    run_test(&a, false);
    run_test(&a, true);
    run_test(&b, false);
    let complete = "perfpeer_tests_finished_total{kind=\"served\",outcome=\"complete\"}";
    let expected = [
        (format!("sum({complete})"), 3.0),
        (
            format!(
                "sum(perfpeer_tests_finished_total{{instance=\"{}\",kind=\"served\",outcome=\"complete\"}})",
                a.control
            ),
            2.0,
        ),
        (
            format!(
                "sum(perfpeer_tests_started_total{{instance=\"{}\"}})",
                b.control
            ),
            1.0,
        ),
        (
            "count(perfpeer_last_test_throughput_bytes_per_second > 0)".to_string(),
            3.0,
        ),
    ];
    for (promql, value) in &expected {
        assert!(
            wait_for(Duration::from_secs(30), || query(port, promql)
                == Some(*value)),
            "{promql} should be {value}, is {:?}\n{}",
            query(port, promql),
            prometheus.log()
        );
    }
}

/// Prometheus's own series a dashboard may query: not in a peer's scrape.
const PROMETHEUS_OWN: &[&str] = &["up"];
/// PromQL's words that stand where a metric name could.
/// (An aggregation may have its `by (…)` between its name and its `(`.)
const PROMQL_WORDS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "offset",
    "bool",
    "and",
    "or",
    "unless",
    "group_left",
    "group_right",
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
];

/// The metric names a PromQL expression reads: its identifiers that are not functions (a `(`
/// after them), label names (inside `{}` or after by/without), strings, ranges or PromQL words.
fn metric_names(expr: &str) -> Vec<String> {
    let mut names = Vec::new();
    let chars: Vec<char> = expr.chars().collect();
    let (mut i, mut depth_braces, mut in_string) = (0, 0, false);
    let mut grouping = false;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            if c == '\\' {
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth_braces += 1,
            '}' => depth_braces -= 1,
            '[' => {
                while i < chars.len() && chars[i] != ']' {
                    i += 1;
                }
            }
            ')' => grouping = false,
            // A number, 1e9 too.
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
                continue;
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == '$' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let next = chars[i..].iter().find(|c| !c.is_whitespace());
                if word == "by" || word == "without" {
                    grouping = true;
                } else if depth_braces == 0
                    && !grouping
                    && next != Some(&'(')
                    && !c.eq(&'$')
                    && !PROMQL_WORDS.contains(&word.as_str())
                {
                    names.push(word);
                }
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    names
}

fn expressions(value: &serde_json::Value, into: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("expr", serde_json::Value::String(expr)) => into.push(expr.clone()),
                    _ => expressions(v, into),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| expressions(v, into)),
        _ => {}
    }
}

#[test]
fn the_metric_names_of_an_expression_are_found() {
    assert_eq!(
        metric_names(
            "sum by (outcome) (rate(perfpeer_tests_finished_total{job=~\"$job\", x=\"a b\"}[$__rate_interval])) * 1e9 + up"
        ),
        ["perfpeer_tests_finished_total", "up"]
    );
}

#[test]
fn every_metric_the_dashboard_queries_is_in_a_scrape() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/grafana-dashboard.json");
    let dashboard: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("the dashboard")).unwrap();
    let mut exprs = Vec::new();
    expressions(&dashboard, &mut exprs);
    assert!(exprs.len() >= 9, "{exprs:?}");
    let peer = Peer::start(&[]);
    let (_, _, page) = scrape(&peer, Some(TOKEN));
    for expr in &exprs {
        let names = metric_names(expr);
        assert!(!names.is_empty(), "no metric in {expr}");
        for name in names {
            assert!(
                PROMETHEUS_OWN.contains(&name.as_str())
                    || page.contains(&format!("# TYPE {name} ")),
                "{name} (in {expr}) is not in a scrape:\n{page}"
            );
        }
    }
}
