//! The Wi-Fi guest's `/init`: two hwsim radios, hostapd on wlan0 (initial namespace, the AP,
//! 10.99.0.1), wlan1 moved with phy1 into a second namespace and connected (the station,
//! 10.99.0.2), a perfpeer peer on each side, then the cases in order, each followed by both
//! sides' `iw station dump`; the nl80211 captures; the lossy-medium cases, one medium at a
//! time. Every command has a time limit; results are printed as `guest::parse` blocks.

use super::guest;

/// Where `perfpeer test` runs: the station's namespace (toward the AP's peer) or the AP's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    /// In the station's namespace, `perfpeer test 10.99.0.1`: local is wlan1.
    Station,
    /// In the initial namespace, `perfpeer test 10.99.0.2`: local is wlan0.
    Ap,
}

/// One `perfpeer test` in the guest.
pub struct Case {
    /// The block's name.
    pub name: &'static str,
    /// Where the CLI runs.
    pub cli: Cli,
    /// `perfpeer test` arguments after the address.
    pub args: &'static str,
    /// The medium's arguments when the case runs through `hwsim_medium`.
    pub medium: Option<&'static str>,
    /// Seconds after the test's data connection when the medium's extra loss starts
    /// (SIGUSR1): counted from the traffic, not the clock, so a slow start under load cannot
    /// put the step before the first interval.
    pub extra_after_s: Option<u32>,
}

const fn case(name: &'static str, cli: Cli, args: &'static str) -> Case {
    Case {
        name,
        cli,
        args,
        medium: None,
        extra_after_s: None,
    }
}

const fn lossy(name: &'static str, args: &'static str, medium: &'static str) -> Case {
    Case {
        name,
        cli: Cli::Station,
        args,
        medium: Some(medium),
        extra_after_s: None,
    }
}

/// The perfect-medium cases: both directions with the peer on either side, VO-marked (DSCP
/// CS6) so that minstrel_ht sees every frame's status (docs: BE traffic is aggregated and
/// freezes rate control); one best-effort text run.
pub const PERFECT: &[Case] = &[
    case("sta_up", Cli::Station, "-t 4 -J -S 0xc0"),
    case("sta_down", Cli::Station, "-t 4 -J -R -S 0xc0"),
    case("ap_up", Cli::Ap, "-t 4 -J -S 0xc0"),
    case("ap_down", Cli::Ap, "-t 4 -J -R -S 0xc0"),
    case("be_text", Cli::Station, "-t 3"),
];

/// The station's radio rx_rssi is stepped by this much 2 s into `STEP`'s traffic (a 6 s upload).
pub const STEP_DB: i64 = -30;
/// The signal-step case (perfect medium).
pub const STEP: Case = case("step", Cli::Station, "-t 6 -J -S 0xc0");

/// The lossy cases, each through its own medium process started 1 s before the test.
/// `mcs_cap`'s extra loss above MCS 3/11 starts 2 s into its traffic: the first intervals
/// climb, the last ones are capped. Rate chains offer 16-21 tries per frame, so at 50 % loss
/// a frame practically never fails (0.5^20); `be_loss` adds a 100 ms outage every second,
/// in which every frame in flight fails.
pub const LOSSY: &[Case] = &[
    lossy("lossless", "-t 4 -J -S 0xc0", "-p 0"),
    lossy("loss30", "-t 4 -J -S 0xc0", "-p 0.3"),
    Case {
        extra_after_s: Some(2),
        ..lossy("mcs_cap", "-t 6 -J -S 0xc0", "-p 0.1 -q 0.9 -t 3 -w 60")
    },
    lossy("be_loss", "-t 4 -J", "-p 0.5 -o 100"),
];

/// hostapd's configuration: an open HT20 network on channel 6 with WMM.
const HOSTAPD_CONF: &str = "interface=wlan0
driver=nl80211
ssid=perfpeer-hwsim
hw_mode=g
channel=6
wmm_enabled=1
ieee80211n=1
ht_capab=[SHORT-GI-20]
";

/// Modules in load order (they carry no aliases and the .deb has no modules.dep).
pub const MODULES: &[&str] = &[
    "rfkill",
    "cfg80211",
    "libarc4",
    "mac80211",
    "virtio_ring",
    "virtio",
    "mac80211_hwsim",
];

