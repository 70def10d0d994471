//! The pieces of a Linux guest for tests that need a kernel this host lacks (DCCP, Wi-Fi):
//! Debian 12's own kernel and packages (fetched with `apt-get download` into a cache under
//! target/, never committed), static builds of perfpeer and the hwsim medium, a busybox
//! initramfs, and qemu (TCG) with a time limit, one guest at a time. The guest prints results
//! on its serial console as blocks of lines starting with a marker, which [`parse`] reads back.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError, mpsc};
use std::time::{Duration, Instant};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace")
        .to_path_buf()
}

/// Where the kernel, the packages and the static builds are kept between runs (shared by the
/// DCCP and the Wi-Fi guest; named after the first).
pub fn cache() -> PathBuf {
    workspace().join("target/dccp-vm")
}

/// This test's own folder (several test runs, and both guests of one run, share the cache).
pub fn scratch(tag: &str) -> PathBuf {
    cache().join(format!("run-{}-{tag}", std::process::id()))
}

/// Whether the host has what a guest needs (in CI a missing piece fails: setup.sh installs it).
pub fn host_ready() -> bool {
    for tool in ["qemu-system-x86_64", "cpio", "apt-get"] {
        if !perfpeer_tests::have(tool) {
            return false;
        }
    }
    if !Path::new("/bin/busybox").exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "busybox-static is missing: scripts/setup.sh installs it"
        );
        perfpeer_tests::skip("/bin/busybox (busybox-static) is not installed");
        return false;
    }
    true
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

/// Debian packages fetched with `apt-get download` and extracted together into
/// `cache()/name/root`; returns that root. Fetched once: into a private folder renamed into
/// place, so concurrent runs never see half of it.
pub fn debs(name: &str, packages: &[&str]) -> PathBuf {
    let dir = cache().join(name);
    if !dir.join("root").is_dir() {
        let tmp = cache().join(format!("{name}.tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).expect("cache dir");
        run(
            Command::new("apt-get")
                .arg("download")
                .args(packages)
                .current_dir(&tmp),
            &format!("apt-get download {}", packages.join(" ")),
        );
        let downloaded: Vec<PathBuf> = std::fs::read_dir(&tmp)
            .expect("cache dir")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "deb"))
            .collect();
        assert_eq!(downloaded.len(), packages.len(), "{downloaded:?}");
        for deb in downloaded {
            run(
                Command::new("dpkg-deb")
                    .arg("-x")
                    .arg(&deb)
                    .arg(tmp.join("root")),
                "dpkg-deb -x",
            );
            let _ = std::fs::remove_file(deb);
        }
        let _ = std::fs::remove_dir_all(&dir);
        if std::fs::rename(&tmp, &dir).is_err() {
            let _ = std::fs::remove_dir_all(&tmp); // another run put it in place first
        }
    }
    dir.join("root")
}

/// Debian's kernel, extracted: the image and the folder of its modules
/// (`lib/modules/<version>/kernel`).
pub struct Kernel {
    /// `boot/vmlinuz-<version>`.
    pub vmlinuz: PathBuf,
    /// `lib/modules/<version>/kernel`, e.g. with `net/dccp/dccp.ko`.
    pub modules: PathBuf,
}

/// The kernel package behind the `linux-image-amd64` metapackage (its ABI number changes with
/// Debian's updates, so it is resolved at test time).
pub fn kernel() -> Kernel {
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
    let root = debs(&package, &[&package]);
    let kernel = Kernel {
        vmlinuz: root.join(format!("boot/vmlinuz-{version}")),
        modules: root.join(format!("lib/modules/{version}/kernel")),
    };
    assert!(
        kernel.vmlinuz.exists(),
        "{} is missing",
        kernel.vmlinuz.display()
    );
    kernel
}

/// The statically linked programs a guest runs (it has no libraries of its own).
pub struct Static {
    /// perfpeer.
    pub perfpeer: PathBuf,
    /// The mac80211_hwsim medium (`tests/src/bin/hwsim_medium.rs`).
    pub medium: PathBuf,
}

/// Builds perfpeer and the hwsim medium statically in one cargo run (one feature set, so either
/// guest finds the other's build up to date), in the cache's own target dir.
pub fn static_builds() -> Static {
    let target = cache().join("cargo");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args([
            "build",
            "-q",
            "--release",
            "--target",
            "x86_64-unknown-linux-gnu",
        ])
        .args(["-p", "perfpeer", "-p", "perfpeer-tests"])
        .args(["--bin", "perfpeer", "--bin", "hwsim_medium"])
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(workspace())
        .status()
        .expect("cargo build (static perfpeer and hwsim_medium)");
    assert!(status.success(), "static build of perfpeer failed");
    let bin = target.join("x86_64-unknown-linux-gnu/release");
    Static {
        perfpeer: bin.join("perfpeer"),
        medium: bin.join("hwsim_medium"),
    }
}

/// A busybox initramfs being filled: files (or symlinks) at chosen paths, then `/init`.
pub struct Initramfs {
    root: PathBuf,
    image: PathBuf,
}

