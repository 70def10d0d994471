//! Wi-Fi link statistics against a real mac80211 stack: boots Debian 12's kernel under qemu
//! (TCG) with two mac80211_hwsim radios, Debian's hostapd and iw, an AP in the initial network
//! namespace and a station in a second one (docs: shared/docs/wifi-vm.md), and runs
//! `perfpeer test` across the air with the peer on either side, a signal step, and a lossy
//! medium (`hwsim_medium`); perfpeer's per-interval and end Wi-Fi figures are held against
//! `iw` and against what was done to the link. It also captures nl80211's answers as
//! fixtures for the codec (`PERFPEER_CAPTURE_NL80211=1` writes proto/fixtures/nl80211/).

mod capture;
mod checks;
mod iw;
mod script;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use crate::dccp_vm::guest;
use guest::Run;

/// Whole-VM limit on the host (the guest's own watchdog powers off sooner).
const QEMU_LIMIT: Duration = Duration::from_secs(300);
/// The guest's watchdog, seconds.
const GUEST_WATCHDOG: u64 = 260;

/// Debian 12's hostapd and iw with every library they load (`readelf -d`), glibc included:
/// the guest uses none of the host's copies.
const USERLAND: &[&str] = &[
    "hostapd",
    "iw",
    "libnl-3-200",
    "libnl-genl-3-200",
    "libnl-route-3-200",
    "libssl3",
    "libc6",
];

/// Every `name.ko` under `dir`, by name.
fn find_modules(dir: &std::path::Path, found: &mut HashMap<String, PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("modules dir")
        .filter_map(Result::ok)
    {
        let path = entry.path();
        if path.is_dir() {
            find_modules(&path, found);
        } else if let Some(name) = path.file_name().and_then(|n| n.to_str())
            && let Some(module) = name.strip_suffix(".ko")
        {
            found.insert(module.to_string(), path.clone());
        }
    }
}

/// The initramfs: busybox, the Wi-Fi modules, hostapd, iw and their libraries with the
/// dynamic loader, the static perfpeer and medium, and `/init`.
fn image() -> (PathBuf, PathBuf) {
    let kernel = guest::kernel();
    let builds = guest::static_builds();
    let userland = guest::debs("wifi-userland", USERLAND);
    let mut image = guest::Initramfs::new("wifi");
    let mut modules = HashMap::new();
    find_modules(&kernel.modules, &mut modules);
    for m in script::MODULES {
        let path = modules
            .get(*m)
            .unwrap_or_else(|| panic!("{m}.ko is not in {}", kernel.modules.display()));
        image.add(path, &format!("lib/wifi/{m}.ko"));
    }
    for bin in ["usr/sbin/hostapd", "sbin/iw", "lib64/ld-linux-x86-64.so.2"] {
        image.add(&userland.join(bin), bin);
    }
    for dir in ["lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu"] {
        for entry in std::fs::read_dir(userland.join(dir))
            .expect("libs")
            .filter_map(Result::ok)
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.contains(".so") && !entry.path().is_dir() {
                image.add(&entry.path(), &format!("{dir}/{name}"));
            }
        }
    }
    image.add(&builds.perfpeer, "perfpeer");
    image.add(&builds.medium, "hwsim_medium");
    (kernel.vmlinuz, image.build(&script::init(GUEST_WATCHDOG)))
}

/// Builds and boots the guest; returns its serial console and how long it ran.
fn run_guest() -> (String, Duration) {
    let (vmlinuz, initrd) = image();
    let (console, took) = guest::boot(&vmlinuz, &initrd, QEMU_LIMIT);
    let _ = std::fs::write(guest::cache().join("wifi-console.log"), &console);
    let _ = std::fs::remove_dir_all(guest::scratch("wifi"));
    (console, took)
}

/// A block of the console, or a panic with every marker line.
fn block<'a>(runs: &'a HashMap<String, Run>, console: &str, name: &str) -> &'a Run {
    runs.get(name)
        .unwrap_or_else(|| panic!("no block {name}:\n{}", guest::markers(console)))
}

/// Both sides' station dumps read after `name`.
fn iw_after(runs: &HashMap<String, Run>, console: &str, name: &str) -> checks::IwPair {
    let side = |s: &str| {
        let r = block(runs, console, &format!("{name}.iw_{s}"));
        assert_eq!(r.rc, 0, "{name}.iw_{s}: {}", r.err);
        iw::station(&r.out, &format!("{name}.iw_{s}"))
    };
    (side("ap"), side("sta"))
}

/// The guest came up: modules, AP, association, pings both ways; iw's view of it.
fn check_link(console: &str, runs: &HashMap<String, Run>) -> Vec<String> {
    let markers = || guest::markers(console);
    assert!(
        console.contains("PPVM boot 6."),
        "the guest did not boot:\n{console}"
    );
    assert!(
        !console.contains("PPVM insmod"),
        "a module did not load:\n{}",
        markers()
    );
    assert!(
        console.contains("PPVM ap-enabled"),
        "hostapd did not start:\n{}",
        markers()
    );
    let link = block(runs, console, "link");
    assert!(
        link.out.contains("Connected to 02:00:00:00:00:00")
            && link.out.contains("SSID: perfpeer-hwsim")
            && link.out.contains("freq: 2437"),
        "the station did not associate:\n{}",
        markers()
    );
    for ping in ["ping_sta", "ping_ap"] {
        let r = block(runs, console, ping);
        assert_eq!(r.rc, 0, "{ping}: {}{}", r.out, r.err);
    }
    assert!(
        console.contains("PPVM done"),
        "the guest did not finish (watchdog?):\n{}",
        markers()
    );
    assert!(block(runs, console, "info_ap").out.contains("type AP"));
    let (ap, sta) = iw_after(runs, console, "assoc");
    let ready = console
        .lines()
        .find_map(|l| l.strip_prefix("PPVM ready "))
        .unwrap_or("?");
    vec![format!(
        "associated, pings through; ready at guest uptime {ready} s; AP hears {} dBm, station {} dBm",
        ap.signal.unwrap_or_default(),
        sta.signal.unwrap_or_default()
    )]
}

