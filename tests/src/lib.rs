//! Helpers for perfpeer's end-to-end tests: build the real `perfpeer` binary once, start
//! `perfpeer serve` processes on free loopback ports (or inside a network namespace), run
//! `perfpeer test` and read its JSON. Every process started here is killed when its handle drops.

pub mod fuzz;
pub mod netns;
pub mod postgres;

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The token every test peer is started with.
pub const TOKEN: &str = "e2e-test-token-2026";

/// Path of the `perfpeer` binary, built once per test run with the same profile as the tests.
pub fn perfpeer_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("test binary path");
        let profile_dir = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("target/<profile>/deps layout");
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build.args(["build", "-q", "-p", "perfpeer", "--bin", "perfpeer"]);
        if release {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build");
        assert!(status.success(), "cargo build -p perfpeer failed");
        profile_dir.join("perfpeer")
    })
    .clone()
}

/// A running `perfpeer serve`.
pub struct Peer {
    child: Child,
    /// `host:port` of its control endpoint.
    pub control: String,
    /// Its data port.
    pub data_port: u16,
    /// Its data directory (removed on drop).
    pub dir: PathBuf,
}

/// A directory for `perfpeer serve --plans`: `quick.toml` (two 1-s TCP cases against `peer`,
/// up and down, each expecting more than 1 kbit/s received) and `broken.toml` (not TOML).
pub fn plans_dir(peer: &str) -> PathBuf {
    let dir = temp_dir("plans");
    std::fs::write(
        dir.join("quick.toml"),
        format!(
            "name = \"quick\"\npeers = [\"{peer}\"]\ntime = 1\nrepeats = 1\nexpect = [\"rx>=1k\"]\n\
             baseline = \"last\"\n\n\
             [[case]]\nname = \"up\"\nprotocol = \"tcp\"\n\n\
             [[case]]\nname = \"down\"\nprotocol = \"tcp\"\ndirection = \"down\"\n"
        ),
    )
    .expect("plan file");
    std::fs::write(dir.join("broken.toml"), "peers = [\n").expect("plan file");
    dir
}

/// A plan file `nightly.toml` in `dir`: one TCP case against `peer`, 1 s, `repeats` times.
pub fn nightly_plan(dir: &std::path::Path, peer: &str, repeats: u32) -> PathBuf {
    let plan = dir.join("nightly.toml");
    std::fs::write(
        &plan,
        format!(
            "name = \"nightly\"\npeers = [\"{peer}\"]\ntime = 1\nrepeats = {repeats}\n\n\
             [[case]]\nname = \"up\"\nprotocol = \"tcp\"\n"
        ),
    )
    .expect("plan file");
    plan
}

/// A fresh directory under the system's temp dir, named for `tag`.
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("perfpeer-e2e-{}-{tag}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

impl Peer {
    /// Starts a peer on 127.0.0.1 with free ports and extra `serve` flags.
    pub fn start(extra: &[&str]) -> Peer {
        Peer::start_with(Vec::new(), "127.0.0.1:0", "0", extra)
    }

    /// Starts a peer through `prefix` (e.g. `ip netns exec NS`), listening on `listen`.
    pub fn start_with(prefix: Vec<String>, listen: &str, data_port: &str, extra: &[&str]) -> Peer {
        Peer::start_bin_in(
            &perfpeer_bin(),
            temp_dir("peer"),
            prefix,
            listen,
            data_port,
            extra,
        )
    }

    /// Starts another perfpeer binary (a DUT build, through `prefix` such as
    /// `qemu-mipsel-static`) on 127.0.0.1 with free ports and extra `serve` flags.
    pub fn start_binary(bin: &std::path::Path, prefix: Vec<String>, extra: &[&str]) -> Peer {
        Peer::start_bin_in(bin, temp_dir("peer"), prefix, "127.0.0.1:0", "0", extra)
    }

    fn start_bin_in(
        bin: &std::path::Path,
        dir: PathBuf,
        prefix: Vec<String>,
        listen: &str,
        data_port: &str,
        extra: &[&str],
    ) -> Peer {
        let mut cmd = command_through(&prefix, bin);
        cmd.args([
            "serve",
            "--listen",
            listen,
            "--data-port",
            data_port,
            "--data-dir",
        ])
        .arg(&dir)
        .args(extra);
        if !extra.contains(&"--open")
            && !extra.contains(&"--token")
            && !extra.contains(&"--token-file")
        {
            cmd.args(["--token", TOKEN]);
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("serve.log"))
            .expect("log file");
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start perfpeer serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let (control_port, data_port) = parse_banner(&first).unwrap_or_else(|| {
            panic!(
                "unexpected banner {first:?}; log: {}",
                read(&dir.join("serve.log"))
            )
        });
        // Keep draining stdout so the peer never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let host = listen
            .rsplit_once(':')
            .map(|(h, _)| h)
            .unwrap_or("127.0.0.1");
        Peer {
            child,
            control: format!("{host}:{control_port}"),
            data_port,
            dir,
        }
    }

    /// The peer's log so far.
    pub fn log(&self) -> String {
        read(&self.dir.join("serve.log"))
    }

    /// Starts the peer again with the same data directory (its ports are new); for tests of
    /// what survives a restart.
    pub fn restart(mut self) -> Peer {
        self.kill();
        let dir = std::mem::replace(&mut self.dir, PathBuf::new());
        Peer::start_bin_in(&perfpeer_bin(), dir, Vec::new(), "127.0.0.1:0", "0", &[])
    }

    /// Kills the peer at once (SIGKILL).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The process id of `perfpeer serve`.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn read(path: &std::path::Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// Reads "… control and web UI on port A, data on port B …".
fn parse_banner(line: &str) -> Option<(u16, u16)> {
    let after = |key: &str| -> Option<u16> {
        let rest = &line[line.find(key)? + key.len()..];
        rest.split(|c: char| !c.is_ascii_digit())
            .next()?
            .parse()
            .ok()
    };
    Some((after("web UI on port ")?, after("data on port ")?))
}

/// Runs `perfpeer test ARGS` to completion.
pub fn perfpeer_test(args: &[&str]) -> Output {
    perfpeer_test_with(Vec::new(), args)
}

/// `bin`, run through `prefix` (e.g. `ip netns exec NS`) when there is one.
fn command_through(prefix: &[String], bin: &std::path::Path) -> Command {
    match prefix.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(bin);
            c
        }
        None => Command::new(bin),
    }
}