impl Initramfs {
    /// An image in `scratch(tag)` with busybox and the folders `/init` needs.
    pub fn new(tag: &str) -> Initramfs {
        let root = scratch(tag).join("initramfs");
        let _ = std::fs::remove_dir_all(&root);
        for d in [
            "bin", "proc", "sys", "dev", "tmp", "run", "usr/bin", "usr/sbin", "sbin",
        ] {
            std::fs::create_dir_all(root.join(d)).expect("initramfs dir");
        }
        let mut image = Initramfs {
            image: scratch(tag).join("initrd.gz"),
            root,
        };
        image.add(Path::new("/bin/busybox"), "bin/busybox");
        image
    }

    /// Copies `src` to `dest` (relative to the image's root), keeping its mode; a symlink is
    /// made again as a symlink with the same target.
    pub fn add(&mut self, src: &Path, dest: &str) -> &mut Self {
        let to = self.root.join(dest);
        std::fs::create_dir_all(to.parent().expect("a file's folder")).expect("initramfs dir");
        let meta = src
            .symlink_metadata()
            .unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(src).expect("symlink");
            let _ = std::fs::remove_file(&to);
            std::os::unix::fs::symlink(target, &to).expect("symlink in the initramfs");
        } else {
            std::fs::copy(src, &to).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        }
        self
    }

    /// Writes `init` as /init and packs the image (newc cpio, gzip -1); returns its path.
    pub fn build(self, init: &str) -> PathBuf {
        std::fs::write(self.root.join("init"), init).expect("init");
        run(
            Command::new("chmod")
                .args(["755", "init", "bin/busybox"])
                .current_dir(&self.root),
            "chmod",
        );
        let script = format!(
            "find . | cpio -o -H newc --quiet | gzip -1 > {}",
            self.image.display()
        );
        run(
            Command::new("sh")
                .args(["-c", &script])
                .current_dir(&self.root),
            "cpio | gzip",
        );
        self.image
    }
}

/// The start of every `/init`: busybox's applets, the kernel's file systems, quiet kernel
/// messages (printk on the serial console slows TCG guests to a crawl) and a watchdog that
/// powers off after `watchdog_s`. Then `r NAME LIMIT_S COMMAND…` runs a command with a time
/// limit and prints its exit code, stdout and stderr as a block that [`parse`] reads.
pub fn init_prologue(watchdog_s: u64) -> String {
    format!(
        "#!/bin/busybox sh\n\
         /bin/busybox --install -s\n\
         mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev 2>/dev/null\n\
         dmesg -n 1\n\
         ( sleep {watchdog_s}; echo 'PPVM watchdog'; poweroff -f ) &\n\
         ip link set lo up\n\
         r() {{ name=$1; limit=$2; shift 2; timeout $limit \"$@\" >/tmp/out 2>/tmp/err; rc=$?; \
         echo \"PPVM-BEGIN $name $rc\"; sed 's/^/PPVM| /' /tmp/out; sed 's/^/PPVM! /' /tmp/err; \
         echo \"PPVM-END $name\"; }}\n"
    )
}

/// One guest at a time on this machine (2 shared cores; TCG timings suffer from a second).
static ONE_GUEST: Mutex<()> = Mutex::new(());

/// Boots the guest and returns its serial console and how long it ran; qemu is killed after
/// `limit` (counted from its start, after any other guest of this process has finished).
pub fn boot(vmlinuz: &Path, initrd: &Path, limit: Duration) -> (String, Duration) {
    let _one = ONE_GUEST.lock().unwrap_or_else(PoisonError::into_inner);
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

/// One command run in the guest by `r`: exit status, stdout, stderr.
pub struct Run {
    /// Its exit code (124 when `timeout` stopped it).
    pub rc: i32,
    /// Its stdout.
    pub out: String,
    /// Its stderr.
    pub err: String,
}

impl Run {
    /// Its stdout as JSON; panics with both outputs if it is not.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.out)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.out, self.err))
    }
}

/// The blocks of a guest's console, by name.
pub fn parse(console: &str) -> HashMap<String, Run> {
    let mut runs = HashMap::new();
    let mut current: Option<(String, Run)> = None;
    for line in console.lines() {
        if let Some(rest) = line.strip_prefix("PPVM-BEGIN ") {
            let (name, rc) = rest.split_once(' ').unwrap_or((rest, "-1"));
            let run = Run {
                rc: rc.trim().parse().unwrap_or(-1),
                out: String::new(),
                err: String::new(),
            };
            current = Some((name.to_string(), run));
        } else if line.starts_with("PPVM-END ") {
            if let Some((name, run)) = current.take() {
                runs.insert(name, run);
            }
        } else if let Some((_, run)) = current.as_mut() {
            if let Some(t) = line.strip_prefix("PPVM| ").or(line.strip_prefix("PPVM|")) {
                run.out += t;
                run.out.push('\n');
            } else if let Some(t) = line.strip_prefix("PPVM! ").or(line.strip_prefix("PPVM!")) {
                run.err += t;
                run.err.push('\n');
            }
        }
    }
    runs
}

/// The console's marker lines only (for failure messages).
pub fn markers(console: &str) -> String {
    console
        .lines()
        .filter(|l| l.starts_with("PPVM"))
        .collect::<Vec<_>>()
        .join("\n")
}
