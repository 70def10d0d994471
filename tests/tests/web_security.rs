//! The control port as another site's page, a DNS-rebinding attacker, a token guesser and a
//! connection flooder would try it: cross-origin `/ws` and API calls, a foreign `Host`, security
//! headers on every kind of response, guessing rate-limited per source, tokens kept out of `ps`,
//! and connections that trickle or say nothing cut off while a second address is served.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use perfpeer_tests::{Peer, TOKEN, connect_from, perfpeer_bin, perfpeer_test, raise_fd_limit};

/// A response: status, headers (lower-case names), body.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends `request` (HTTP/1.0 text, so the server closes after answering) from the address
/// `from` to the peer's control port.
fn raw(peer: &Peer, from: [u8; 4], request: &str) -> Response {
    let to: SocketAddr = peer.control.parse().unwrap();
    let mut s = connect_from(from, to).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    // Bytes, not a String: after a 101 the WebSocket's frames need not be UTF-8.
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let out = String::from_utf8_lossy(&bytes).into_owned();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Response {
        status,
        headers,
        body: body.to_string(),
    }
}

fn get(peer: &Peer, path: &str, extra: &str) -> Response {
    raw(
        peer,
        [127, 0, 0, 1],
        &format!(
            "GET {path} HTTP/1.0\r\nHost: {}\r\n{extra}\r\n",
            peer.control
        ),
    )
}

fn upgrade(peer: &Peer, origin: Option<&str>) -> u16 {
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    raw(
        peer,
        [127, 0, 0, 1],
        &format!(
            "GET /ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             {origin}Connection: close\r\n\r\n",
            peer.control
        ),
    )
    .status
}

#[test]
fn websockets_from_another_sites_page_are_refused() {
    let peer = Peer::start(&["--allow-origin", "http://dashboard.example:8080"]);
    let own = format!("http://{}", peer.control);
    assert_eq!(upgrade(&peer, Some("http://evil.example")), 403);
    assert_eq!(upgrade(&peer, Some("null")), 403);
    assert_eq!(upgrade(&peer, Some(&own)), 101, "the page's own origin");
    assert_eq!(upgrade(&peer, None), 101, "a non-browser client");
    assert_eq!(
        upgrade(&peer, Some("http://dashboard.example:8080")),
        101,
        "an allowed origin"
    );
    // The API too, even with the token: another site's page cannot delete results.
    let res = raw(
        &peer,
        [127, 0, 0, 1],
        &format!(
            "DELETE /api/results/0123456789abcdef0123456789abcdef HTTP/1.0\r\nHost: {}\r\n\
             Origin: http://evil.example\r\nAuthorization: Bearer {TOKEN}\r\n\r\n",
            peer.control
        ),
    );
    assert_eq!(res.status, 403, "{}", res.body);
}

#[test]
fn a_rebinding_host_is_refused_even_with_the_token() {
    let peer = Peer::start(&["--host-name", "dut.lan"]);
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    for (method, path) in [
        ("GET", "/api/results"),
        ("DELETE", "/api/results/0123456789abcdef0123456789abcdef"),
        ("GET", "/api/info"),
        ("GET", "/"),
    ] {
        let res = raw(
            &peer,
            [127, 0, 0, 1],
            &format!("{method} {path} HTTP/1.0\r\nHost: evil.example\r\n{auth}\r\n"),
        );
        assert_eq!(res.status, 421, "{method} {path}: {}", res.body);
        assert!(res.body.contains("--host-name"), "{}", res.body);
    }
    let port = peer.control.rsplit(':').next().unwrap();
    for host in [
        peer.control.clone(),
        format!("localhost:{port}"),
        format!("dut.lan:{port}"),
    ] {
        let res = raw(
            &peer,
            [127, 0, 0, 1],
            &format!("GET /api/results HTTP/1.0\r\nHost: {host}\r\n{auth}\r\n"),
        );
        assert_eq!(res.status, 200, "{host}: {}", res.body);
    }
}