/// Runs `perfpeer test ARGS` through `prefix`.
pub fn perfpeer_test_with(prefix: Vec<String>, args: &[&str]) -> Output {
    let mut full = vec!["test"];
    full.extend_from_slice(args);
    perfpeer_with(prefix, &full)
}

/// Runs `perfpeer ARGS` (any subcommand) through `prefix`, keeping its history in this test
/// run's data home.
pub fn perfpeer_with(prefix: Vec<String>, args: &[&str]) -> Output {
    perfpeer_command(prefix, args)
        .output()
        .expect("run perfpeer")
}

/// `perfpeer ARGS` through `prefix`, not yet started (to signal it while it runs).
pub fn perfpeer_command(prefix: Vec<String>, args: &[&str]) -> Command {
    let bin = perfpeer_bin();
    let mut cmd = command_through(&prefix, &bin);
    cmd.env("XDG_DATA_HOME", data_home()).args(args);
    cmd
}

/// Runs a test with `-J` and returns its JSON; panics with both outputs if it failed.
pub fn perfpeer_json(args: &[&str]) -> serde_json::Value {
    let mut full = args.to_vec();
    full.push("-J");
    let out = perfpeer_test(&full);
    json_of(&out, args)
}

/// The JSON of a finished `-J` run; panics with its output if the run failed.
pub fn json_of(out: &Output, args: &[&str]) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "perfpeer test {args:?} failed: {}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

static DATA_HOME: OnceLock<PathBuf> = OnceLock::new();

/// Where the perfpeer processes of this test run keep their history (not the user's own);
/// removed when the test process exits.
pub fn data_home() -> PathBuf {
    DATA_HOME
        .get_or_init(|| {
            extern "C" fn remove_data_home() {
                if let Some(dir) = DATA_HOME.get() {
                    let _ = std::fs::remove_dir_all(dir);
                }
            }
            // SAFETY: registers a plain function to run at process exit; it only removes a directory.
            unsafe {
                libc::atexit(remove_data_home);
            }
            temp_dir("xdg")
        })
        .clone()
}

/// A TCP port that was free a moment ago (and whose UDP twin was too), for stock tools that
/// cannot pick their own. It is taken below the kernel's ephemeral range, so the thousands of
/// outgoing connections other tests make (floods, fuzzing) cannot take it as their source port
/// before the tool binds it; ports are handed out in turn from a start that differs per process.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000; // up to 31999, below the default ephemeral range (32768–60999)
    static NEXT: AtomicU32 = AtomicU32::new(u32::MAX);
    let _ = NEXT.compare_exchange(
        u32::MAX,
        std::process::id().wrapping_mul(7919) % SPAN,
        Ordering::Relaxed,
        Ordering::Relaxed,
    );
    loop {
        let port = u16::try_from(LOW + NEXT.fetch_add(1, Ordering::Relaxed) % SPAN)
            .expect("LOW + SPAN stays below 65536");
        let free = ["127.0.0.1", "0.0.0.0"].iter().all(|ip| {
            std::net::TcpListener::bind((*ip, port)).is_ok()
                && std::net::UdpSocket::bind((*ip, port)).is_ok()
        }) && std::net::TcpListener::bind(("::", port)).is_ok();
        if free {
            return port;
        }
    }
}