/// Radios up, AP enabled, station connected and addressed, both peers serving.
fn setup() -> String {
    format!(
        "export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu
for m in {modules}; do a=; [ $m = mac80211_hwsim ] && a=radios=2; insmod /lib/wifi/$m.ko $a || echo \"PPVM insmod $m failed\"; done
mount -t debugfs debugfs /sys/kernel/debug
echo \"PPVM boot $(uname -r)\"
mkdir -p /etc /run/pp /run/pp2
cat > /etc/hostapd.conf <<'EOF'
{HOSTAPD_CONF}EOF
unshare -n sleep 100000 & NSPID=$!
i=0; while [ \"$(readlink /proc/$NSPID/ns/net)\" = \"$(readlink /proc/self/ns/net)\" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
NS=\"nsenter -t $NSPID -n\"
r phy_netns 10 /sbin/iw phy phy1 set netns $NSPID
timeout 200 /usr/sbin/hostapd -t /etc/hostapd.conf >/tmp/hostapd.log 2>&1 &
i=0; until grep -q AP-ENABLED /tmp/hostapd.log || [ $i -ge 150 ]; do sleep 0.2; i=$((i+1)); done
grep -q AP-ENABLED /tmp/hostapd.log && echo \"PPVM ap-enabled $(cut -d' ' -f1 /proc/uptime)\"
$NS ip link set lo up; $NS ip link set wlan1 up
r connect 20 $NS /sbin/iw dev wlan1 connect perfpeer-hwsim
i=0; until $NS /sbin/iw dev wlan1 link | grep -q Connected || [ $i -ge 50 ]; do sleep 0.2; i=$((i+1)); done
r link 10 $NS /sbin/iw dev wlan1 link
ip addr add 10.99.0.1/24 dev wlan0; $NS ip addr add 10.99.0.2/24 dev wlan1
r ping_sta 15 $NS ping -c 3 -w 10 10.99.0.1
r ping_ap 15 ping -c 3 -w 10 10.99.0.2
echo \"PPVM ready $(cut -d' ' -f1 /proc/uptime)\"
r info_ap 10 /sbin/iw dev wlan0 info
r info_sta 10 $NS /sbin/iw dev wlan1 info
iwr() {{ r $1.iw_ap 10 /sbin/iw dev wlan0 station dump; r $1.iw_sta 10 $NS /sbin/iw dev wlan1 station dump; }}
iwr assoc
/perfpeer serve --listen 10.99.0.1:5210 --data-port 5211 --open --data-dir /run/pp >/dev/null 2>/tmp/serve_ap.err &
$NS /perfpeer serve --listen 10.99.0.2:5210 --data-port 5211 --open --data-dir /run/pp2 >/dev/null 2>/tmp/serve_sta.err &
sleep 2
after_data() {{ i=0; until grep -q ':145B [0-9A-F]*:[0-9A-F]* 01 ' /proc/net/tcp || [ $i -ge 200 ]; do sleep 0.1; i=$((i+1)); done; sleep $1; }}
ts() {{ n=$1; shift; r $n 45 $NS /perfpeer test 10.99.0.1 --no-store \"$@\"; iwr $n; }}
ta() {{ n=$1; shift; r $n 45 /perfpeer test 10.99.0.2 --no-store \"$@\"; iwr $n; }}
",
        modules = MODULES.join(" ")
    )
}

fn run_case(c: &Case) -> String {
    let f = match c.cli {
        Cli::Station => "ts",
        Cli::Ap => "ta",
    };
    format!("{f} {} {}\n", c.name, c.args)
}

/// The station radio's rx_rssi (what the AP hears) stepped during the run, then put back.
/// debugfs takes the 32-bit two's complement on 6.1 (docs/wifi-vm.md).
fn step() -> String {
    let file = "/sys/kernel/debug/ieee80211/phy1/hwsim/rx_rssi";
    format!(
        "old=$(cat {file})
( after_data 2; echo $((4294967296 + old + ({STEP_DB}))) > {file}; echo \"PPVM stepped $(cat {file})\" ) & SPID=$!
{}wait $SPID
echo $((4294967296 + old)) > {file}
$NS ping -c 2 -w 5 10.99.0.1 >/dev/null
",
        run_case(&STEP)
    )
}

/// The nl80211 answers (as `hwsim_medium dump` prints them) and iw's words for the same
/// figures, read one right after the other, after the lossy cases (counters of retries and
/// failures) and a ping each way on the perfect medium (so the last frames' signal and rates
/// stay put while they are read).
fn captures() -> &'static str {
    "$NS ping -c 2 -w 5 10.99.0.1 >/dev/null; ping -c 2 -w 5 10.99.0.2 >/dev/null; sleep 1
r nl_ap 15 /hwsim_medium dump wlan0
r station_ap 10 /sbin/iw dev wlan0 station dump
r interface_ap 10 /sbin/iw dev wlan0 info
r nl_sta 15 $NS /hwsim_medium dump wlan1
r station_sta 10 $NS /sbin/iw dev wlan1 station dump
r survey_sta 10 $NS /sbin/iw dev wlan1 survey dump
r interface_sta 10 $NS /sbin/iw dev wlan1 info
r wifi_ap 20 /perfpeer wifi -J
r wifi_sta 20 $NS /perfpeer wifi -J
"
}

/// A lossy case: the medium (initial namespace, where the radios were made) up for the test,
/// then stopped; its summary goes out as the block `NAME.medium`.
fn lossy_case(c: &Case) -> String {
    format!(
        "iwr {name}.pre
timeout 120 /hwsim_medium {medium} >/dev/null 2>/tmp/medium.err & MPID=$!
sleep 1
{trigger}{run}kill $MPID; i=0; while kill -0 $MPID 2>/dev/null && [ $i -lt 30 ]; do sleep 0.1; i=$((i+1)); done
echo \"PPVM-BEGIN {name}.medium 0\"; sed 's/^/PPVM! /' /tmp/medium.err; echo \"PPVM-END {name}.medium\"
sleep 1
",
        name = c.name,
        medium = c.medium.unwrap_or_default(),
        trigger = c.extra_after_s.map_or(String::new(), |s| format!(
            "( after_data {s}; kill -USR1 $MPID; echo \"PPVM extra loss $(cut -d' ' -f1 /proc/uptime)\" ) &\n"
        )),
        run = run_case(c),
    )
}

/// The whole `/init`.
pub fn init(watchdog_s: u64) -> String {
    let mut s = guest::init_prologue(watchdog_s);
    s += &setup();
    for c in PERFECT {
        s += &run_case(c);
    }
    s += &step();
    for c in LOSSY {
        s += &lossy_case(c);
    }
    s += captures();
    s += "dmesg | grep -E 'wlan|hwsim|wmediumd' | tail -n 30 | sed 's/^/PPVM~ /'
grep -v INFO /tmp/serve_ap.err | tail -n 20 | sed 's/^/PPVM~ ap: /'
grep -v INFO /tmp/serve_sta.err | tail -n 20 | sed 's/^/PPVM~ sta: /'
echo \"PPVM done $(cut -d' ' -f1 /proc/uptime)\"
poweroff -f
";
    s
}