#[test]
fn every_response_carries_the_security_headers() {
    let peer = Peer::start(&[]);
    let out = perfpeer_test(&[&peer.control, "-t", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let id = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Result page: "))
        .and_then(|url| url.rsplit('/').next())
        .unwrap_or_else(|| panic!("no result link in {stdout}"))
        .to_string();
    for path in [
        "/".to_string(),
        "/api/info".into(),
        format!("/r/{id}"),
        format!("/r/{id}.json"),
        "/nope".into(),
    ] {
        let res = get(&peer, &path, "");
        let csp = res
            .header("content-security-policy")
            .unwrap_or_else(|| panic!("{path}: no CSP"));
        assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
        assert_eq!(res.header("x-frame-options"), Some("DENY"), "{path}");
        assert_eq!(
            res.header("x-content-type-options"),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(res.header("referrer-policy"), Some("no-referrer"), "{path}");
        if path.starts_with("/r/") {
            assert!(
                csp.contains("default-src 'none'") && !csp.contains("script-src"),
                "a result page runs no script: {csp}"
            );
        }
    }
    // The page's policy lets its own wasm run; no inline script is left for it to allow.
    let page = get(&peer, "/", "");
    let csp = page.header("content-security-policy").unwrap();
    assert!(
        csp.contains("script-src 'self' 'wasm-unsafe-eval'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe-inline'; script") && !csp.contains("script-src 'unsafe-inline'"));
}

#[test]
fn error_bodies_are_fixed_words_not_debug_text_or_the_input() {
    let peer = Peer::start(&[]);
    let junk = "A".repeat(20_000);
    for req in [
        {
            let body = format!("{{\"enabled\": \"{}\"}}", &junk[..500]);
            format!(
                "POST /api/results/x/link HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                peer.control,
                body.len()
            )
        },
        format!(
            "GET /ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Version: {junk}\r\n\r\n",
            peer.control
        ),
        {
            // A tag that is refused: the error names its place, not the tag.
            let body = format!(
                "{{\"text\": \"\", \"tags\": [\"ok\", \"{}<b>\"]}}",
                &junk[..20]
            );
            format!(
                "PUT /api/results/x/notes HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
                 Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                peer.control,
                body.len()
            )
        },
    ] {
        let res = raw(&peer, [127, 0, 0, 1], &req);
        assert!(res.status >= 400, "{}", res.body);
        assert!(
            res.body.len() < 200,
            "{} bytes: {}",
            res.body.len(),
            res.body
        );
        assert!(
            !res.body.contains("AAAAAAAAAA") && !res.body.contains("Rejection"),
            "{}",
            res.body
        );
    }
}

/// A `/ws` message that is not a control message is answered in fixed words of bounded length,
/// never with its own text (serde's words quote the offending value).
#[tokio::test]
async fn websocket_errors_do_not_echo_the_message() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let peer = Peer::start(&[]);
    let junk = "B".repeat(200_000);
    for text in [
        format!(r#"{{"type":"{junk}"}}"#),
        format!(r#"{{"type":"hello","protocol_version":"{junk}"}}"#),
        format!(r#"{{"type":"hello","token":"{junk}<script>","protocol_version":1"#),
    ] {
        let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/ws", peer.control))
            .await
            .expect("WebSocket");
        ws.send(Message::text(text)).await.expect("send");
        let reply = loop {
            match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
                Ok(Some(Ok(Message::Text(t)))) => break t.to_string(),
                Ok(Some(Ok(_))) => continue,
                other => panic!("no reply: {other:?}"),
            }
        };
        assert!(
            reply.len() < 300,
            "{} bytes: {}",
            reply.len(),
            &reply[..300.min(reply.len())]
        );
        assert!(
            !reply.contains("BBBB") && !reply.contains("script"),
            "{reply}"
        );
        assert!(reply.contains("bad_message"), "{reply}");
    }
}

/// The status of `GET /api/results` from `from` with `token`.
fn results_status(peer: &Peer, from: [u8; 4], token: &str) -> u16 {
    raw(
        peer,
        from,
        &format!(
            "GET /api/results HTTP/1.0\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\r\n",
            peer.control
        ),
    )
    .status
}

/// The wrong-token limiter counts every source one by one up to 4,096 sources; beyond that it
/// fails closed: every further source shares one count, so filling the table from many
/// addresses buys no more guesses — and a source that gave the right token before is not held
/// back by it.
#[test]
fn a_token_table_full_of_sources_fails_closed() {
    raise_fd_limit();
    let peer = Peer::start(&[]);
    let ask = |from: [u8; 4], token: &str| results_status(&peer, from, token);
    assert_eq!(
        ask([127, 0, 0, 1], TOKEN),
        200,
        "the owner, before the attack"
    );
    // 4,096 sources with one wrong token each: 127.1.0.0 to 127.1.15.255.
    for i in 0..4096u32 {
        let [_, _, hi, lo] = i.to_be_bytes();
        assert_eq!(ask([127, 1, hi, lo], "wrong-token-0000"), 401);
    }
    // A newcomer's guesses: 10 checked, then held back, 300 tries in all.
    let statuses: Vec<u16> = (0..300)
        .map(|i| ask([127, 2, 0, 1], &format!("guess-{i:012}")))
        .collect();
    let checked = statuses.iter().filter(|&&s| s == 401).count();
    assert_eq!(checked, 10, "guesses checked: {statuses:?}");
    assert!(statuses[10..].iter().all(|&s| s == 429), "{statuses:?}");
    // Other newcomers share that count, even with the right token (fail closed) ...
    assert_eq!(ask([127, 2, 0, 2], TOKEN), 429);
    // ... but the owner, who gave the right token before, is not held back.
    assert_eq!(ask([127, 0, 0, 1], TOKEN), 200);
}

#[test]
fn token_guessing_is_rate_limited_per_source() {
    let peer = Peer::start(&[]);
    let ask = |from: [u8; 4], token: &str| results_status(&peer, from, token);
    let started = Instant::now();
    let mut statuses = Vec::new();
    for i in 0..30 {
        statuses.push(ask([127, 0, 0, 2], &format!("guess-{i:012}")));
    }
    assert!(statuses[..10].iter().all(|&s| s == 401), "{statuses:?}");
    assert!(statuses[10..].iter().all(|&s| s == 429), "{statuses:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    // The guesser is held back even with the right token; the owner elsewhere is not.
    assert_eq!(ask([127, 0, 0, 2], TOKEN), 429);
    assert_eq!(ask([127, 0, 0, 1], TOKEN), 200);
}

#[test]
fn tokens_come_from_a_file_or_the_environment_and_must_be_strong() {
    let dir = std::env::temp_dir().join(format!("perfpeer-token-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("token");
    std::fs::write(&file, "from-a-file-0123456789\n").unwrap();
    let path = file.to_str().unwrap();
    let peer = Peer::start(&["--token-file", path]);
    let res = get(
        &peer,
        "/api/results",
        "Authorization: Bearer from-a-file-0123456789\r\n",
    );
    assert_eq!(res.status, 200, "{}", res.body);
    drop(peer);
    for weak in ["short", "aaaaaaaaaaaaaaaaaaaaaaaa", "abababababababababab"] {
        let out = Command::new(perfpeer_bin())
            .args(["serve", "--listen", "127.0.0.1:0", "--data-port", "0"])
            .arg("--data-dir")
            .arg(&dir)
            .env("PERFPEER_TOKEN", weak)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{weak} was taken");
        let text = String::from_utf8_lossy(&out.stderr);
        assert!(text.contains("at least 8 of them different"), "{text}");
        assert!(!text.contains(weak), "the token was echoed: {text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// 600 connections from 127.0.0.2 that trickle a header byte every 3 s, and 200 that send
/// nothing: each is cut off by the header-read timeout, and meanwhile 127.0.0.1 loads the page
/// and runs a test.
#[test]
fn trickling_and_silent_connections_are_cut_off_and_do_not_deny_others() {
    raise_fd_limit();
    let peer = Peer::start(&[]);
    let to: SocketAddr = peer.control.parse().unwrap();
    let mut trickling: Vec<TcpStream> = (0..600)
        .filter_map(|_| connect_from([127, 0, 0, 2], to))
        .collect();
    let silent: Vec<TcpStream> = (0..200)
        .filter_map(|_| connect_from([127, 0, 0, 2], to))
        .collect();
    assert!(trickling.len() + silent.len() > 700);
    let started = Instant::now();
    for s in &mut trickling {
        let _ = s.write_all(b"GET / HTTP/1.1\r\n");
    }
    let page = get(&peer, "/", "");
    assert_eq!(page.status, 200, "the second address got no page");
    let out = perfpeer_test(&[&peer.control, "-t", "1"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Keep trickling; every connection must be closed within the timeout and a margin.
    let mut open = trickling.len();
    while open > 0 && started.elapsed() < Duration::from_secs(25) {
        std::thread::sleep(Duration::from_secs(3));
        open = trickling
            .iter_mut()
            .filter(|s| (&**s).write_all(b"X").is_ok())
            .count();
    }
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{open} trickling connections still open after {:?}",
        started.elapsed()
    );
    for mut s in silent {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 64];
        assert!(
            matches!(s.read(&mut buf), Ok(0) | Err(_)),
            "a silent connection is still open"
        );
    }
}

/// WebSockets are capped per source: the 33rd from one address is refused while a second
/// address still gets one; closing one frees its place.
#[tokio::test]
async fn websockets_are_capped_per_source() {
    let peer = Peer::start(&[]);
    let to: SocketAddr = peer.control.parse().unwrap();
    let upgrade = format!(
        "GET /ws HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n",
        peer.control
    );
    let open_one = |from: [u8; 4]| -> (TcpStream, String) {
        let mut s = connect_from(from, to).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(upgrade.as_bytes()).unwrap();
        let mut buf = [0u8; 256];
        let n = s.read(&mut buf).unwrap_or(0);
        let head = String::from_utf8_lossy(&buf[..n]).into_owned();
        (s, head)
    };
    let mut held = Vec::new();
    for i in 0..32 {
        let (s, head) = open_one([127, 0, 0, 2]);
        assert!(head.starts_with("HTTP/1.1 101"), "socket {i}: {head}");
        held.push(s);
    }
    let (_, head) = open_one([127, 0, 0, 2]);
    assert!(head.starts_with("HTTP/1.1 429"), "the 33rd: {head}");
    let (_, head) = open_one([127, 0, 0, 1]);
    assert!(head.starts_with("HTTP/1.1 101"), "another address: {head}");
    held.truncate(31);
    assert!(
        perfpeer_tests::wait_for(Duration::from_secs(5), || {
            open_one([127, 0, 0, 2]).1.starts_with("HTTP/1.1 101")
        }),
        "a closed socket's place did not come back"
    );
}