/// Says that (part of) a test is skipped, and why, where the person running the suite sees it:
/// straight to the process's stderr, which `cargo test` does not capture (it captures only
/// `print!`/`eprint!`), so a skip never passes silently.
pub fn skip(reason: &str) {
    use std::io::Write;
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {reason}");
}

/// Whether `program` runs here; in CI (`CI` set) a missing one fails the test instead, since the
/// setup script installs it.
pub fn have(program: &str) -> bool {
    let found = Command::new(program).arg("--version").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "{program} is missing: scripts/setup.sh installs it"
        );
        skip(&format!("{program} is not installed"));
    }
    found
}

/// A child process killed (and reaped) when dropped.
pub struct Running(pub Child);

impl Running {
    /// Starts `program ARGS` with output captured to files in a temp dir; returns the handle.
    pub fn spawn(program: &std::path::Path, args: &[&str]) -> Running {
        let child = Command::new(program)
            .env("XDG_DATA_HOME", data_home())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", program.display()));
        Running(child)
    }

    /// Waits for the process (at most `limit`), returning its output; kills it on time-out.
    pub fn wait(mut self, limit: Duration) -> Output {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let child = std::mem::replace(&mut self.0, Command::new("true").spawn().expect("true"));
        child.wait_with_output().expect("wait")
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `perfpeer iperf -c 127.0.0.1 -p PORT ARGS` to its end (at most 20 s); its output.
pub fn our_iperf_client(port: u16, args: &[&str]) -> Output {
    let p = port.to_string();
    let mut all = vec!["iperf", "-c", "127.0.0.1", "-p", &p];
    all.extend_from_slice(args);
    Running::spawn(&perfpeer_bin(), &all).wait(Duration::from_secs(20))
}

/// Polls `check` every 100 ms until it is true or `limit` passes; returns whether it became true.
pub fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    check()
}

/// `u64` at a JSON pointer, or a panic naming the pointer.
pub fn u64_at(v: &serde_json::Value, pointer: &str) -> u64 {
    v.pointer(pointer)
        .and_then(|x| x.as_u64())
        .unwrap_or_else(|| panic!("no integer at {pointer} in {v}"))
}

/// `f64` at a JSON pointer, or a panic naming the pointer.
pub fn f64_at(v: &serde_json::Value, pointer: &str) -> f64 {
    v.pointer(pointer)
        .and_then(|x| x.as_f64())
        .unwrap_or_else(|| panic!("no number at {pointer} in {v}"))
}

/// Waits (at most `limit`) until something listens on TCP or UDP `port` of this machine,
/// without connecting to it (a one-shot server such as `iperf3 -s -1` would take a probe for its
/// test): reads the kernel's socket tables for a listening TCP socket (state 0A) or an
/// unconnected UDP one (state 07) on that port.
pub fn wait_listening(port: u16, limit: Duration) -> bool {
    let tables = [
        ("/proc/net/tcp", "0A"),
        ("/proc/net/tcp6", "0A"),
        ("/proc/net/udp", "07"),
        ("/proc/net/udp6", "07"),
    ];
    let listening = || {
        tables.iter().any(|&(table, wanted)| {
            std::fs::read_to_string(table).is_ok_and(|text| {
                text.lines().skip(1).any(|line| {
                    let mut fields = line.split_whitespace();
                    let local = fields.nth(1).unwrap_or("");
                    let state = fields.nth(1).unwrap_or("");
                    state == wanted
                        && local
                            .rsplit(':')
                            .next()
                            .and_then(|p| u16::from_str_radix(p, 16).ok())
                            == Some(port)
                })
            })
        })
    };
    wait_for(limit, listening)
}

/// A plain HTTP/1.0 request to the control endpoint `control` (`host:port`, also sent as the
/// `Host`); returns the status code and the body.
pub fn http_request(
    control: &str,
    method: &str,
    path: &str,
    headers: &str,
    body: &str,
) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = TcpStream::connect(control).expect("connect to the control port");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.0\r\nHost: {control}\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut bytes = Vec::new();
    let _ = s.read_to_end(&mut bytes);
    let out = String::from_utf8_lossy(&bytes);
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A TCP connection to `to` from the address `from` (the whole of 127/8 is this machine's).
/// Close-on-exec, as std's own sockets are: a test holding a flood of them must not leak them
/// into the stock tools other tests start meanwhile.
pub fn connect_from(from: [u8; 4], to: SocketAddr) -> Option<TcpStream> {
    // SAFETY: socket/bind/connect on a fresh descriptor that the returned stream owns.
    unsafe {
        use std::os::fd::FromRawFd;
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return None;
        }
        let stream = TcpStream::from_raw_fd(fd);
        let sin = |ip: [u8; 4], port: u16| libc::sockaddr_in {
            sin_family: libc::sa_family_t::try_from(libc::AF_INET).expect("AF_INET fits"),
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_be_bytes(ip).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = libc::socklen_t::try_from(std::mem::size_of::<libc::sockaddr_in>())
            .expect("sockaddr_in size fits");
        let local = sin(from, 0);
        if libc::bind(fd, (&local as *const libc::sockaddr_in).cast(), len) != 0 {
            return None;
        }
        let SocketAddr::V4(to) = to else { return None };
        let remote = sin(to.ip().octets(), to.port());
        if libc::connect(fd, (&remote as *const libc::sockaddr_in).cast(), len) != 0 {
            return None;
        }
        Some(stream)
    }
}

/// Raises this process's open-file limit to its hard limit, for a test holding many sockets.
pub fn raise_fd_limit() {
    // SAFETY: getrlimit/setrlimit on a local struct.
    unsafe {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur = lim.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

/// The Windows build of scripts/build-windows.sh (dist/perfpeer-<version>-windows-x86_64.exe)
/// and the command prefix that runs it under Debian's wine: `env WINEPREFIX=… wine64`. The wine
/// prefix (a fake Windows tree of some 700 MB) is made once and kept in
/// `$PERFPEER_WINEPREFIX`, default ~/.cache/perfpeer/wine, as the build caches are.
/// `None` (said) when the .exe or wine is missing; when scripts/test.sh built it
/// (`PERFPEER_WINDOWS=1`), a missing one fails instead.
pub fn windows_build() -> Option<(PathBuf, Vec<String>)> {
    const WINE: &str = "/usr/lib/wine/wine64";
    let required = std::env::var("PERFPEER_WINDOWS").is_ok_and(|v| v == "1");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository")
        .to_path_buf();
    let exe = root.join(format!(
        "dist/perfpeer-{}-windows-x86_64.exe",
        env!("CARGO_PKG_VERSION")
    ));
    let missing = if !exe.is_file() {
        Some(format!(
            "{} is missing (scripts/build-windows.sh)",
            exe.display()
        ))
    } else if !std::path::Path::new(WINE).exists() {
        Some(format!("{WINE} is missing (scripts/setup.sh --windows)"))
    } else {
        None
    };
    if let Some(what) = missing {
        assert!(!required, "{what}");
        skip(&what);
        return None;
    }
    let prefix_dir = std::env::var_os("PERFPEER_WINEPREFIX")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            let home = std::env::var_os("HOME").map_or_else(std::env::temp_dir, PathBuf::from);
            home.join(".cache/perfpeer/wine")
        });
    let prefix = vec![
        "env".to_string(),
        format!("WINEPREFIX={}", prefix_dir.display()),
        // No debug chatter, and no offer to install Mono or Gecko (nothing here needs them).
        "WINEDEBUG=-all".to_string(),
        "WINEDLLOVERRIDES=mscoree=;mshtml=".to_string(),
        WINE.to_string(),
    ];
    // The first run makes the prefix; once, before the tests of this binary start peers.
    static READY: std::sync::OnceLock<()> = std::sync::OnceLock::new();
    READY.get_or_init(|| {
        let out = command_through(&prefix, &exe)
            .arg("--version")
            .output()
            .expect("run the Windows build under wine");
        assert!(
            out.status.success() && String::from_utf8_lossy(&out.stdout).contains("windows"),
            "the Windows build does not start under wine: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    });
    Some((exe, prefix))
}

/// The stored result's id in `perfpeer test`'s output (its `Result page: …/r/<id>` line).
pub fn result_id_from(stdout: &str) -> String {
    let url = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Result page: "))
        .unwrap_or_else(|| panic!("no result link in: {stdout}"));
    url.rsplit('/').next().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn banner_ports() {
        let line = "perfpeer 0.1.0 serving: control and web UI on port 41234, data on port 41235 (TCP and UDP)";
        assert_eq!(parse_banner(line), Some((41234, 41235)));
        assert_eq!(parse_banner("nonsense"), None);
    }
}
