//! A wireless medium for mac80211_hwsim in the Wi-Fi test guest (wmediumd's job, small): it
//! registers on hwsim's `MAC80211_HWSIM` generic netlink family, takes every frame the radios
//! send, delivers or loses each try with a seeded random loss, and reports to the sender the
//! tries used and whether the frame was acknowledged, so rate control, retries and failures
//! move as on a lossy channel. `dump IFNAME` instead prints the kernel's nl80211 answers
//! (interface, stations, survey) as hex lines for the codec's byte tests. Needs root in the
//! network namespace where the radios were created; of no use on a host without hwsim.
//!
//! - `frame`: hwsim's messages (the frame handed over, the delivery, the tx status).
//! - `medium`: the loss model, the answers and the counts.
//! - `nl`: the netlink socket.
//! - `dump`: the nl80211 captures.

// A binary's root finds its modules beside it (src/bin/); these live in src/bin/hwsim_medium/.
#[path = "hwsim_medium/dump.rs"]
mod dump;
#[path = "hwsim_medium/frame.rs"]
mod frame;
#[path = "hwsim_medium/medium.rs"]
mod medium;
#[path = "hwsim_medium/nl.rs"]
mod nl;

use std::process::ExitCode;
use std::time::Duration;

use medium::Config;

const USAGE: &str = "\
usage: hwsim_medium [-p LOSS] [-q EXTRA -t MCS] [-w SECS] [-o MS] [-a] [--seed N] [--signal DBM]
                    [-n RADIOS]
       hwsim_medium dump IFNAME
  -p LOSS      each attempt of a data frame is lost with this probability (0 to 1)
  -q EXTRA     attempts at an HT/VHT rate whose modulation (MCS mod 8) is above -t are lost
  -t MCS       with EXTRA in addition (default -t 7: none)
  -w SECS      the extra loss starts SECS after the medium (default 0), or at SIGUSR1 if sooner
  -o MS        an outage: for the first MS milliseconds of every second, every attempt is lost
               (rate chains offer 16-21 tries, so a frame fails only when the channel is gone)
  -a           management and control frames are lost too
  --seed N     the loss generator's seed (default 1)
  --signal DBM the signal every receiver sees (default -60)
  -n RADIOS    hwsim's radios 0..RADIOS receive from the start (default 2)
  dump IFNAME  print nl80211's interface, station and survey answers for IFNAME as hex lines";

fn parse_args(args: &[String]) -> Result<Config, String> {
    let mut c = Config {
        loss: 0.0,
        extra: 0.0,
        threshold: 7,
        extra_after: Duration::ZERO,
        outage: Duration::ZERO,
        all_frames: false,
        seed: 1,
        signal_dbm: -60,
        radios: 2,
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "-a" {
            c.all_frames = true;
            continue;
        }
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {value}: {e}");
        match flag.as_str() {
            "-p" => c.loss = value.parse().map_err(|e| bad(&e))?,
            "-q" => c.extra = value.parse().map_err(|e| bad(&e))?,
            "-t" => c.threshold = value.parse().map_err(|e| bad(&e))?,
            "-w" => c.extra_after = Duration::from_secs_f64(value.parse().map_err(|e| bad(&e))?),
            "-o" => c.outage = Duration::from_millis(value.parse().map_err(|e| bad(&e))?),
            "-n" => c.radios = value.parse().map_err(|e| bad(&e))?,
            "--seed" => c.seed = value.parse().map_err(|e| bad(&e))?,
            "--signal" => c.signal_dbm = value.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    if !(0.0..=1.0).contains(&c.loss) || !(0.0..=1.0).contains(&c.extra) {
        return Err("-p and -q are probabilities (0 to 1)".into());
    }
    if c.outage >= Duration::from_secs(1) {
        return Err("-o is a part of a second, in ms".into());
    }
    Ok(c)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("dump") if args.len() == 2 => dump::run(&args[1]),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => parse_args(&args).and_then(medium::run),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hwsim_medium: {e}");
            ExitCode::FAILURE
        }
    }
}
