//! The lab store's migrations against a PostgreSQL 15 cluster of the test's own: from an empty
//! database, and from the previous schema version with a row in it. (The cluster is made as
//! tests/src/postgres.rs makes it, in brief: this crate cannot depend on perfpeer-tests, whose
//! features would leak into the DUT build's checks.)

use std::path::PathBuf;
use std::process::Command;

use super::LabStore;
use super::schema::{current_version, migrate_to};
use crate::store::ListQuery;

#[tokio::test]
async fn migrates_from_empty_and_from_the_previous_version() {
    if !std::path::Path::new(BIN).join("initdb").exists() {
        assert!(std::env::var_os("CI").is_none(), "postgresql-15 is missing");
        eprintln!("SKIPPED: PostgreSQL 15 is not installed");
        return;
    }
    let cluster = Cluster::start();
    let (mut client, connection) = tokio_postgres::connect(&cluster.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    let version = || cluster.psql("SELECT version FROM perfpeer_schema");

    // From empty: every migration, and again (nothing left to run).
    assert_eq!(
        migrate_to(&mut client, current_version()).await.unwrap(),
        current_version()
    );
    assert_eq!(
        migrate_to(&mut client, current_version()).await.unwrap(),
        current_version()
    );
    assert_eq!(version(), current_version().to_string());

    // From the previous version, with a result in it.
    client
        .batch_execute("DROP TABLE perfpeer_kept; DROP TABLE perfpeer_schema")
        .await
        .unwrap();
    let previous = current_version() - 1;
    assert_eq!(migrate_to(&mut client, previous).await.unwrap(), previous);
    cluster.psql(
        "INSERT INTO perfpeer_kept (id, kind, kept_by, created_ms, peer, origin, status, tags,
             link_enabled, summary_json, body_json, written_ms)
         VALUES ('0123456789abcdef0123456789abcdef', 'test', 'old-peer', 1700000000000, 'far',
             'cli', 'complete', ARRAY['old'], true,
             '{\"id\":\"0123456789abcdef0123456789abcdef\",\"created_ms\":1700000000000,
               \"origin\":\"cli\",\"role\":\"client\",\"peer\":\"far\",\"protocol\":\"tcp\",
               \"direction\":\"normal\",\"status\":\"complete\",\"kept_by\":\"old-peer\"}',
             '{}', 0)",
    );
    // This build opens it: the row survives, the schema is this build's.
    let lab = LabStore::new(&cluster.url(), "new-peer").unwrap();
    let listed = lab
        .list(&ListQuery {
            peer: Some("old-peer".into()),
            tag: Some("old".into()),
            ..ListQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].kept_by.as_deref(), Some("old-peer"));
    assert_eq!(version(), current_version().to_string());
    assert!(lab.state().reachable);
}

const BIN: &str = "/usr/lib/postgresql/15/bin";

/// A cluster in a temporary directory, stopped and removed when dropped.
struct Cluster {
    dir: PathBuf,
    port: u16,
}

/// A command running PostgreSQL's `program` as an unprivileged user (`nobody` when root).
fn as_owner(program: &str) -> Command {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let path = format!("{BIN}/{program}");
    if root {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", &path]);
        cmd
    } else {
        Command::new(path)
    }
}

fn ok(what: &str, cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    assert!(
        out.status.success(),
        "{what}: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

impl Cluster {
    fn start() -> Cluster {
        let dir = std::env::temp_dir().join(format!("perfpeer-lab-{}", crate::util::random_id()));
        std::fs::create_dir_all(&dir).unwrap();
        let _ = Command::new("chown")
            .arg("nobody:nogroup")
            .arg(&dir)
            .status();
        let data = dir.join("data");
        ok(
            "initdb",
            as_owner("initdb")
                .args(["-U", "perfpeer", "--auth=trust", "--no-sync", "-D"])
                .arg(&data),
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let options = format!(
            "-p {port} -k {} -c listen_addresses=127.0.0.1",
            dir.display()
        );
        ok(
            "pg_ctl start",
            as_owner("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-o", &options, "-l"])
                .arg(dir.join("log"))
                .args(["-w", "start"]),
        );
        Cluster { dir, port }
    }

    fn url(&self) -> String {
        format!("postgres://perfpeer@127.0.0.1:{}/postgres", self.port)
    }

    fn psql(&self, sql: &str) -> String {
        let port = self.port.to_string();
        ok(
            "psql",
            Command::new(format!("{BIN}/psql")).args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "perfpeer",
                "-d",
                "postgres",
                "-c",
                sql,
            ]),
        )
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = as_owner("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
