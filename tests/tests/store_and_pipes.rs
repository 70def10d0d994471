//! The history's disk and the CLI's stdout as a user would break them: `| head` on every
//! command that prints (a server keeps serving), a second reader of a live peer's history, a
//! data directory that cannot be written, and one whose disk is full.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use perfpeer_tests::{Peer, Running, TOKEN, perfpeer_bin, perfpeer_test, wait_for};

/// Runs `perfpeer ARGS` with stdout to a pipe that is closed after its first `lines` lines.
fn spawn_closing_after(args: &[&str], lines: usize) -> Child {
    let mut child = Command::new(perfpeer_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    for _ in 0..lines {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
    }
    drop(reader);
    child
}

fn stderr_of(child: Child) -> (Option<i32>, String) {
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_ends_output_quietly_and_servers_keep_serving() {
    let peer = Peer::start(&[]);
    for _ in 0..3 {
        assert!(perfpeer_test(&[&peer.control, "-n", "1M"]).status.success());
    }
    let dir = peer.dir.to_str().unwrap().to_string();
    for _ in 0..10 {
        let child = spawn_closing_after(&["results", "list", "--data-dir", &dir], 1);
        let (code, err) = stderr_of(child);
        assert_eq!(code, Some(0), "{err}");
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{err}"
        );
    }

    // A peer whose stdout is closed after its first line keeps serving.
    let port = perfpeer_tests::free_port().to_string();
    let listen = format!("127.0.0.1:{port}");
    let data_dir = scratch("head-serve");
    let args = serve_args(&listen, &data_dir);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut server = spawn_closing_after(&args, 1);
    for _ in 0..2 {
        let out = perfpeer_test(&[&listen, "-t", "1"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(matches!(server.try_wait(), Ok(None)), "the peer died");
    let _ = server.kill();
    let _ = server.wait();

    // perfpeer iperf3 -s | head -3: tests after the pipe closed still complete.
    let port = perfpeer_tests::free_port().to_string();
    let mut iperf3 = spawn_closing_after(&["iperf3", "-s", "-p", &port], 3);
    for _ in 0..2 {
        let out = Command::new(perfpeer_bin())
            .args(["iperf3", "-c", "127.0.0.1", "-p", &port, "-t", "1"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(
        matches!(iperf3.try_wait(), Ok(None)),
        "the iperf3 server died"
    );
    let _ = iperf3.kill();
    let _ = iperf3.wait();
    let _ = std::fs::remove_dir_all(data_dir);
}

#[test]
fn reading_a_live_peers_history_does_not_abort_its_test() {
    let peer = Peer::start(&[]);
    let mut test = Command::new(perfpeer_bin())
        .args(["test", &peer.control, "-t", "4"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_for(Duration::from_secs(5), || peer
        .log()
        .contains("test begins")));
    let dir = peer.dir.to_str().unwrap().to_string();
    for _ in 0..2 {
        let out = Command::new(perfpeer_bin())
            .args(["results", "list", "--data-dir", &dir])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(!text.contains("aborted"), "{text}");
        assert!(text.contains("running"), "{text}");
    }
    assert!(test.wait().unwrap().success());
    let out = Command::new(perfpeer_bin())
        .args(["results", "list", "--data-dir", &dir])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("aborted") && text.contains("complete"),
        "{text}"
    );
}

fn scratch(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("perfpeer-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A tmpfs of `size` mounted at a fresh directory, unmounted on drop.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// `None` (said on stderr) when this process may not mount: not root.
    fn mount(tag: &str, size: &str) -> Option<Tmpfs> {
        if !is_root() {
            perfpeer_tests::skip("mounting a tmpfs needs root");
            return None;
        }
        let dir = scratch(tag);
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount a tmpfs");
        Some(Tmpfs(dir))
    }

    fn remount_read_only(&self) {
        let ok = Command::new("mount")
            .args(["-o", "remount,ro"])
            .arg(&self.0)
            .status()
            .unwrap()
            .success();
        assert!(ok, "remount read-only");
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn api(control: &str, path: &str) -> (u16, String) {
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    perfpeer_tests::http_request(control, "GET", path, &auth, "")
}

/// `perfpeer serve` arguments for a peer on `listen` keeping its history in `data_dir`.
fn serve_args(listen: &str, data_dir: &Path) -> Vec<String> {
    [
        "serve",
        "--listen",
        listen,
        "--data-port",
        "0",
        "--token",
        TOKEN,
        "--data-dir",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([data_dir.display().to_string()])
    .collect()
}

/// Starts `perfpeer serve` on `data_dir` (a directory of the test's, not the harness's).
fn serve_on(data_dir: &Path) -> (Running, String) {
    let port = perfpeer_tests::free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut child = Command::new(perfpeer_bin())
        .args(serve_args(&listen, data_dir))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("serving"), "{first}");
    (Running(child), listen)
}

#[test]
fn a_read_only_data_dir_keeps_its_history_readable() {
    let Some(fs) = Tmpfs::mount("ro-store", "16m") else {
        return;
    };
    {
        let (_peer, listen) = serve_on(fs.path());
        assert!(perfpeer_test(&[&listen, "-n", "1M"]).status.success());
    }
    fs.remount_read_only();
    let out = Command::new(perfpeer_bin())
        .args(["results", "list", "--data-dir"])
        .arg(fs.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("complete"), "{text}");
    let (_peer, listen) = serve_on(fs.path());
    let (status, body) = api(&listen, "/api/results");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("complete"), "{body}");
    let (_, info) = api(&listen, "/api/info");
    assert!(info.contains("store_problem"), "{info}");
}

#[test]
fn a_full_disk_is_said_in_the_peer_info_and_the_peer_serves_on() {
    let Some(fs) = Tmpfs::mount("full-store", "1m") else {
        return;
    };
    let (mut peer, listen) = serve_on(fs.path());
    let (_, info) = api(&listen, "/api/info");
    assert!(!info.contains("store_problem"), "{info}");
    // Fill the disk, then test: the results cannot be kept, the tests still run.
    let _ = std::fs::write(fs.path().join("filler"), vec![0u8; 2 << 20]);
    for _ in 0..3 {
        let out = perfpeer_test(&[&listen, "-t", "1"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (_, info) = api(&listen, "/api/info");
    assert!(info.contains("store_problem"), "{info}");
    // Said as what it is (it once read "FOREIGN KEY constraint failed").
    assert!(info.contains("disk full"), "{info}");
    assert!(matches!(peer.0.try_wait(), Ok(None)));
    // Room again: the next kept result clears the problem.
    std::fs::remove_file(fs.path().join("filler")).unwrap();
    assert!(perfpeer_test(&[&listen, "-t", "1"]).status.success());
    let (_, info) = api(&listen, "/api/info");
    assert!(!info.contains("store_problem"), "{info}");
}
