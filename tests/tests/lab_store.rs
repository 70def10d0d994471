//! A lab's shared store: `perfpeer serve --store postgres://…` against a PostgreSQL 15 cluster
//! of the test's own (tests/src/postgres.rs). Two peers write to it at once and each lists
//! both peers' results; the database stopped during a test and started again gets the result
//! exactly once; 10 000 results are listed page by page, each page within a stated time, by
//! the API and by `perfpeer results list`; a machine's history is pushed to the lab, shown,
//! noted and deleted there from the command line.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use perfpeer_tests::postgres::{self, Cluster};
use perfpeer_tests::{Peer, TOKEN, perfpeer_test, result_id_from, wait_for};

/// `GET path` on `peer` with the token; the body as JSON.
fn get_json(peer: &Peer, path: &str) -> serde_json::Value {
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, body) = perfpeer_tests::http_request(&peer.control, "GET", path, &auth, "");
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

/// A peer writing to `cluster` as `name`.
fn lab_peer(cluster: &Cluster, name: &str) -> Peer {
    Peer::start(&["--store", &cluster.url(), "--peer-name", name])
}

/// Waits until `peer` has reached (and migrated) its lab database; says `what` if it does not.
fn wait_reachable(peer: &Peer, what: &str) {
    assert!(
        wait_for(Duration::from_secs(10), || {
            get_json(peer, "/api/info")["lab_store"]["reachable"] == true
        }),
        "{what}: {}",
        get_json(peer, "/api/info")
    );
}

/// `perfpeer results --data-dir DATA --store URL EXTRA…`.
fn lab_results(data: &std::path::Path, url: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "results",
        "--data-dir",
        data.to_str().unwrap(),
        "--store",
        url,
    ];
    args.extend_from_slice(extra);
    perfpeer_tests::perfpeer_with(Vec::new(), &args)
}