/// The medium's closing counts: frames, delivered, attempts, failed, kernel errors.
fn medium_counts(name: &str, err: &str) -> (BTreeMap<&'static str, u64>, String) {
    let line = err
        .lines()
        .find(|l| l.contains(" frames, "))
        .unwrap_or_else(|| panic!("{name}: the medium printed no summary:\n{err}"));
    let words: Vec<&str> = line
        .split([' ', ',', ';'])
        .filter(|w| !w.is_empty())
        .collect();
    let mut counts = BTreeMap::new();
    for (i, w) in words.iter().enumerate().skip(1) {
        let key = match *w {
            "frames" => "frames",
            "delivered" => "delivered",
            "attempts" => "attempts",
            "failed" => "failed",
            "kernel" => "kernel_errors",
            _ => continue,
        };
        if let Ok(n) = words[i - 1].parse() {
            counts.insert(key, n);
        }
    }
    (counts, line.trim().to_string())
}

/// The medium itself, seen through iw on the sending station before and after each case.
fn check_media(console: &str, runs: &HashMap<String, Run>) -> Vec<String> {
    let mut out = Vec::new();
    for c in script::LOSSY {
        let name = c.name;
        let medium = block(runs, console, &format!("{name}.medium"));
        assert!(
            medium.err.contains("registered"),
            "{name}: medium: {}",
            medium.err
        );
        let (counts, line) = medium_counts(name, &medium.err);
        let (pre, post) = (
            iw_after(runs, console, &format!("{name}.pre")),
            iw_after(runs, console, name),
        );
        let grew = |f: fn(&iw::IwStation) -> Option<u64>| {
            f(&post.1)
                .unwrap_or(0)
                .saturating_sub(f(&pre.1).unwrap_or(0))
        };
        let (retries, failed) = (grew(|s| s.tx_retries), grew(|s| s.tx_failed));
        assert!(counts["delivered"] > 1000, "{name}: {line}");
        match name {
            "lossless" => {
                assert_eq!(counts["attempts"], counts["frames"], "{name}: {line}");
                assert_eq!(retries, 0, "{name}: iw {pre:?} → {post:?}");
            }
            "loss30" => assert!(retries > 0, "{name}: iw {pre:?} → {post:?}"),
            // iw's tx bitrate after the test is the last frame's (often a probe of a higher
            // rate once traffic stops); minstrel's expected throughput is its settled choice.
            "mcs_cap" => {
                let (before, after) = (pre.1.expected_mbps, post.1.expected_mbps);
                assert!(
                    after.zip(before).is_some_and(|(a, b)| a < b),
                    "{name}: expected throughput {before:?} → {after:?} Mbit/s"
                );
            }
            _ => assert!(failed > 0, "{name}: iw {pre:?} → {post:?}"),
        }
        let tx = post
            .1
            .tx
            .map(|r| format!("{:.1} Mbit/s MCS {:?}", r.mbps, r.mcs))
            .unwrap_or_default();
        out.push(format!(
            "{name} (medium {}): iw on the station: retries +{retries}, failed +{failed}, tx {tx}, \
             expected {:?} Mbit/s; {line}",
            c.medium.unwrap_or_default(),
            post.1.expected_mbps
        ));
    }
    out
}

/// perfpeer's Wi-Fi figures in every case (needs perfpeer's link statistics, issue 36).
fn check_perfpeer(console: &str, runs: &HashMap<String, Run>) -> Vec<String> {
    let json = |name: &str| {
        let r = block(runs, console, name);
        assert_eq!(r.rc, 0, "{name}: {}{}", r.out, r.err);
        r.json()
    };
    let mut out = Vec::new();
    for c in script::PERFECT.iter().filter(|c| c.args.contains("-J")) {
        out.push(checks::placement(
            c.name,
            c.cli,
            &json(c.name),
            &iw_after(runs, console, c.name),
        ));
    }
    let text = block(runs, console, "be_text");
    assert_eq!(text.rc, 0, "be_text: {}{}", text.out, text.err);
    out.push(checks::text(&text.out));
    assert!(
        console.contains("PPVM stepped -"),
        "the rx_rssi step failed:\n{}",
        guest::markers(console)
    );
    out.push(checks::step(&json("step")));
    out.push(checks::wifi_list("ap", &json("wifi_ap"), "wlan0", "ap"));
    out.push(checks::wifi_list(
        "sta",
        &json("wifi_sta"),
        "wlan1",
        "station",
    ));
    out.extend(checks::lossy(
        &json("lossless"),
        &json("loss30"),
        &json("mcs_cap"),
        &json("be_loss"),
    ));
    out
}

#[test]
fn wifi_in_a_debian_12_guest() {
    if !guest::host_ready() {
        return;
    }
    let (console, took) = run_guest();
    let runs = guest::parse(&console);
    let mut summary = vec![format!(
        "Wi-Fi guest ran {} commands in {:.0} s (boot included)",
        runs.len(),
        took.as_secs_f64()
    )];
    summary.extend(check_link(&console, &runs));
    summary.extend(check_media(&console, &runs));
    summary.extend(capture::check(&console, &runs));
    summary.extend(check_perfpeer(&console, &runs));
    eprintln!("{}", summary.join("\n"));
}
