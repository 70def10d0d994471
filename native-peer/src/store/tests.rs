//! Store tests on real SQLite files in temporary directories.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use perfpeer_shared::report::{
    IntervalReport, PeerRole, SideReport, StreamFinal, StreamInterval, StreamRole, TestResult,
    TestStatus,
};
use perfpeer_shared::spec::{Protocol, TestSpec};
use rusqlite::Connection;

use super::*;

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("perfpeer-store-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn interval(i: u64, bytes: u64) -> IntervalReport {
    IntervalReport {
        start: Duration::from_secs(i),
        end: Duration::from_secs(i + 1),
        omitted: false,
        streams: vec![StreamInterval {
            id: 1,
            role: StreamRole::Sender,
            bytes,
            packets: None,
            tcp: None,
            udp_rx: None,
            tfrc: None,
            probes: Vec::new(),
            writes: None,
        }],
        wifi: None,
    }
}

fn side(role: PeerRole, stream_role: StreamRole, bytes: u64) -> SideReport {
    SideReport {
        streams: vec![StreamFinal {
            id: 1,
            role: stream_role,
            bytes,
            duration: Duration::from_secs(2),
            packets: None,
            tcp: None,
            udp_rx: None,
            rr: None,
            writes: None,
            write_one_way: None,
            write_frames: None,
        }],
        ..SideReport::empty(role, Default::default())
    }
}

fn result(spec: &TestSpec) -> TestResult {
    let mut local = side(PeerRole::Client, StreamRole::Sender, 2000);
    local.intervals = vec![interval(0, 1000), interval(1, 1000)];
    let mut remote = side(PeerRole::Server, StreamRole::Receiver, 2000);
    remote.intervals = vec![interval(0, 990)];
    TestResult {
        id: "t1".into(),
        spec: spec.clone(),
        started_unix_ms: 1,
        server_addr: "pc:5210".into(),
        local,
        remote: Some(remote),
        group_receivers: Vec::new(),
        working_load: None,
        status: TestStatus::Complete,
    }
}

#[tokio::test]
async fn round_trip_with_both_ends_intervals() {
    let dir = temp_dir("rt");
    let (store, note) = Store::open(&dir).unwrap();
    assert!(note.is_none());
    let store = Arc::new(store);
    let spec = TestSpec::new(Protocol::Tcp);
    let mut rec = Recording::begin(
        &store,
        "t1",
        Origin::Cli,
        PeerRole::Client,
        "pc:5210",
        &spec,
    )
    .unwrap();
    rec.interval(PeerRole::Client, &interval(0, 1000));
    let id = rec.id().to_string();
    assert_eq!(id.len(), 32, "an unguessable 128-bit id");
    rec.finish(&result(&spec)).await;
    let got = store.get(&id).unwrap().unwrap();
    assert_eq!(got.summary.status, RunStatus::Complete);
    assert_eq!(got.summary.bytes, Some(2000));
    assert_eq!(got.result.local.intervals.len(), 2);
    assert_eq!(got.result.remote.as_ref().unwrap().intervals.len(), 1);
    assert_eq!(got.result.local.streams, result(&spec).local.streams);
    assert_eq!(store.list(10).unwrap().len(), 1);
    assert!(store.set_link(&id, false).unwrap());
    assert!(!store.get(&id).unwrap().unwrap().summary.link_enabled);
    assert!(store.delete(&id).unwrap());
    assert!(store.get(&id).unwrap().is_none());
    assert!(!store.delete(&id).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A station's reading at one interval, as a peer's JSON has it: `signal` dBm, sending at
/// 144.4 Mbit/s, 20 retries of 1000 packets.
fn radio(signal: i8) -> perfpeer_shared::wifi::LinkSample {
    serde_json::from_str(&format!(
        r#"{{"iface":"wlan0","mode":"station","station":"02:00:00:00:01:00","signal_dbm":{signal},
           "tx_rate":{{"kind":"ht","mcs":15,"mbps":144.4}},"tx_packets":1000,"tx_retries":20,
           "retries_percent":2.0}}"#
    ))
    .unwrap()
}

