//! The static DUT builds of scripts/build-dut.sh (in dist/), run under qemu-user on loopback
//! against the native peer: the DUT as the far end (TCP, UDP at a rate, reverse, `/ws` hello,
//! `/` serves the UI, a result stored and served at `/r/<id>`), the DUT as the client of a test
//! whose byte counters cross 2^32 on a 32-bit target, and the DUT binary in a chroot that holds
//! nothing but it (and qemu), `/etc/hosts`, `/etc/resolv.conf`, `/proc` and `/dev/null`.
//!
//! scripts/test.sh builds the targets it names in `PERFPEER_DUT_TARGETS` (aarch64 and mipsel),
//! and for those a missing binary or qemu fails; for any other target the test says it skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use perfpeer_shared::control::{ClientMsg, ServerMsg};
use perfpeer_tests::{Peer, TOKEN, data_home, f64_at, http_request, json_of, skip, u64_at};
use tokio_tungstenite::tungstenite::Message;

/// A DUT build and the qemu-user that runs it.
struct Dut {
    short: &'static str,
    bin: PathBuf,
    qemu: String,
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the repository")
        .to_path_buf()
}

/// The build for `short` with its qemu, or `None` (said) when it is not there; when
/// scripts/test.sh built it, a missing one fails.
fn dut(short: &'static str, qemu_arch: &str) -> Option<Dut> {
    let required = std::env::var("PERFPEER_DUT_TARGETS")
        .is_ok_and(|t| t.split_whitespace().any(|n| n == short));
    let version = env!("CARGO_PKG_VERSION");
    let bin = repo_root().join(format!("dist/perfpeer-{version}-{short}"));
    let qemu = format!("qemu-{qemu_arch}-static");
    let have_qemu = Command::new(&qemu).arg("--version").output().is_ok();
    if !bin.is_file() || !have_qemu {
        let what = if bin.is_file() {
            format!("{qemu} is missing (scripts/setup.sh --dut)")
        } else {
            format!(
                "{} is missing (scripts/build-dut.sh {short})",
                bin.display()
            )
        };
        assert!(!required, "{what}");
        skip(&what);
        return None;
    }
    Some(Dut { short, bin, qemu })
}

impl Dut {
    fn prefix(&self) -> Vec<String> {
        vec![self.qemu.clone()]
    }

    /// `perfpeer ARGS` on the DUT build, to completion.
    fn run(&self, args: &[&str]) -> Output {
        Command::new(&self.qemu)
            .arg(&self.bin)
            .args(args)
            .env("XDG_DATA_HOME", data_home())
            .output()
            .expect("run the DUT build under qemu")
    }
}

/// `perfpeer test ARGS -J` from the native build; its JSON.
fn native_json(args: &[&str]) -> serde_json::Value {
    let mut full = args.to_vec();
    full.push("-J");
    json_of(&perfpeer_tests::perfpeer_test(&full), args)
}

