//! The pieces of the DCCP guest: Debian 12's own kernel (fetched with `apt-get download` into a
//! cache under target/, never committed), a statically linked perfpeer, a busybox initramfs
//! whose /init loads the DCCP modules and runs the tests, and qemu (TCG) with a time limit. The
//! guest prints results on its serial console as lines starting with a marker.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// Where the kernel and the static build are kept between runs.
pub fn cache() -> PathBuf {
    workspace().join("target/dccp-vm")
}

/// This test process's own folder (several test runs may share the cache at once).
pub fn scratch() -> PathBuf {
    cache().join(format!("run-{}", std::process::id()))
}

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Debian's kernel package behind the `linux-image-amd64` metapackage, extracted: returns
/// (vmlinuz, the folder with dccp.ko, dccp_ipv4.ko, dccp_ipv6.ko).
pub fn kernel() -> (PathBuf, PathBuf) {
    let depends = run(
        Command::new("apt-cache").args(["depends", "linux-image-amd64"]),
        "apt-cache depends linux-image-amd64",
    );
    let package = depends
        .lines()
        .filter_map(|l| l.trim().strip_prefix("Depends: "))
        .find(|p| p.starts_with("linux-image-") && p.ends_with("-amd64"))
        .unwrap_or_else(|| panic!("no kernel package in: {depends}"))
        .to_string();
    let version = package.trim_start_matches("linux-image-").to_string();
    let dir = cache().join(&package);
    let vmlinuz = dir.join(format!("root/boot/vmlinuz-{version}"));
    let modules = dir.join(format!("root/lib/modules/{version}/kernel/net/dccp"));
    if !vmlinuz.exists() || !modules.join("dccp_ipv6.ko").exists() {
        // Fetched into a private folder and renamed into place, so concurrent runs never see
        // half a kernel.
        let tmp = cache().join(format!("{package}.tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).expect("cache dir");
        run(
            Command::new("apt-get")
                .args(["download", &package])
                .current_dir(&tmp),
            "apt-get download (Debian's kernel package)",
        );
        let deb = std::fs::read_dir(&tmp)
            .expect("cache dir")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "deb"))
            .expect("the downloaded .deb");
        run(
            Command::new("dpkg-deb")
                .arg("-x")
                .arg(&deb)
                .arg(tmp.join("root")),
            "dpkg-deb -x",
        );
        let _ = std::fs::remove_file(deb);
        let _ = std::fs::remove_dir_all(&dir);
        if std::fs::rename(&tmp, &dir).is_err() {
            let _ = std::fs::remove_dir_all(&tmp); // another run put it in place first
        }
    }
    assert!(vmlinuz.exists(), "{} is missing", vmlinuz.display());
    (vmlinuz, modules)
}

/// perfpeer linked statically (the guest has no libraries), in its own target dir.
pub fn static_perfpeer() -> PathBuf {
    let target = cache().join("cargo");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "-q",
            "--release",
            "--target",
            "x86_64-unknown-linux-gnu",
            "-p",
            "perfpeer",
        ])
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(workspace())
        .status()
        .expect("cargo build (static perfpeer)");
    assert!(status.success(), "static build of perfpeer failed");
    target.join("x86_64-unknown-linux-gnu/release/perfpeer")
}

/// A gzip'd newc initramfs with busybox, the modules, perfpeer and `init` as /init.
pub fn initramfs(modules: &Path, perfpeer: &Path, init: &str) -> PathBuf {
    let root = scratch().join("initramfs");
    let _ = std::fs::remove_dir_all(&root);
    for d in [
        "bin", "lib/dccp", "proc", "sys", "dev", "tmp", "usr/bin", "usr/sbin", "sbin",
    ] {
        std::fs::create_dir_all(root.join(d)).expect("initramfs dir");
    }
    std::fs::copy("/bin/busybox", root.join("bin/busybox")).expect("busybox (busybox-static)");
    for m in ["dccp.ko", "dccp_ipv4.ko", "dccp_ipv6.ko"] {
        std::fs::copy(modules.join(m), root.join("lib/dccp").join(m)).expect("module");
    }
    std::fs::copy(perfpeer, root.join("perfpeer")).expect("perfpeer");
    std::fs::write(root.join("init"), init).expect("init");
    run(
        Command::new("chmod")
            .args(["755", "init", "perfpeer", "bin/busybox"])
            .current_dir(&root),
        "chmod",
    );
    let image = scratch().join("initrd.gz");
    let script = format!(
        "find . | cpio -o -H newc --quiet | gzip -1 > {}",
        image.display()
    );
    run(
        Command::new("sh").args(["-c", &script]).current_dir(&root),
        "cpio | gzip",
    );
    image
}

/// Boots the guest and returns its serial console; qemu is killed after `limit`.
pub fn boot(vmlinuz: &Path, initrd: &Path, limit: Duration) -> (String, Duration) {
    let start = Instant::now();
    let mut child = Command::new("qemu-system-x86_64")
        .args(["-accel", "tcg", "-cpu", "max", "-smp", "2", "-m", "512"])
        .arg("-kernel")
        .arg(vmlinuz)
        .arg("-initrd")
        .arg(initrd)
        .args([
            "-display",
            "none",
            "-monitor",
            "none",
            "-serial",
            "stdio",
            "-no-reboot",
        ])
        .args([
            "-nic",
            "none",
            "-append",
            "console=ttyS0 panic=-1 loglevel=4",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qemu-system-x86_64");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut console = String::new();
    while start.elapsed() < limit {
        match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(line) => {
                console.push_str(line.trim_end_matches('\r'));
                console.push('\n');
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    while let Ok(line) = rx.try_recv() {
        console.push_str(line.trim_end_matches('\r'));
        console.push('\n');
    }
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut stderr);
    }
    if !stderr.trim().is_empty() {
        console.push_str(&format!("[qemu stderr] {stderr}\n"));
    }
    (console, start.elapsed())
}
