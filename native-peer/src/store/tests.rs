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
        }],
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
        status: TestStatus::Complete,
    }
}

#[test]
fn round_trip_with_both_ends_intervals() {
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
    rec.finish(&result(&spec));
    let got = store.get(&id).unwrap().unwrap();
    assert_eq!(got.summary.status, "complete");
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

#[test]
fn a_running_test_is_aborted_on_reopen_and_keeps_its_intervals() {
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
        id
    };
    let (store, _) = Store::open(&dir).unwrap();
    let got = store.get(&id).unwrap().unwrap();
    assert_eq!(got.summary.status, "aborted");
    assert_eq!(got.result.local.intervals.len(), 2);
    assert_eq!(got.result.local.role, PeerRole::Server);
    assert!(matches!(got.result.status, TestStatus::Partial { .. }));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_old_schema_is_migrated_and_its_data_kept() {
    let dir = temp_dir("migrate");
    std::fs::create_dir_all(&dir).unwrap();
    {
        // A version-1 database, as the first release wrote it, with one result.
        let mut conn = Connection::open(dir.join(FILE_NAME)).unwrap();
        assert_eq!(schema::migrate_to(&mut conn, 1).unwrap(), 1);
        conn.execute(
            "INSERT INTO results (id, test_id, created_ms, origin, role, peer, protocol, direction, spec_json, host_json, status)
             VALUES ('old', 't', 5, 'cli', 'client', 'pc', 'tcp', 'normal', ?1, '{}', 'complete')",
            [serde_json::to_string(&TestSpec::new(Protocol::Tcp)).unwrap()],
        )
        .unwrap();
    }
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
        (
            line.id.as_str(),
            line.kind.as_str(),
            line.protocol.as_str(),
            line.status.as_str()
        ),
        (id.as_str(), "sweep", "udp", "failed")
    );
    assert_eq!(line.reason.as_deref(), Some("2 of 2 sizes failed"));
    store
        .begin(
            "t",
            Origin::Cli,
            PeerRole::Client,
            "pc",
            &spec,
            &Default::default(),
        )
        .unwrap();
    let list = store.list(10).unwrap();
    assert_eq!(
        list.iter().map(|l| l.kind.as_str()).collect::<Vec<_>>(),
        vec!["test", "sweep"]
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