fn the_dut_serves(dut: &Dut) {
    let peer = Peer::start_binary(&dut.bin, dut.prefix(), &[]);
    let (status, page) = http_request(&peer.control, "GET", "/", "", "");
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("/boot.js"),
        "{}: the UI is not embedded: {page}",
        dut.short
    );
    let (status, info) = http_request(&peer.control, "GET", "/api/info", "", "");
    assert_eq!(status, 200, "{info}");

    // TCP, client → DUT, with the native peer's JSON; the far end's figures agree.
    let v = native_json(&[&peer.control, "-t", "2"]);
    assert_eq!(v["perfpeer"]["status"], "complete", "{v}");
    let sent = u64_at(&v, "/end/sum_sent/bytes");
    assert!(sent > 0);
    assert_eq!(sent, u64_at(&v, "/end/sum_received/bytes"), "{}", dut.short);
    // No radio on this path (and no netlink at all under qemu-user): no Wi-Fi in the result or
    // the peer's description, and `perfpeer wifi` says it is not measured, once.
    assert!(
        v["end"].get("wifi").is_none() && v["intervals"][0].get("wifi").is_none(),
        "{v}"
    );
    assert!(!info.contains("\"wifi\""), "{info}");
    let out = dut.run(&["wifi"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}: {err}", dut.short);
    assert!(
        err.contains("not measured") && err.lines().count() == 1 && out.stdout.is_empty(),
        "{err}"
    );

    // Reverse: the DUT sends.
    let v = native_json(&[&peer.control, "-R", "-t", "2"]);
    assert_eq!(v["perfpeer"]["status"], "complete", "{v}");
    assert!(u64_at(&v, "/end/sum_received/bytes") > 0);

    // UDP at a rate: paced to it, every datagram accounted for.
    let v = native_json(&[&peer.control, "-u", "-b", "10M", "-t", "2"]);
    let rate = f64_at(&v, "/end/sum_sent/bits_per_second");
    assert!((8e6..=10.5e6).contains(&rate), "{}: rate {rate}", dut.short);
    let received = u64_at(&v, "/end/sum_received/bytes");
    let lost = u64_at(&v, "/end/sum_received/lost_packets");
    assert_eq!(
        received / 1448 + lost,
        u64_at(&v, "/end/sum_sent/packets"),
        "{v}"
    );
    assert!(received > 0, "{v}");

    // A result kept by the DUT and served at /r/<id>.
    let out = perfpeer_tests::perfpeer_test(&[&peer.control, "-t", "1"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let id = perfpeer_tests::result_id_from(&stdout);
    let (status, page) = http_request(&peer.control, "GET", &format!("/r/{id}"), "", "");
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<svg"),
        "{}: no chart on the result page",
        dut.short
    );
    let (status, json) = http_request(&peer.control, "GET", &format!("/r/{id}.json"), "", "");
    assert_eq!(status, 200);
    assert!(json.contains("\"status\":\"complete\""), "{json}");

    // /ws: a browser's hello gets a welcome that knows the token.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let url = format!("ws://{}/ws", peer.control);
        let (mut ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        let hello = ClientMsg::Hello {
            protocol_version: perfpeer_shared::PROTOCOL_VERSION,
            token: Some(TOKEN.to_string()),
        };
        ws.send(Message::text(hello.to_json())).await.unwrap();
        // The first text message (a slow, emulated peer may ping first).
        let text = loop {
            let frame = tokio::time::timeout(Duration::from_secs(20), ws.next())
                .await
                .expect("a welcome within 20 s")
                .expect("open")
                .expect("no WebSocket error");
            if let Message::Text(text) = frame {
                break text;
            }
        };
        match ServerMsg::parse(text.as_str()).unwrap() {
            ServerMsg::Welcome { authorized, .. } => assert!(authorized),
            other => panic!("expected welcome, got {other:?}"),
        }
    });
}

/// The DUT as the client: 5 GiB each way, so every byte counter on the 32-bit side passes 2^32
/// (a 32-bit counter would say 1 GiB); both ends must agree to the byte.
fn counters_cross_four_gib(dut: &Dut) {
    let far = Peer::start(&[]);
    let want: u64 = 5 << 30;
    for reverse in [false, true] {
        let mut args = vec!["test", far.control.as_str(), "-n", "5G", "-J"];
        if reverse {
            args.push("-R");
        }
        let started = Instant::now();
        let out = dut.run(&args);
        let v = json_of(&out, &args);
        let sent = u64_at(&v, "/end/sum_sent/bytes");
        let received = u64_at(&v, "/end/sum_received/bytes");
        assert_eq!(sent, want, "{} reverse={reverse}: {v}", dut.short);
        assert_eq!(received, want, "{} reverse={reverse}", dut.short);
        eprintln!(
            "{}: 5 GiB {} in {:.1} s under qemu",
            dut.short,
            if reverse { "received" } else { "sent" },
            started.elapsed().as_secs_f64()
        );
    }
}

fn suite(short: &'static str, qemu_arch: &str) {
    let Some(dut) = dut(short, qemu_arch) else {
        return;
    };
    let out = dut.run(&["--version"]);
    let version = String::from_utf8_lossy(&out.stdout);
    assert!(
        version.contains("static, builtin resolver") && version.contains("web UI embedded"),
        "{version}"
    );
    // Linked against musl, OpenWrt's C library (static glibc is 600 KB larger).
    assert!(version.contains("-linux-musl"), "{version}");
    // MIPS routers have no FPU and OpenWrt's kernels do not emulate one: soft float only.
    if short.starts_with("mips") {
        let abi = Command::new("readelf")
            .arg("-A")
            .arg(&dut.bin)
            .output()
            .unwrap();
        let abi = String::from_utf8_lossy(&abi.stdout);
        assert!(abi.contains("FP ABI: Soft float"), "{short}: {abi}");
    }
    keeps_its_size_budget(&dut);
    the_dut_serves(&dut);
    counters_cross_four_gib(&dut);
}

