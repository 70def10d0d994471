//! A PostgreSQL 15 cluster of a test's own (Debian's `postgresql-15`): made with `initdb` in a
//! temporary directory owned by an unprivileged user (initdb refuses root; as root the tools
//! run as `nobody`), started with `pg_ctl` on a free loopback port, its superuser `perfpeer`
//! trusted; stopped and removed when dropped. `psql` runs queries for the tests' checks.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Where Debian puts PostgreSQL 15's programs.
const BIN: &str = "/usr/lib/postgresql/15/bin";

/// A running cluster.
pub struct Cluster {
    dir: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
}

/// Whether PostgreSQL 15 is installed here; in CI (`CI` set) a missing one fails the test, since
/// scripts/setup.sh installs it. Otherwise its absence is said (SKIPPED) and the test returns.
pub fn available() -> bool {
    let found = std::path::Path::new(BIN).join("initdb").exists();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "PostgreSQL 15 is missing ({BIN}): scripts/setup.sh installs postgresql-15"
        );
        crate::skip("PostgreSQL 15 is not installed (apt-get install postgresql-15)");
    }
    found
}

/// A command running `program` of PostgreSQL as the cluster's owner (`nobody` when root).
fn as_owner(program: &str) -> Command {
    let path = format!("{BIN}/{program}");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", &path]);
        cmd
    } else {
        Command::new(path)
    }
}

fn checked(what: &str, out: std::io::Result<Output>) -> Output {
    let out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Cluster {
    /// Makes and starts a fresh cluster.
    pub fn start() -> Cluster {
        let dir = crate::temp_dir("postgres");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            checked(
                "chown the cluster's directory",
                Command::new("chown")
                    .args(["nobody:nogroup"])
                    .arg(&dir)
                    .output(),
            );
        }
        let data = dir.join("data");
        checked(
            "initdb",
            as_owner("initdb")
                .args([
                    "-U",
                    "perfpeer",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    "-D",
                ])
                .arg(&data)
                .output(),
        );
        let cluster = Cluster {
            dir,
            port: crate::free_port(),
        };
        cluster.resume();
        cluster
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://perfpeer@127.0.0.1:{}/postgres", self.port)
    }

    /// Starts the server (again, after [`Cluster::pause`]) and waits until it takes connections.
    pub fn resume(&self) {
        let data = self.dir.join("data");
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.dir.display()
        );
        checked(
            "pg_ctl start",
            as_owner("pg_ctl")
                .arg("-D")
                .arg(&data)
                .args(["-o", &options, "-l"])
                .arg(self.dir.join("log"))
                .args(["-w", "start"])
                .output(),
        );
    }

    /// Restarts the server with TLS: `cert` (PEM, the chain) and `key` (PEM) copied into the
    /// cluster's directory, readable by its owner only, as PostgreSQL asks.
    pub fn enable_tls(&self, cert: &std::path::Path, key: &std::path::Path) {
        self.pause();
        let (own_cert, own_key) = (self.dir.join("server.crt"), self.dir.join("server.key"));
        std::fs::copy(cert, &own_cert).expect("copy the certificate");
        std::fs::copy(key, &own_key).expect("copy the key");
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } == 0 {
            checked(
                "chown the certificate and key",
                Command::new("chown")
                    .args(["nobody:nogroup"])
                    .args([&own_cert, &own_key])
                    .output(),
            );
        }
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&own_key, std::fs::Permissions::from_mode(0o600))
            .expect("chmod the key");
        let conf = self.dir.join("data").join("postgresql.conf");
        let mut text = std::fs::read_to_string(&conf).expect("postgresql.conf");
        text.push_str(&format!(
            "\nssl = on\nssl_cert_file = '{}'\nssl_key_file = '{}'\n",
            own_cert.display(),
            own_key.display()
        ));
        std::fs::write(&conf, text).expect("write postgresql.conf");
        self.resume();
    }

    /// Stops the server (fast: open connections are closed), keeping its data.
    pub fn pause(&self) {
        checked(
            "pg_ctl stop",
            as_owner("pg_ctl")
                .arg("-D")
                .arg(self.dir.join("data"))
                .args(["-m", "fast", "-w", "stop"])
                .output(),
        );
    }

    /// Runs `sql` with psql; its rows, one a line, fields split by `|`.
    pub fn psql(&self, sql: &str) -> String {
        let out = checked(
            "psql",
            Command::new(format!("{BIN}/psql"))
                .args([
                    "-X",
                    "-q",
                    "-A",
                    "-t",
                    "-v",
                    "ON_ERROR_STOP=1",
                    "-h",
                    "127.0.0.1",
                ])
                .args([
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "perfpeer",
                    "-d",
                    "postgres",
                    "-c",
                    sql,
                ])
                .output(),
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
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
