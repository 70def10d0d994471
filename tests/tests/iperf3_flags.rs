//! The flags and output conventions an iperf3 user types and scripts read, through perfpeer
//! invoked as `iperf3` (a symlink) and against stock iperf3 3.12: `-v`, help, bad flags, `-t 0`,
//! `-i 0`, `-k`, `--cport`, `-T`, `--logfile`, `-D`, `--get-server-output` both ways, the
//! duration limit said as a limit, "iperf Done.", and concurrent tests told apart.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use perfpeer_tests::{Running, free_port, have, perfpeer_bin, u64_at, wait_for, wait_listening};

/// A directory with `iperf3` → perfpeer, removed when dropped.
struct AsIperf3 {
    dir: PathBuf,
}

impl AsIperf3 {
    fn new(name: &str) -> AsIperf3 {
        let dir = std::env::temp_dir().join(format!("perfpeer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(perfpeer_bin(), dir.join("iperf3")).unwrap();
        AsIperf3 { dir }
    }

    fn bin(&self) -> PathBuf {
        self.dir.join("iperf3")
    }

    fn run(&self, args: &[&str]) -> Output {
        Running::spawn(&self.bin(), args).wait(Duration::from_secs(30))
    }

    /// `iperf3 -c 127.0.0.1 -p PORT ARGS` (perfpeer).
    fn client(&self, port: &str, extra: &[&str]) -> Output {
        let mut args = vec!["-c", "127.0.0.1", "-p", port];
        args.extend_from_slice(extra);
        self.run(&args)
    }

    /// `iperf3 -s -p PORT ARGS` (perfpeer), listening.
    fn server(&self, extra: &[&str]) -> (Running, u16) {
        let port = free_port();
        let p = port.to_string();
        let mut args = vec!["-s", "-p", &p];
        args.extend_from_slice(extra);
        let server = Running::spawn(&self.bin(), &args);
        assert!(
            wait_listening(port, Duration::from_secs(10)),
            "iperf3 -s on {port}"
        );
        (server, port)
    }
}

impl Drop for AsIperf3 {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn both(out: &Output) -> String {
    format!("{}{}", stdout(out), String::from_utf8_lossy(&out.stderr))
}

fn stock(args: &[&str]) -> Output {
    Running::spawn(Path::new("iperf3"), args).wait(Duration::from_secs(30))
}

/// Stock `iperf3 -c 127.0.0.1 -p PORT ARGS`.
fn stock_client(port: &str, extra: &[&str]) -> Output {
    let mut args = vec!["-c", "127.0.0.1", "-p", port];
    args.extend_from_slice(extra);
    stock(&args)
}

/// The JSON an `-J` run printed.
fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", both(out)))
}

/// Stock `iperf3 -s -1` on a free port.
fn stock_server() -> (Running, u16) {
    let port = free_port();
    let server = Running::spawn(Path::new("iperf3"), &["-s", "-1", "-p", &port.to_string()]);
    assert!(
        wait_listening(port, Duration::from_secs(10)),
        "stock iperf3 -s"
    );
    (server, port)
}

#[test]
fn version_help_and_bad_flags_as_iperf3_has_them() {
    let tool = AsIperf3::new("persona");
    for flag in ["-v", "--version"] {
        let out = tool.run(&[flag]);
        assert!(out.status.success(), "{flag}: {}", both(&out));
        assert!(
            stdout(&out).starts_with("iperf 3.12"),
            "{flag}: {}",
            both(&out)
        );
    }
    let help = tool.run(&["--help"]);
    assert!(help.status.success());
    let text = stdout(&help);
    assert!(text.contains("Usage: iperf3 [OPTIONS]"), "{text}");
    assert!(!text.contains("iperf3 iperf3"), "{text}");
    for hidden in ["--token", "--rr", "--skip-rx-copy", "--fq-pacing"] {
        assert!(!text.contains(hidden), "{hidden} in the help: {text}");
    }
    // A bad flag exits 1, as iperf3 does (perfpeer's own subcommands exit 2).
    let out = tool.run(&["--bogus"]);
    assert_eq!(out.status.code(), Some(1), "{}", both(&out));
    let out = Running::spawn(&perfpeer_bin(), &["iperf3", "--bogus"]).wait(Duration::from_secs(10));
    assert_eq!(out.status.code(), Some(2), "{}", both(&out));
}

#[test]
fn stock_client_flags_our_server_serves() {
    if !have("iperf3") {
        return;
    }
    let tool = AsIperf3::new("server-flags");
    let (_server, port) = tool.server(&["--max-duration", "5"]);
    let p = port.to_string();
    // Longer than --max-duration: said as a duration limit, not "busy".
    let out = stock_client(&p, &["-t", "20"]);
    assert!(!out.status.success());
    assert!(
        both(&out).contains("test duration too long"),
        "{}",
        both(&out)
    );
    // -t 0: until the client stops (here the server's 5 s limit ends it first, and says so).
    let mut forever = Running::spawn(
        Path::new("iperf3"),
        &["-c", "127.0.0.1", "-p", &p, "-t", "0", "-b", "10M"],
    );
    std::thread::sleep(Duration::from_millis(2500));
    assert!(forever.0.try_wait().unwrap().is_none(), "-t 0 ended early");
    let out = forever.wait(Duration::from_secs(15));
    let text = both(&out);
    // The stock client's own first interval: 0.00-1.00, or 1.01 and so on on a busy machine.
    assert!(text.contains("0.00-1.0"), "-t 0 ran no interval: {text}");
    assert!(!text.contains("unable to receive parameters"), "{text}");
    assert!(text.contains("server has terminated"), "{text}");
    // --get-server-output: our server's own lines after the client's.
    let out = stock_client(&p, &["-t", "1", "--get-server-output"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}");
    let server_part = text
        .split("Server output:")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        server_part.contains("Accepted connection from 127.0.0.1"),
        "{text}"
    );
    assert!(server_part.contains("receiver"), "{text}");
    let out = stock_client(&p, &["-t", "1", "-J", "--get-server-output"]);
    let v = json(&out);
    // The server's output as the server shows it: text from a text server, as stock.
    assert!(
        v["server_output_text"]
            .as_str()
            .is_some_and(|t| t.contains("receiver")),
        "{v}"
    );
    let (_json_server, port) = tool.server(&["-J"]);
    let p = port.to_string();
    let out = stock_client(&p, &["-t", "1", "-J", "--get-server-output"]);
    let v = json(&out);
    assert!(
        u64_at(&v, "/server_output_json/end/sum_received/bytes") > 0,
        "{v}"
    );
}

#[test]
fn our_client_flags_against_a_stock_server() {
    if !have("iperf3") {
        return;
    }
    let tool = AsIperf3::new("client-flags");
    // -k blocks of -l bytes; --cport binds the data stream.
    let (_s, port) = stock_server();
    let (p, cport) = (port.to_string(), free_port());
    let c = cport.to_string();
    let out = tool.client(&p, &["-k", "100", "-l", "1000", "--cport", &c, "-J"]);
    let v = json(&out);
    assert_eq!(u64_at(&v, "/end/sum_sent/bytes"), 100_000, "{v}");
    assert_eq!(
        u64_at(&v, "/start/connected/0/local_port"),
        u64::from(cport),
        "{v}"
    );
    // -i 0: no reports during the test, one interval for all of it; "iperf Done." at the end;
    // -f K: every bitrate in KBytes/sec.
    let (_s, port) = stock_server();
    let p = port.to_string();
    let out = tool.client(&p, &["-t", "2", "-i", "0", "-f", "K"]);
    let text = stdout(&out);
    assert!(out.status.success(), "{}", both(&out));
    let interval_lines = text
        .lines()
        .filter(|l| {
            l.starts_with("[  5]")
                && !l.contains("sender")
                && !l.contains("receiver")
                && !l.contains("connected")
        })
        .count();
    assert_eq!(interval_lines, 1, "{text}");
    assert!(text.trim_end().ends_with("iperf Done."), "{text}");
    assert!(!text.contains("Service demand"), "{text}");
    let rates: Vec<&str> = text.lines().filter(|l| l.contains("/sec")).collect();
    assert!(
        rates.len() >= 3 && rates.iter().all(|l| l.contains("KBytes/sec")),
        "{text}"
    );
    // -T and --logfile: every line titled, in the file, nothing on stdout.
    let (_s, port) = stock_server();
    let p = port.to_string();
    let log = tool.dir.join("client.log");
    let out = tool.client(
        &p,
        &["-t", "1", "-T", "dut", "--logfile", log.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", both(&out));
    assert!(out.stdout.is_empty(), "{}", stdout(&out));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.lines().count() > 5 && logged.lines().all(|l| l.starts_with("dut:  ")),
        "{logged}"
    );
    // --get-server-output from a stock server, in text and in -J.
    let (_s, port) = stock_server();
    let p = port.to_string();
    let out = tool.client(&p, &["-t", "1", "--get-server-output"]);
    let text = stdout(&out);
    assert!(
        text.split("Server output:")
            .nth(1)
            .is_some_and(|s| s.contains("receiver")),
        "{text}"
    );
    let (_s, port) = stock_server();
    let p = port.to_string();
    let out = tool.client(&p, &["-t", "1", "--get-server-output", "-J"]);
    let v = json(&out);
    // The server's output as the server shows it (text from a stock server), as stock.
    assert!(
        v["server_output_text"]
            .as_str()
            .is_some_and(|t| t.contains("receiver")),
        "{v}"
    );
}

#[test]
fn a_daemon_server_serves_from_the_background() {
    if !have("iperf3") {
        return;
    }
    let tool = AsIperf3::new("daemon");
    let port = free_port();
    let p = port.to_string();
    let log = tool.dir.join("server.log");
    // -D returns at once; the server goes on in the background, its output in the log.
    let out = tool.run(&[
        "-s",
        "-D",
        "-1",
        "-p",
        &p,
        "--logfile",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", both(&out));
    assert!(wait_for(Duration::from_secs(5), || TcpStream::connect((
        "127.0.0.1",
        port
    ))
    .is_ok()));
    let out = stock_client(&p, &["-t", "1"]);
    assert!(out.status.success(), "{}", both(&out));
    // -1: it exits after its test, so nothing is left behind.
    assert!(
        wait_for(Duration::from_secs(10), || TcpStream::connect((
            "127.0.0.1",
            port
        ))
        .is_err()),
        "the daemon did not exit after its one test"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("receiver"), "{logged}");
}

#[test]
fn concurrent_tests_on_our_server_are_told_apart() {
    if !have("iperf3") {
        return;
    }
    let tool = AsIperf3::new("tagged");
    let (server, port) = tool.server(&[]);
    let p = port.to_string();
    let clients: Vec<_> = (0..2)
        .map(|_| {
            let p = p.clone();
            std::thread::spawn(move || stock_client(&p, &["-t", "2", "-b", "50M"]))
        })
        .collect();
    for c in clients {
        assert!(c.join().unwrap().status.success());
    }
    std::thread::sleep(Duration::from_millis(300));
    let out = server.wait(Duration::from_secs(1));
    let text = stdout(&out);
    // Both tests' interval lines, each prefixed with its test's number while both ran.
    for n in ["#1  ", "#2  "] {
        assert!(
            text.lines().any(|l| l.starts_with(n) && l.contains("sec")),
            "no {n:?} lines: {text}"
        );
    }
}

/// CPUs a process's threads may run on, one `Cpus_allowed_list` per thread.
fn allowed_cpus(pid: u32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("status")).ok())
        .filter_map(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                .map(|v| v.trim().to_string())
        })
        .collect()
}

#[test]
fn affinity_pins_the_client_and_asks_the_server() {
    if !have("iperf3") {
        return;
    }
    if std::thread::available_parallelism().map_or(1, std::num::NonZero::get) < 2 {
        perfpeer_tests::skip("-A n,m needs two CPUs to tell them apart");
        return;
    }
    let iperf3 = AsIperf3::new("affinity");
    let port = free_port();
    let p = port.to_string();
    let server = Running::spawn(Path::new("iperf3"), &["-s", "-p", &p]);
    assert!(wait_listening(port, Duration::from_secs(10)));
    let client = Running::spawn(
        &iperf3.bin(),
        &["-c", "127.0.0.1", "-p", &p, "-t", "3", "-A", "0,1"],
    );
    // While the test runs: every thread of our client on CPU 0; stock iperf3 3.12 pins itself
    // to the CPU the parameters asked for (1).
    let mut seen = (Vec::new(), Vec::new());
    let pinned = wait_for(Duration::from_secs(3), || {
        seen = (allowed_cpus(client.0.id()), allowed_cpus(server.0.id()));
        seen.0.len() > 1 && seen.0.iter().all(|c| c == "0") && seen.1 == ["1"]
    });
    let out = client.wait(Duration::from_secs(20));
    assert!(out.status.success(), "{}", both(&out));
    assert!(pinned, "client, server CPUs: {seen:?}");
    // A CPU the machine does not have is a usage error, iperf3's exit code.
    let bad = iperf3.client(&p, &["-t", "1", "-A", "4096"]);
    assert_eq!(bad.status.code(), Some(1), "{}", both(&bad));
    assert!(both(&bad).contains("4096"), "{}", both(&bad));
}