/// docs/dut.md's budgets: at most 4 MB stripped (a router's flash), 1.5 MB compressed with
/// `xz -9` (as a firmware image packs it). New code on the DUT earns its bytes: a change that
/// goes over fails here. Every build is under both since the UI is embedded as LZMA
/// (1 477 672 B of xz for mipsel on 2026-12-06; docs/benchmarks.md, "The UI embedded as LZMA").
fn keeps_its_size_budget(dut: &Dut) {
    let stripped = std::fs::metadata(&dut.bin).unwrap().len();
    let out = Command::new("sh")
        .arg("-c")
        .arg("xz -9 -c \"$0\" | wc -c")
        .arg(&dut.bin)
        .output()
        .expect("xz (scripts/setup.sh --dut installs xz-utils)");
    let xz: u64 = String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("xz: {out:?}"));
    println!("{}: {stripped} B stripped, {xz} B xz -9", dut.short);
    assert!(
        stripped <= 4_000_000,
        "{}: {stripped} B stripped",
        dut.short
    );
    let xz_limit = 1_500_000;
    assert!(
        xz <= xz_limit,
        "{}: {xz} B xz -9, over {xz_limit}",
        dut.short
    );
}

#[test]
fn aarch64_build_under_qemu() {
    suite("aarch64", "aarch64");
}

#[test]
fn mipsel_build_under_qemu() {
    suite("mipsel", "mipsel");
}

#[test]
fn mips_build_under_qemu() {
    suite("mips", "mips");
}

#[test]
fn armv7_build_under_qemu() {
    suite("armv7", "arm");
}

/// A directory to chroot into, holding only what the issue allows; unmounted and removed on
/// drop.
struct Jail {
    root: PathBuf,
}