/// Ids of a list, with the peer that kept each.
fn kept(list: &serde_json::Value) -> Vec<(String, String)> {
    list.as_array()
        .expect("a list")
        .iter()
        .map(|line| {
            (
                line["id"].as_str().unwrap_or_default().to_string(),
                line["kept_by"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn two_peers_write_at_once_and_each_lists_the_whole_lab() {
    if !postgres::available() {
        return;
    }
    let cluster = Cluster::start();
    let (a, b) = (lab_peer(&cluster, "peer-a"), lab_peer(&cluster, "peer-b"));
    // Two tests against each peer, all four at once: both peers write to the database at once.
    let runs: Vec<_> = [&a, &b, &a, &b]
        .iter()
        .map(|peer| {
            let control = peer.control.clone();
            std::thread::spawn(move || perfpeer_test(&[&control, "-t", "2"]))
        })
        .collect();
    let mut ids = HashSet::new();
    for run in runs {
        let out = run.join().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        ids.insert(result_id_from(&stdout));
    }
    assert_eq!(ids.len(), 4);
    for peer in [&a, &b] {
        assert!(
            wait_for(Duration::from_secs(20), || {
                let listed: HashSet<String> = kept(&get_json(peer, "/api/results"))
                    .into_iter()
                    .map(|(id, _)| id)
                    .collect();
                ids.is_subset(&listed)
            }),
            "{} lists the lab's four results",
            peer.control
        );
        let listed = kept(&get_json(peer, "/api/results"));
        for name in ["peer-a", "peer-b"] {
            assert_eq!(
                listed.iter().filter(|(_, by)| by == name).count(),
                2,
                "{name}"
            );
        }
        // Filtered by the peer that kept them.
        let only_b = kept(&get_json(peer, "/api/results?peer=peer-b"));
        assert_eq!(only_b.len(), 2);
        assert!(only_b.iter().all(|(_, by)| by == "peer-b"));
    }
    // A result the other peer kept opens here, with the token and by its link.
    let theirs = kept(&get_json(&a, "/api/results?peer=peer-b"))[0].0.clone();
    let opened = get_json(&a, &format!("/api/results/{theirs}"));
    assert_eq!(opened["summary"]["kept_by"], "peer-b");
    let (status, page) =
        perfpeer_tests::http_request(&a.control, "GET", &format!("/r/{theirs}"), "", "");
    assert_eq!(status, 200, "{page}");
    // Each result once in the database.
    assert_eq!(
        cluster.psql("SELECT count(*), count(DISTINCT id) FROM perfpeer_kept"),
        "4|4"
    );
}

#[test]
fn a_database_lost_during_a_test_gets_its_result_once_when_back() {
    if !postgres::available() {
        return;
    }
    let cluster = Cluster::start();
    let peer = lab_peer(&cluster, "peer-a");
    wait_reachable(&peer, "the peer reaches the database");
    let control = peer.control.clone();
    let run = std::thread::spawn(move || perfpeer_test(&[&control, "-t", "4"]));
    std::thread::sleep(Duration::from_secs(1));
    cluster.pause();
    let out = run.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the test does not fail: {stdout}");
    let id = result_id_from(&stdout);
    // Kept here, waiting, and said so.
    assert!(
        wait_for(Duration::from_secs(20), || {
            let info = get_json(&peer, "/api/info");
            info["lab_store"]["waiting"].as_u64() >= Some(1)
                && info["lab_store"]["reachable"] == false
        }),
        "/api/info says a result waits: {}",
        get_json(&peer, "/api/info")
    );
    // And in /metrics.
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let (status, page) = perfpeer_tests::http_request(&peer.control, "GET", "/metrics", &auth, "");
    assert_eq!(status, 200, "{page}");
    let queued = page
        .lines()
        .find_map(|l| l.strip_prefix("perfpeer_store_queued_results "))
        .and_then(|v| v.trim().parse::<f64>().ok());
    assert!(queued >= Some(1.0), "{page}");
    // The list falls back to this peer's own results meanwhile.
    let listed = kept(&get_json(&peer, "/api/results"));
    assert!(listed.iter().any(|(i, _)| *i == id));
    cluster.resume();
    assert!(
        wait_for(Duration::from_secs(30), || {
            get_json(&peer, "/api/info")["lab_store"]["waiting"].as_u64() == Some(0)
        }),
        "the result is written once the database is back: {}",
        get_json(&peer, "/api/info")
    );
    assert_eq!(
        cluster.psql(&format!(
            "SELECT count(*) FROM perfpeer_kept WHERE id = '{id}'"
        )),
        "1"
    );
    assert_eq!(cluster.psql("SELECT count(*) FROM perfpeer_kept"), "1");
    assert_eq!(get_json(&peer, "/api/info")["lab_store"]["reachable"], true);
}

/// Most time a page of 500 of 10 000 results may take, request to last byte, over loopback.
const PAGE_TIME: Duration = Duration::from_millis(500);

#[test]
fn ten_thousand_results_are_listed_page_by_page() {
    if !postgres::available() {
        return;
    }
    let cluster = Cluster::start();
    let peer = lab_peer(&cluster, "peer-a");
    wait_reachable(&peer, "the peer reaches (and migrates) the database");
    // 10 000 results of two peers, 20 of them in each millisecond (ties are ordered by id),
    // every tenth tagged `ch36`.
    cluster.psql(
        "INSERT INTO perfpeer_kept (id, kind, kept_by, created_ms, peer, origin, status, tags,
             link_enabled, summary_json, body_json, written_ms)
         SELECT md5(n::text), 'test', CASE WHEN n % 2 = 0 THEN 'bulk-a' ELSE 'bulk-b' END,
             1700000000000 + n / 20, 'far', 'cli', 'complete',
             CASE WHEN n % 10 = 0 THEN ARRAY['ch36'] ELSE ARRAY[]::text[] END, true,
             json_build_object('id', md5(n::text), 'kind', 'test',
                 'created_ms', 1700000000000 + n / 20, 'origin', 'cli', 'role', 'client',
                 'peer', 'far', 'protocol', 'tcp', 'direction', 'normal', 'status', 'complete',
                 'link_enabled', true,
                 'kept_by', CASE WHEN n % 2 = 0 THEN 'bulk-a' ELSE 'bulk-b' END)::text,
             '{}', 0
         FROM generate_series(1, 10000) AS n",
    );
    let mut seen = HashSet::new();
    let mut cursor: Option<String> = None;
    let (mut pages, mut slowest) = (0, Duration::ZERO);
    let started = Instant::now();
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/results?limit=500&before={c}"),
            None => "/api/results?limit=500".to_string(),
        };
        let asked = Instant::now();
        let page = get_json(&peer, &path);
        let took = asked.elapsed();
        slowest = slowest.max(took);
        assert!(took < PAGE_TIME, "page {pages} took {took:?}");
        let lines = page.as_array().unwrap();
        if lines.is_empty() {
            break;
        }
        pages += 1;
        let mut last_key = None;
        for line in lines {
            let key = (
                line["created_ms"].as_u64().unwrap(),
                line["id"].as_str().unwrap().to_string(),
            );
            if let Some(prev) = &last_key {
                assert!(&key < prev, "newest first, ties by id");
            }
            assert!(seen.insert(key.1.clone()), "{} listed twice", key.1);
            last_key = Some(key);
        }
        let (ms, id) = last_key.unwrap();
        cursor = Some(format!("{ms}_{id}"));
    }
    eprintln!(
        "10 000 results in {pages} pages of 500: {:?} in all, slowest page {slowest:?}",
        started.elapsed()
    );
    assert_eq!(seen.len(), 10_000);
    assert_eq!(pages, 20);
    // Filters: a peer's, a tag's, a time span's.
    let tagged = kept(&get_json(&peer, "/api/results?tag=ch36&limit=500"));
    assert_eq!(tagged.len(), 500);
    let bulk_b = kept(&get_json(&peer, "/api/results?peer=bulk-b&limit=10"));
    assert!(bulk_b.len() == 10 && bulk_b.iter().all(|(_, by)| by == "bulk-b"));
    let span = get_json(
        &peer,
        "/api/results?since=1700000000100&until=1700000000200",
    );
    assert_eq!(
        span.as_array().unwrap().len(),
        500,
        "100 ms of 20 results each, capped"
    );
    let span = get_json(
        &peer,
        "/api/results?since=1700000000100&until=1700000000110",
    );
    assert_eq!(span.as_array().unwrap().len(), 200);
    // The same list from the command line, a page at a time.
    let url = cluster.url();
    let data = perfpeer_tests::temp_dir("lab-list");
    let list = |extra: &[&str]| -> std::process::Output {
        lab_results(&data, &url, &[&["list"], extra].concat())
    };
    let page_of = |out: &std::process::Output| -> serde_json::Value {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("-J")
    };
    let (mut cli_seen, mut cli_pages) = (HashSet::new(), 0);
    let mut before: Option<String> = None;
    let started = Instant::now();
    loop {
        let mut args = vec!["--limit", "500", "-J"];
        if let Some(b) = &before {
            args.extend(["--before", b.as_str()]);
        }
        let page = page_of(&list(&args));
        assert_eq!(page["from"], "lab");
        for line in page["results"].as_array().unwrap() {
            assert!(cli_seen.insert(line["id"].as_str().unwrap().to_string()));
        }
        cli_pages += 1;
        match page["next"].as_str() {
            Some(next) => before = Some(next.to_string()),
            None => break,
        }
    }
    eprintln!(
        "perfpeer results list: 10 000 results in {cli_pages} pages: {:?} in all",
        started.elapsed()
    );
    assert_eq!(cli_seen.len(), 10_000);
    assert!(cli_pages == 20 || cli_pages == 21, "{cli_pages} pages");
    // Filters: a keeper's name in part, a tag, a time; every tenth is bulk-a's (n even).
    let page = page_of(&list(&["--peer", "BULK-A", "--tag", "ch36", "-J"]));
    assert_eq!(page["results"].as_array().unwrap().len(), 50);
    assert!(page["next"].is_string(), "1 000 match: a full page");
    let page = page_of(&list(&["--peer", "bulk-b", "--tag", "ch36", "-J"]));
    assert_eq!(page["results"].as_array().unwrap().len(), 0);
    let page = page_of(&list(&["--until", "2023-11-14T22:13:20Z", "-J"]));
    assert_eq!(
        page["results"].as_array().unwrap().len(),
        0,
        "all begin at 22:13:20"
    );
    let page = page_of(&list(&[
        "--since",
        "2023-11-14 22:13",
        "--limit",
        "7",
        "-J",
    ]));
    assert_eq!(page["results"].as_array().unwrap().len(), 7);
    // Text: each line says which peer kept it; a full page says how to get the next.
    let out = list(&["--limit", "3"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(text.lines().all(|l| l.contains(" kept by bulk-")), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--before 1700000000499_"));
    // What cannot be read is a usage error, said, exit 2.
    for bad in [
        &["--since", "yesterday"][..],
        &["--before", "not-a-cursor"],
        &["--limit", "0"],
        &["--limit", "501"],
    ] {
        let out = list(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(!out.stderr.is_empty());
    }
    let _ = std::fs::remove_dir_all(data);
}

#[test]
fn a_machines_history_is_pushed_shown_noted_and_deleted_from_the_command_line() {
    if !postgres::available() {
        return;
    }
    let cluster = Cluster::start();
    let far = Peer::start(&[]);
    let dir = perfpeer_tests::temp_dir("lab-push");
    let (here, elsewhere) = (dir.join("here"), dir.join("elsewhere"));
    let url = cluster.url();
    let results = |data: &std::path::Path, extra: &[&str]| -> std::process::Output {
        lab_results(data, &url, &[&["--peer-name", "bench-7"], extra].concat())
    };
    // Two results kept before this machine knew of the lab.
    for _ in 0..2 {
        let out = perfpeer_test(&[
            &far.control,
            "-t",
            "1",
            "--data-dir",
            here.to_str().unwrap(),
        ]);
        assert!(out.status.success());
    }
    let listed = results(&here, &["list", "-J"]);
    let page: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(page["from"], "lab");
    assert_eq!(
        page["results"].as_array().unwrap().len(),
        0,
        "not in the lab yet"
    );
    // Pushed: both, once, however often.
    for _ in 0..2 {
        let out = results(&here, &["push"]);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains("as bench-7"), "{stdout}");
    }
    assert_eq!(
        cluster.psql("SELECT count(*), count(DISTINCT id), min(kept_by) FROM perfpeer_kept"),
        "2|2|bench-7"
    );
    let listed = results(&here, &["list", "-J"]);
    let page: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let ids: Vec<String> = page["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{page}");
    // Another machine lists and shows them from the lab (by a prefix of the id).
    let out = results(&elsewhere, &["list", "--peer", "bench"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("kept by bench-7"))
            .count(),
        2,
        "{text}"
    );
    let out = results(&elsewhere, &["show", &ids[0][..8], "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(shown["end"]["streams"].is_array(), "{shown}");
    let out = results(&elsewhere, &["show", "ffffffff"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("here or in the lab store"));
    // Notes and a deletion on the machine that kept them reach the lab.
    let out = results(&here, &["note", &ids[0], "--tag", "night"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        cluster.psql(&format!(
            "SELECT tags FROM perfpeer_kept WHERE id = '{}'",
            ids[0]
        )),
        "{night}"
    );
    let out = results(&here, &["delete", &ids[1]]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(cluster.psql("SELECT count(*) FROM perfpeer_kept"), "1");
    // Push needs a lab; one that cannot be reached is an error, and nothing is lost here.
    let out = perfpeer_tests::perfpeer_with(
        Vec::new(),
        &["results", "--data-dir", here.to_str().unwrap(), "push"],
    );
    assert_eq!(out.status.code(), Some(2));
    cluster.pause();
    let out = results(&here, &["push"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be reached"));
    cluster.resume();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_plan_run_keeps_its_repeats_and_itself_in_the_lab_store() {
    if !postgres::available() {
        return;
    }
    let cluster = Cluster::start();
    let far = Peer::start(&[]);
    let dir = perfpeer_tests::temp_dir("lab-plan");
    let plan = perfpeer_tests::nightly_plan(&dir, &far.control, 2);
    let data = dir.join("data");
    let url = cluster.url();
    let out = perfpeer_tests::perfpeer_with(
        Vec::new(),
        &[
            "plan",
            "run",
            plan.to_str().unwrap(),
            "--data-dir",
            data.to_str().unwrap(),
            "--store",
            &url,
            "--peer-name",
            "nightly-pc",
            "--tag",
            "fw=1.2.3",
            "-J",
        ],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("-J");
    let id = json["result_id"].as_str().expect("kept");
    // Written before the command ended: the run and its two repeats, by this peer, tagged.
    assert_eq!(
        cluster
            .psql(&format!(
                "SELECT kind, kept_by FROM perfpeer_kept WHERE id = '{id}'"
            ))
            .trim(),
        "plan|nightly-pc"
    );
    assert_eq!(
        cluster
            .psql(
                "SELECT count(*) FROM perfpeer_kept WHERE kept_by = 'nightly-pc' \
                 AND kind = 'test' AND 'fw=1.2.3' = ANY(tags)"
            )
            .trim(),
        "2"
    );
    // Without the local history there is nothing to queue from: refused before anything runs.
    let out = perfpeer_tests::perfpeer_with(
        Vec::new(),
        &[
            "plan",
            "run",
            plan.to_str().unwrap(),
            "--no-store",
            "--store",
            &url,
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

/// A CA named `tag` and a server certificate it signed for `name` (a DNS name), made with the
/// openssl command in `dir`: (the CA's certificate, the server's, its key), all PEM.
fn lab_ca(dir: &std::path::Path, tag: &str, name: &str) -> (String, String, String) {
    let path = |file: &str| dir.join(format!("{tag}-{file}")).display().to_string();
    let (ca, ca_key) = (path("ca.pem"), path("ca.key"));
    let (cert, key, csr, ext) = (
        path("server.pem"),
        path("server.key"),
        path("server.csr"),
        path("ext.cnf"),
    );
    std::fs::write(
        &ext,
        format!(
            "subjectAltName=DNS:{name}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
        ),
    )
    .unwrap();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    for args in [
        [
            &["req", "-x509"][..],
            &ec,
            &["-keyout", &ca_key, "-out", &ca, "-days", "2"],
            &["-subj", &format!("/CN={tag} lab CA")],
        ]
        .concat(),
        [
            &["req"][..],
            &ec,
            &["-keyout", &key, "-out", &csr],
            &["-subj", &format!("/CN={name}")],
        ]
        .concat(),
        vec![
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-out",
            &cert,
            "-days",
            "2",
            "-extfile",
            &ext,
        ],
    ] {
        let out = std::process::Command::new("openssl")
            .args(&args)
            .output()
            .expect("openssl (scripts/setup.sh installs it)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (ca, cert, key)
}

#[test]
fn tls_is_read_from_the_url_as_libpq_reads_it() {
    if !postgres::available() {
        return;
    }
    let dir = perfpeer_tests::temp_dir("lab-tls");
    let (ca, cert, key) = lab_ca(&dir, "lab", "db.lab");
    let (other_ca, _, _) = lab_ca(&dir, "other", "db.lab");
    let cluster = Cluster::start();
    cluster.enable_tls(std::path::Path::new(&cert), std::path::Path::new(&key));
    let data = dir.join("data");
    let port = cluster.port;
    let list = |url: &str| lab_results(&data, url, &["list", "-J"]);
    let from = |out: &std::process::Output| -> String {
        let page: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        page["from"].as_str().unwrap_or_default().to_string()
    };
    let at_ip = |query: &str| format!("{}?{query}", cluster.url());
    // The database's own name, reached at its address: the certificate names it.
    let at_name = |query: &str| {
        format!("postgres://perfpeer@db.lab:{port}/postgres?hostaddr=127.0.0.1&{query}")
    };
    // Reached: encrypted only (libpq's prefer and require), the chain checked against the lab's
    // CA (verify-ca, or require with a root certificate), and the chain and the name.
    for url in [
        at_ip("sslmode=prefer"),
        at_ip("sslmode=require"),
        at_ip(&format!("sslmode=verify-ca&sslrootcert={ca}")),
        at_ip(&format!("sslmode=require&sslrootcert={ca}")),
        at_name(&format!("sslmode=verify-full&sslrootcert={ca}")),
    ] {
        let out = list(&url);
        assert_eq!(
            from(&out),
            "lab",
            "{url}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // A peer with `require` talks to it over TLS.
    let peer = Peer::start(&[
        "--store",
        &at_ip("sslmode=require"),
        "--peer-name",
        "tls-peer",
    ]);
    wait_reachable(&peer, "the peer with sslmode=require");
    assert_eq!(
        cluster.psql(
            "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
             WHERE a.application_name = 'perfpeer'"
        ),
        "t"
    );
    drop(peer);
    // Refused, and said why: a name the certificate does not carry, a CA that did not sign it,
    // the Mozilla roots for a lab's own CA. The command still lists this machine's results.
    for (url, why) in [
        (
            at_ip(&format!("sslmode=verify-full&sslrootcert={ca}")),
            "not valid for name",
        ),
        (
            at_ip(&format!("sslmode=verify-ca&sslrootcert={other_ca}")),
            "UnknownIssuer",
        ),
        (at_name("sslmode=verify-full"), "UnknownIssuer"),
    ] {
        let out = list(&url);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(from(&out), "local", "{url}");
        assert!(stderr.contains(why), "{url}: {stderr}");
    }
    // Root certificates that cannot be read, or an sslmode libpq does not know: usage errors.
    for url in [
        at_ip("sslmode=verify-ca&sslrootcert=/nonexistent/ca.pem"),
        at_ip(&format!("sslmode=verify-ca&sslrootcert={key}")),
        at_ip("sslmode=always"),
    ] {
        let out = list(&url);
        assert_eq!(out.status.code(), Some(2), "{url}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