#[tokio::test]
async fn a_finished_tests_history_line_carries_its_wifi_brief() {
    use perfpeer_shared::wifi::LinkBrief;
    let dir = temp_dir("wifi-brief");
    let (store, _) = Store::open(&dir).unwrap();
    let store = Arc::new(store);
    let spec = TestSpec::new(Protocol::Tcp);
    let mut over_the_air = result(&spec);
    for (i, signal) in over_the_air.local.intervals.iter_mut().zip([-50, -54]) {
        i.wifi = Some(Box::new(radio(signal)));
    }
    let air = keep_owned(&store, &over_the_air).await;
    let wired = keep_owned(&store, &result(&spec)).await;
    let brief = LinkBrief {
        signal_dbm: Some(-52.0),
        phy_mbps: Some(144.4),
        retries_percent: Some(2.0),
        far: false,
    };
    assert_eq!(listed(&store, &air).wifi, Some(brief));
    assert_eq!(store.get(&air).unwrap().unwrap().summary.wifi, Some(brief));
    assert_eq!(listed(&store, &wired).wifi, None, "no radio, no brief");
    // A brief that no longer reads does not fail the list.
    store
        .conn()
        .execute("UPDATE results SET link_json = 'x' WHERE id = ?1", [&air])
        .unwrap();
    assert_eq!(listed(&store, &air).wifi, None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_running_test_is_aborted_on_reopen_and_keeps_its_intervals() {
    let dir = temp_dir("abort");
    let id = {
        let (store, _) = Store::open(&dir).unwrap();
        let store = Arc::new(store);
        let spec = TestSpec::new(Protocol::Udp);
        let mut rec = Recording::begin(
            &store,
            "t2",
            Origin::FarEnd,
            PeerRole::Server,
            "10.0.0.1:4000",
            &spec,
        )
        .unwrap();
        rec.interval(PeerRole::Server, &interval(0, 500));
        rec.interval(PeerRole::Server, &interval(1, 600));
        let id = rec.id().to_string();
        // The process "dies": nothing more is written (no Drop runs under SIGKILL).
        std::mem::forget(rec);
        store.flush().await;
        id
    };
    // While its writer lives (this process), opening the store again leaves it running ...
    let (store, _) = Store::open(&dir).unwrap();
    assert_eq!(
        store.get(&id).unwrap().unwrap().summary.status,
        RunStatus::Running
    );
    drop(store);
    // ... and once the writer is gone, it is aborted.
    Connection::open(dir.join(FILE_NAME))
        .unwrap()
        .execute("UPDATE results SET owner = 'another-boot:1:1'", [])
        .unwrap();
    let (store, _) = Store::open(&dir).unwrap();
    let got = store.get(&id).unwrap().unwrap();
    assert_eq!(got.summary.status, RunStatus::Aborted);
    assert_eq!(got.result.local.intervals.len(), 2);
    assert_eq!(got.result.local.role, PeerRole::Server);
    assert!(matches!(got.result.status, TestStatus::Partial { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A database at schema `version` in a fresh directory for `tag`, as an older release left
/// it: its directory and a connection to fill it through (close it before opening the store).
fn old_database(tag: &str, version: u32) -> (PathBuf, Connection) {
    let dir = temp_dir(tag);
    std::fs::create_dir_all(&dir).unwrap();
    let mut conn = Connection::open(dir.join(FILE_NAME)).unwrap();
    assert_eq!(schema::migrate_to(&mut conn, version).unwrap(), version);
    (dir, conn)
}

#[test]
fn an_old_schema_is_migrated_and_its_data_kept() {
    // A version-1 database, as the first release wrote it, with one result.
    let (dir, conn) = old_database("migrate", 1);
    conn.execute(
        "INSERT INTO results (id, test_id, created_ms, origin, role, peer, protocol, direction, spec_json, host_json, status)
         VALUES ('old', 't', 5, 'cli', 'client', 'pc', 'tcp', 'normal', ?1, '{}', 'complete')",
        [serde_json::to_string(&TestSpec::new(Protocol::Tcp)).unwrap()],
    )
    .unwrap();
    drop(conn);
    let (store, _) = Store::open(&dir).unwrap();
    let list = store.list(10).unwrap();
    assert_eq!(list.len(), 1);
    assert!(
        list[0].link_enabled,
        "the column added in version 2 defaults to on"
    );
    let version: u32 = store
        .conn()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, schema::current_version());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_corrupted_file_is_kept_aside_and_a_fresh_store_starts() {
    let dir = temp_dir("corrupt");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join(FILE_NAME),
        b"this is not an SQLite database, just forty-odd bytes of text",
    )
    .unwrap();
    let (store, note) = Store::open(&dir).unwrap();
    let note = note.expect("a message about the bad file");
    assert!(
        note.contains("not a readable result database") && note.contains("corrupt-"),
        "{note}"
    );
    assert!(store.list(1).unwrap().is_empty());
    let kept = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("results.db.corrupt-")
        });
    assert!(kept, "the old file is kept");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_sweep_is_kept_whole_and_its_link_switches_and_deletes_like_a_tests() {
    use perfpeer_shared::sweep::{SweepPoint, SweepResult};
    let dir = temp_dir("sweep");
    let (store, _) = Store::open(&dir).unwrap();
    let spec = TestSpec::new(Protocol::Udp);
    let sweep = SweepResult {
        protocol: Protocol::Udp,
        ccid: None,
        bitrate: Some(2_000_000),
        seconds_per_size: 1.0,
        points: vec![
            SweepPoint::failed(64, "refused"),
            SweepPoint::failed(128, "x"),
        ],
    };
    let id = store.save_sweep("pc:5210", &spec, &sweep).unwrap();
    assert_eq!(id.len(), 32);
    let kept = store.sweep(&id).unwrap().unwrap();
    assert_eq!(
        (
            kept.peer.as_str(),
            &kept.spec,
            &kept.result,
            kept.link_enabled
        ),
        ("pc:5210", &spec, &sweep, true)
    );
    assert!(store.get(&id).unwrap().is_none(), "not a test");
    // Listed with the tests, newest first, as a sweep whose failed sizes are counted.
    let list = store.list(10).unwrap();
    assert_eq!(list.len(), 1);
    let line = &list[0];
    assert_eq!(
        (line.id.as_str(), line.kind, line.protocol, line.status),
        (
            id.as_str(),
            ResultKind::Sweep,
            Protocol::Udp,
            RunStatus::Failed
        )
    );
    assert_eq!(line.reason.as_deref(), Some("2 of 2 sizes failed"));
    let test = NewTest {
        test_id: "t".into(),
        origin: Origin::Cli,
        role: PeerRole::Client,
        peer: "pc".into(),
        spec: spec.clone(),
        source: None,
    };
    store
        .begin(&crate::util::random_id(), &test, &Default::default())
        .unwrap();
    let list = store.list(10).unwrap();
    assert_eq!(
        list.iter().map(|l| l.kind).collect::<Vec<_>>(),
        vec![ResultKind::Test, ResultKind::Sweep]
    );
    assert_eq!(store.list(1).unwrap().len(), 1, "the limit holds over both");
    assert!(store.set_link(&id, false).unwrap());
    assert!(!store.sweep(&id).unwrap().unwrap().link_enabled);
    drop(store);
    // Kept across a reopen; deleted for good.
    let (store, _) = Store::open(&dir).unwrap();
    assert!(store.sweep(&id).unwrap().is_some());
    assert!(store.delete(&id).unwrap());
    assert!(store.sweep(&id).unwrap().is_none());
    assert!(!store.delete(&id).unwrap());
    assert!(store.sweep("nope").unwrap().is_none());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn the_database_is_the_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_dir("modes").join("nested");
    let (store, _) = Store::open(&dir).unwrap();
    let store = Arc::new(store);
    owned(&store, &TestSpec::new(Protocol::Tcp), 2).await;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&dir.join(FILE_NAME)), 0o600);
    assert_eq!(mode(&dir.join(format!("{FILE_NAME}-wal"))), 0o600);
    std::fs::remove_dir_all(dir.parent().unwrap()).unwrap();
}

#[tokio::test]
async fn a_served_result_names_its_client_by_name_and_address_not_its_port() {
    let dir = temp_dir("served-peer");
    let (store, _) = Store::open(&dir).unwrap();
    let store = Arc::new(store);
    let spec = TestSpec::new(Protocol::Tcp);
    let client: std::net::SocketAddr = "192.168.1.5:49348".parse().unwrap();
    let mut rec = Recording::begin_served(&store, "t", client, &spec).unwrap();
    rec.interval(PeerRole::Server, &interval(0, 1000));
    store.flush().await;
    assert_eq!(
        store.list(10).unwrap()[0].peer,
        "192.168.1.5",
        "while it runs"
    );
    // Kept by the far end: its report is local, the client's (with its name) remote.
    let mut r = result(&spec);
    std::mem::swap(&mut r.local, r.remote.as_mut().unwrap());
    r.server_addr = "laptop (192.168.1.5)".into();
    rec.finish(&r).await;
    let row = &store.list(10).unwrap()[0];
    assert_eq!(row.peer, "laptop (192.168.1.5)");
    assert_eq!(row.role, PeerRole::Server);
    // A client's row keeps the target it was given.
    let id = owned(&store, &spec, 1).await;
    let rows = store.list(10).unwrap();
    assert_eq!(rows.iter().find(|e| e.id == id).unwrap().peer, "pc");
    std::fs::remove_dir_all(dir).unwrap();
}

/// A fresh store in a temporary directory that keeps `max_results` results (in 64 MiB).
fn keeping(tag: &str, max_results: u32) -> (Arc<Store>, PathBuf) {
    let dir = temp_dir(tag);
    let (mut store, _) = Store::open(&dir).unwrap();
    store.set_retention(Retention {
        max_results,
        max_bytes: 64 << 20,
    });
    (Arc::new(store), dir)
}

#[tokio::test]
async fn retention_keeps_the_newest_results_within_count_and_size() {
    let (store, dir) = keeping("retention", 5);
    let spec = TestSpec::new(Protocol::Tcp);
    let mut ids = Vec::new();
    for _ in 0..12 {
        ids.push(owned(&store, &spec, 2).await);
    }
    let kept: Vec<String> = store.list(100).unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(kept.len(), 5);
    assert!(
        ids[7..].iter().all(|id| kept.contains(id)),
        "the newest stay"
    );
    drop(store);

    // By size: long tests until the database would pass 1 MiB.
    let dir2 = temp_dir("retention-size");
    let (mut store, _) = Store::open(&dir2).unwrap();
    store.set_retention(Retention {
        max_results: 1000,
        max_bytes: 1 << 20,
    });
    let store = Arc::new(store);
    let mut long = TestSpec::new(Protocol::Tcp);
    long.end = perfpeer_shared::spec::EndCondition::Time {
        duration: Duration::from_secs(600),
    };
    for _ in 0..40 {
        owned(&store, &long, 600).await;
    }
    let used: i64 = Connection::open(dir2.join(FILE_NAME))
        .unwrap()
        .query_row(
            "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count, pragma_freelist_count, pragma_page_size",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(used <= 1 << 20, "{used} bytes in use");
    assert!(!store.list(100).unwrap().is_empty(), "the newest are kept");
    for d in [dir, dir2] {
        std::fs::remove_dir_all(d).unwrap();
    }
}

#[tokio::test]
async fn an_implausible_far_report_is_kept_without_it() {
    let dir = temp_dir("plausible");
    let (store, _) = Store::open(&dir).unwrap();
    let store = Arc::new(store);
    let spec = TestSpec::new(Protocol::Tcp);
    let rec = Recording::begin(&store, "t", Origin::FarEnd, PeerRole::Server, "c", &spec).unwrap();
    let id = rec.id().to_string();
    let mut r = result(&spec);
    // A 10 s test whose client claims 100 000 intervals and a stream the test never had.
    r.remote.as_mut().unwrap().intervals = (0..100_000).map(|i| interval(i, 1)).collect();
    r.remote.as_mut().unwrap().streams[0].id = 99;
    rec.finish(&r).await;
    let got = store.get(&id).unwrap().unwrap();
    assert!(got.result.remote.is_none());
    assert_eq!(got.summary.status, RunStatus::Failed);
    assert!(
        got.summary
            .reason
            .as_deref()
            .is_some_and(|r| r.contains("report was not kept")),
        "{:?}",
        got.summary.reason
    );
    let rows: i64 = Connection::open(dir.join(FILE_NAME))
        .unwrap()
        .query_row("SELECT count(*) FROM intervals", [], |r| r.get(0))
        .unwrap();
    assert!(rows < 100, "{rows} intervals stored");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A finished test of the owner's (a `perfpeer test` from this machine).
/// `result` kept as a test of this peer's own (its intervals written with it); its id.
async fn keep_owned(store: &Arc<Store>, result: &TestResult) -> String {
    let rec = Recording::begin(
        store,
        "t",
        Origin::Cli,
        PeerRole::Client,
        "pc",
        &result.spec,
    );
    let rec = rec.unwrap();
    let id = rec.id().to_string();
    rec.finish(result).await;
    id
}

async fn owned(store: &Arc<Store>, spec: &TestSpec, intervals: u64) -> String {
    let rec = Recording::begin(store, "t", Origin::Cli, PeerRole::Client, "pc", spec).unwrap();
    finish_with(rec, spec, intervals).await
}

/// A finished test this peer served as the far end of an anonymous `client`.
async fn served(store: &Arc<Store>, spec: &TestSpec, intervals: u64, client: &str) -> String {
    let client: std::net::SocketAddr = client.parse().unwrap();
    let rec = Recording::begin_served(store, "t", client, spec).unwrap();
    finish_with(rec, spec, intervals).await
}

async fn finish_with(mut rec: Recording, spec: &TestSpec, intervals: u64) -> String {
    let mut r = result(spec);
    r.local.intervals = (0..intervals).map(|i| interval(i, 1000)).collect();
    r.remote.as_mut().unwrap().intervals = r.local.intervals.clone();
    let id = rec.id().to_string();
    for i in &r.local.intervals {
        rec.interval(r.local.role, i);
    }
    rec.finish(&r).await;
    id
}

fn kept_ids(store: &Store) -> Vec<String> {
    store
        .list(10_000)
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect()
}

/// Finished anonymous results per source, as the store counts them.
fn anonymous_by_source(store: &Store) -> std::collections::HashMap<String, (usize, u64)> {
    let mut by = std::collections::HashMap::new();
    for row in retention::anonymous_rows(&store.conn()).unwrap() {
        let e: &mut (usize, u64) = by.entry(row.source).or_default();
        e.0 += 1;
        e.1 += row.bytes;
    }
    by
}

#[tokio::test]
async fn strangers_results_keep_to_their_share_and_never_evict_the_owners() {
    let (store, dir) = keeping("share-count", 8);
    let spec = TestSpec::new(Protocol::Tcp);
    let mut owners = Vec::new();
    for _ in 0..3 {
        owners.push(owned(&store, &spec, 2).await);
    }
    let neighbour = served(&store, &spec, 2, "10.0.0.3:4000").await;
    // A far-end result the token holder wrote notes on is the owner's now.
    let noted = served(&store, &spec, 2, "10.0.0.4:4000").await;
    let notes = Notes {
        text: "keep this one".into(),
        tags: Vec::new(),
    };
    assert!(store.set_notes(&noted, &notes).unwrap());
    owners.push(noted);
    let mut last = String::new();
    for i in 0..20 {
        last = served(&store, &spec, 2, &format!("10.0.0.2:{}", 4000 + i)).await;
    }
    let kept = kept_ids(&store);
    assert!(
        owners.iter().all(|id| kept.contains(id)),
        "the owner's results stay: {kept:?}"
    );
    assert!(kept.contains(&neighbour), "one address evicts no other's");
    assert!(kept.contains(&last), "the newest far-end result stays");
    let by = anonymous_by_source(&store);
    let anonymous: usize = by.values().map(|(n, _)| n).sum();
    assert!(anonymous <= 4, "{by:?}: beyond half of 8");
    assert!(
        by.values().all(|(n, _)| *n <= 2),
        "{by:?}: beyond a quarter"
    );
    // Two addresses of one IPv6 /64 are one source; past the share, the oldest of all go.
    for i in 0..4 {
        served(&store, &spec, 2, &format!("[2001:db8::{}]:4000", i % 2 + 1)).await;
    }
    let by = anonymous_by_source(&store);
    assert_eq!(by.get("2001:db8::/64").map(|(n, _)| *n), Some(2), "{by:?}");
    assert_eq!(by.values().map(|(n, _)| n).sum::<usize>(), 4, "{by:?}");
    assert!(owners.iter().all(|id| kept_ids(&store).contains(id)));
    // The owner may take the whole budget: strangers' results make room, then the owner's
    // oldest go.
    for _ in 0..10 {
        owners.push(owned(&store, &spec, 2).await);
    }
    let kept = kept_ids(&store);
    assert_eq!(kept.len(), 8);
    assert!(owners[6..].iter().all(|id| kept.contains(id)), "{kept:?}");
    assert!(anonymous_by_source(&store).is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn strangers_bytes_keep_to_their_share_and_never_evict_the_owners() {
    let dir = temp_dir("share-bytes");
    let (mut store, _) = Store::open(&dir).unwrap();
    store.set_retention(Retention {
        max_results: 1000,
        max_bytes: 1 << 20,
    });
    let store = Arc::new(store);
    let mut long = TestSpec::new(Protocol::Tcp);
    long.end = perfpeer_shared::spec::EndCondition::Time {
        duration: Duration::from_secs(600),
    };
    let mut owners = Vec::new();
    for _ in 0..3 {
        owners.push(owned(&store, &long, 100).await);
    }
    for i in 0..30 {
        served(&store, &long, 400, &format!("10.0.0.2:{}", 4000 + i)).await;
    }
    let kept = kept_ids(&store);
    assert!(
        owners.iter().all(|id| kept.contains(id)),
        "the owner's results stay: {} kept",
        kept.len()
    );
    let by = anonymous_by_source(&store);
    let (n, bytes) = by["10.0.0.2"];
    assert!(
        n == 1 || bytes <= 256 << 10,
        "{n} results of {bytes} bytes: beyond a quarter of 1 MiB"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn a_full_disk_is_said_as_disk_full_and_the_next_kept_result_clears_it() {
    let dir = temp_dir("full");
    let (store, _) = Store::open(&dir).unwrap();
    let store = Arc::new(store);
    let spec = TestSpec::new(Protocol::Tcp);
    owned(&store, &spec, 2).await;
    // The database may not grow by more than a few pages: a disk that is full.
    let pages: i64 = store
        .conn()
        .query_row("PRAGMA page_count", [], |r| r.get(0))
        .unwrap();
    store
        .conn()
        .pragma_update(None, "max_page_count", pages + 2)
        .unwrap();
    for _ in 0..20 {
        served(&store, &spec, 50, "10.0.0.2:4000").await;
        if store.problem().is_some() {
            break;
        }
    }
    let problem = store.problem().expect("the full disk is said");
    assert!(problem.contains("disk full"), "{problem}");
    // A test whose row could not be written writes no intervals, nor their errors.
    served(&store, &spec, 50, "10.0.0.2:4000").await;
    let problem = store.problem().expect("the full disk is said");
    assert!(
        problem.contains("disk full") && !problem.contains("FOREIGN KEY"),
        "{problem}"
    );
    store
        .conn()
        .pragma_update(None, "max_page_count", 1 << 30)
        .unwrap();
    owned(&store, &spec, 2).await;
    assert_eq!(store.problem(), None, "room again: the problem clears");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn far_end_rows_of_an_older_version_share_one_unknown_source() {
    // A version-7 database with four far-end results (no sources were kept then).
    let (dir, conn) = old_database("migrate-sources", 7);
    for n in 0..4 {
        conn.execute(
            "INSERT INTO results (id, test_id, created_ms, origin, role, peer, protocol, direction, spec_json, host_json, status)
             VALUES (?1, 't', ?2, 'far_end', 'server', 'pc', 'tcp', 'normal', ?3, '{}', 'complete')",
            params![format!("old{n}"), n, serde_json::to_string(&TestSpec::new(Protocol::Tcp)).unwrap()],
        )
        .unwrap();
    }
    drop(conn);
    let (mut store, _) = Store::open(&dir).unwrap();
    store.set_retention(Retention {
        max_results: 8,
        max_bytes: 64 << 20,
    });
    // One source's share of 8: a quarter, the newest.
    assert_eq!(kept_ids(&store), vec!["old3", "old2"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn results_kept_before_rows_had_a_wifi_brief_list_without_one() {
    // A version-9 database with one finished result.
    let (dir, conn) = old_database("migrate-wifi", 9);
    let spec = TestSpec::new(Protocol::Tcp);
    conn.execute(
        "INSERT INTO results (id, test_id, created_ms, origin, role, peer, protocol, direction, spec_json, host_json, status, result_json)
         VALUES ('old', 't1', 5, 'cli', 'client', 'pc', 'tcp', 'normal', ?1, '{}', 'complete', ?2)",
        params![serde_json::to_string(&spec).unwrap(), serde_json::to_string(&result(&spec)).unwrap()],
    )
    .unwrap();
    drop(conn);
    let (store, _) = Store::open(&dir).unwrap();
    assert_eq!(listed(&store, "old").wifi, None);
    let opened = store.get("old").unwrap().unwrap();
    assert_eq!(opened.summary.wifi, None);
    assert_eq!(opened.summary.status, RunStatus::Complete);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The one history line of `id`.
fn listed(store: &Store, id: &str) -> HistoryEntry {
    let list = store.list(100).unwrap();
    assert_eq!(list.iter().filter(|l| l.id == id).count(), 1, "{list:?}");
    list.into_iter().find(|l| l.id == id).unwrap()
}

/// A sweep this peer served as the far end of `client` (one failed size).
fn served_sweep(store: &Store, client: &str) -> String {
    use perfpeer_shared::sweep::{SweepPoint, SweepResult};
    let spec = TestSpec::new(Protocol::Udp);
    let sweep = SweepResult::new(&spec, vec![SweepPoint::failed(64, "refused")]);
    let ip: std::net::IpAddr = client.parse().unwrap();
    let source = crate::admission::Source::of(ip);
    store
        .save_served(
            source,
            &format!("laptop ({client})"),
            &Served::Sweep(spec, sweep),
        )
        .unwrap()
}

#[tokio::test]
async fn served_runs_are_kept_whole_within_their_clients_share() {
    use perfpeer_shared::latency::{LatencyRequest, ServedTest, served_run};
    let (store, dir) = keeping("served-runs", 8);
    let spec = TestSpec::new(Protocol::Tcp);
    let mut owners = Vec::new();
    for _ in 0..3 {
        owners.push(owned(&store, &spec, 2).await);
    }
    let owners_sweep = store
        .save_sweep(
            "pc:5210",
            &TestSpec::new(Protocol::Udp),
            &perfpeer_shared::sweep::SweepResult::new(&TestSpec::new(Protocol::Udp), Vec::new()),
        )
        .unwrap();
    owners.push(owners_sweep);
    // One latency run from 10.0.0.3, kept as its far end served it.
    let request = LatencyRequest::default();
    let probe = ServedTest::failed(&request.probe_spec(30.0), 0.0, "x");
    let (req, result) = served_run("phone (10.0.0.3)", 1, false, &[probe]);
    let source = crate::admission::Source::of("10.0.0.3".parse().unwrap());
    let neighbour = store
        .save_served(source, "phone (10.0.0.3)", &Served::Latency(req, result))
        .unwrap();
    // Listed once, as the far end's, and opened as a latency run.
    let line = listed(&store, &neighbour);
    assert_eq!(line.peer, "phone (10.0.0.3)");
    assert_eq!(
        (line.kind, line.origin, line.role),
        (ResultKind::Latency, Origin::FarEnd, PeerRole::Server)
    );
    assert!(
        matches!(store.kept(&neighbour).unwrap(), Some(Kept::Latency(l)) if l.origin == Origin::FarEnd)
    );
    // 10.0.0.2 runs sweeps and tests: together they keep to its share (2 of 8), and evict
    // neither the owner's results nor its neighbour's.
    for i in 0..6 {
        served_sweep(&store, "10.0.0.2");
        served(&store, &spec, 2, &format!("10.0.0.2:{}", 4000 + i)).await;
    }
    let last = served_sweep(&store, "10.0.0.2");
    let kept = kept_ids(&store);
    assert!(
        owners.iter().all(|id| kept.contains(id)),
        "the owner's results and sweep stay: {kept:?}"
    );
    assert!(kept.contains(&neighbour), "one address evicts no other's");
    assert!(kept.contains(&last), "the newest served run stays");
    let by = anonymous_by_source(&store);
    assert_eq!(by.get("10.0.0.2").map(|(n, _)| *n), Some(2), "{by:?}");
    assert_eq!(by.get("10.0.0.3").map(|(n, _)| *n), Some(1), "{by:?}");
    let line = listed(&store, &last);
    assert_eq!(
        (line.kind, line.origin, line.role),
        (ResultKind::Sweep, Origin::FarEnd, PeerRole::Server)
    );
    match store.kept(&last).unwrap() {
        Some(Kept::Sweep(s)) => assert_eq!(s.origin, Origin::FarEnd),
        other => panic!("{other:?}"),
    }
    // The owner may take the whole budget: served runs make room like served tests.
    for _ in 0..8 {
        owners.push(owned(&store, &spec, 2).await);
    }
    assert!(anonymous_by_source(&store).is_empty());
    assert_eq!(kept_ids(&store).len(), 8);
    std::fs::remove_dir_all(&dir).unwrap();
}