impl Jail {
    fn new(files: &[(&Path, &str)], hosts: &str, resolv: &str) -> Result<Jail, String> {
        let root = std::env::temp_dir().join(format!("perfpeer-jail-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let jail = Jail { root };
        let r = &jail.root;
        for dir in ["etc", "proc", "dev"] {
            std::fs::create_dir_all(r.join(dir)).map_err(|e| e.to_string())?;
        }
        for (from, to) in files {
            std::fs::copy(from, r.join(to)).map_err(|e| format!("copy {}: {e}", from.display()))?;
        }
        std::fs::write(r.join("etc/hosts"), hosts).map_err(|e| e.to_string())?;
        std::fs::write(r.join("etc/resolv.conf"), resolv).map_err(|e| e.to_string())?;
        let ok = |c: &mut Command| c.status().is_ok_and(|s| s.success());
        if !ok(Command::new("mount")
            .args(["-t", "proc", "proc"])
            .arg(r.join("proc")))
        {
            return Err("cannot mount /proc in the jail".into());
        }
        if !ok(Command::new("mknod")
            .arg(r.join("dev/null"))
            .args(["c", "1", "3"]))
        {
            return Err("cannot make /dev/null in the jail".into());
        }
        Ok(jail)
    }

    /// The files in the jail, as `find` lists them (for the failure message).
    fn listing(&self) -> String {
        let out = Command::new("find")
            .arg(&self.root)
            .args(["-maxdepth", "2", "-not", "-path", "*/proc/*"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
        out.unwrap_or_default()
    }
}

impl Drop for Jail {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.root.join("proc"))
            .status();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// A DNS server on 127.0.0.254:53 for the jail's resolv.conf, answering `dnspc.lan` with
/// 127.0.0.1 and NXDOMAIN otherwise, until the returned flag is set.
fn dns_server() -> Option<(
    std::sync::Arc<std::sync::atomic::AtomicBool>,
    std::thread::JoinHandle<()>,
)> {
    let sock = std::net::UdpSocket::bind("127.0.0.254:53").ok()?;
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .ok()?;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let task = std::thread::spawn(move || {
        let mut buf = [0u8; 512];
        while !stop2.load(std::sync::atomic::Ordering::Relaxed) {
            let Ok((n, from)) = sock.recv_from(&mut buf) else {
                continue;
            };
            if n < 12 {
                continue;
            }
            let mut r = buf[..n].to_vec();
            r[2] = 0x81;
            let wanted = [
                5, b'd', b'n', b's', b'p', b'c', 3, b'l', b'a', b'n', 0, 0, 1,
            ];
            if buf[12..n].starts_with(&wanted) {
                r[3] = 0x80;
                r[7] = 1;
                r.extend_from_slice(&[0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 9, 0, 4, 127, 0, 0, 1]);
            } else {
                r[3] = 0x83;
            }
            let _ = sock.send_to(&r, from);
        }
    });
    Some((stop, task))
}

/// The DUT build with nothing else on the system: it starts, reads /proc, serves its UI, finds
/// a name in /etc/hosts and one through the DNS server of /etc/resolv.conf, and refuses a
/// name cleanly when no DNS server answers.
#[test]
fn a_dut_build_runs_in_an_empty_chroot() {
    // x86_64 runs natively when it was built; otherwise mipsel runs with its static qemu.
    let version = env!("CARGO_PKG_VERSION");
    let native = repo_root().join(format!("dist/perfpeer-{version}-x86_64"));
    let (files, run): (Vec<(PathBuf, &str)>, Vec<String>) = if native.is_file() {
        (vec![(native, "perfpeer")], vec!["/perfpeer".into()])
    } else {
        let Some(dut) = dut("mipsel", "mipsel") else {
            return;
        };
        let qemu = String::from_utf8_lossy(
            &Command::new("sh")
                .args(["-c", &format!("command -v {}", dut.qemu)])
                .output()
                .unwrap()
                .stdout,
        )
        .trim()
        .to_string();
        (
            vec![(dut.bin, "perfpeer"), (PathBuf::from(qemu), "qemu")],
            vec!["/qemu".into(), "/perfpeer".into()],
        )
    };
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        skip("chroot, mount and mknod need root");
        return;
    }
    let file_refs: Vec<(&Path, &str)> = files.iter().map(|(p, n)| (p.as_path(), *n)).collect();
    let jail = Jail::new(
        &file_refs,
        "127.0.0.1 localhost\n127.0.0.1 thepc\n",
        "search lan\nnameserver 127.0.0.254\noptions timeout:2 attempts:1\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // An empty environment inside, so chroot is named by its full path.
    let chroot = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("chroot"))
        .find(|p| p.is_file())
        .expect("chroot (coreutils) on PATH");
    let in_jail = |args: &[&str]| -> Output {
        let mut c = Command::new(&chroot);
        c.arg(&jail.root).args(&run).args(args).env_clear();
        c.output().expect("run in the jail")
    };

    let mut prefix = vec!["chroot".to_string(), jail.root.display().to_string()];
    prefix.extend(run[..run.len() - 1].iter().cloned());
    let bin = PathBuf::from(run.last().unwrap());
    let peer = Peer::start_binary(&bin, prefix, &[]);
    let (status, page) = http_request(&peer.control, "GET", "/", "", "");
    assert_eq!(status, 200, "{page}\n{}", jail.listing());
    assert!(page.contains("/boot.js"), "{page}");
    let (status, info) = http_request(&peer.control, "GET", "/api/info", "", "");
    assert_eq!(status, 200, "{info}");
    // The congestion controls come from /proc/sys.
    assert!(
        info.contains("cubic") || info.contains("reno"),
        "/proc was not read: {info}"
    );
    let port = peer.control.rsplit_once(':').unwrap().1.to_string();

    // A name from /etc/hosts.
    let target = format!("thepc:{port}");
    let out = in_jail(&["test", &target, "-t", "1", "-J"]);
    let v = json_of(&out, &["test", &target]);
    assert!(u64_at(&v, "/end/sum_received/bytes") > 0);

    // No DNS server: a clear refusal, at once (the datagram is refused on loopback).
    if std::net::UdpSocket::bind("127.0.0.254:53").is_err() {
        skip(
            "something listens on 127.0.0.254:53 or port 53 on all addresses: the DNS parts are not run",
        );
        return;
    }
    let started = Instant::now();
    let out = in_jail(&["test", "nosuch", "-t", "1"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no DNS server answered"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // A name through DNS, with resolv.conf's search domain.
    let Some((stop, task)) = dns_server() else {
        skip("127.0.0.254:53 is taken: the DNS part is not run");
        return;
    };
    let target = format!("dnspc:{port}");
    let out = in_jail(&["test", &target, "-t", "1", "-J"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = task.join();
    let v = json_of(&out, &["test", &target]);
    assert!(u64_at(&v, "/end/sum_received/bytes") > 0);
}
