//! Invoked as `iperf3`, `iperf`, `ttcp` or `netserver` (a symlink to perfpeer), the binary plays
//! that tool:
//! its name in usage and help, `-v`/`--version` as the tool has them, perfpeer's own flags
//! (tokens, request/response, server caps) left out of the help (still accepted), and a bad
//! flag exits 1 as the stock tools do (perfpeer's own subcommands exit 2).

use std::ffi::OsString;

use clap::{Arg, ArgAction, Args, FromArgMatches};

use super::{Cli, Command, iperf, iperf3, netserver, ttcp};

/// The tool a program name plays, if any.
pub(super) fn of(argv0: &OsString) -> Option<&'static str> {
    let name = std::path::Path::new(argv0).file_name()?.to_str()?;
    ["iperf3", "iperf", "ttcp", "netserver"]
        .into_iter()
        .find(|t| *t == name)
}

/// perfpeer-only flags: accepted under a tool's name, but not in its help.
const PERFPEER_ONLY: [&str; 9] = [
    "token",
    "rr",
    "response_len",
    "skip_rx_copy",
    "fq_pacing",
    "max_tests",
    "max_duration",
    "max_memory",
    "json_stream",
];

fn command(tool: &'static str) -> clap::Command {
    let base = clap::Command::new(tool)
        .bin_name(tool)
        .disable_version_flag(true);
    let cmd = match tool {
        "iperf3" => iperf3::Iperf3Args::augment_args(base),
        "iperf" => iperf::IperfArgs::augment_args(base),
        "netserver" => netserver::NetserverArgs::augment_args(base),
        _ => ttcp::TtcpArgs::augment_args(base),
    };
    // After the flags: their struct's doc would otherwise be the about line.
    let cmd = cmd.about(match tool {
        "iperf3" => "iperf3's flags and protocol (perfpeer playing iperf3)",
        "iperf" => "iperf 2's flags and protocol (perfpeer playing iperf)",
        "netserver" => "netserver 2.7's flags and protocol (perfpeer playing netserver)",
        _ => "classic ttcp's flags and protocol (perfpeer playing ttcp)",
    });
    // ttcp's -v is verbose; the others' is the version.
    let version_flag = Arg::new(VERSION_ID)
        .long("version")
        .action(ArgAction::SetTrue)
        .help("Show the version and quit");
    let version_flag = if tool == "ttcp" {
        version_flag
    } else {
        version_flag.short('v')
    };
    // netserver's -V is in its own flags (perfpeer netserver -V says the version too).
    let mut cmd = if tool == "netserver" {
        cmd
    } else {
        cmd.arg(version_flag)
    };
    for id in PERFPEER_ONLY {
        if cmd.get_arguments().any(|a| a.get_id() == id) {
            cmd = cmd.mut_arg(id, |a| a.hide(true));
        }
    }
    cmd
}

const VERSION_ID: &str = "persona_version";

/// Parses `argv` for `tool`; prints help or the version and exits 0, or a usage error and
/// exits 1.
pub(super) fn parse(tool: &'static str, argv: Vec<OsString>) -> Cli {
    let matches = command(tool)
        .try_get_matches_from(argv)
        .unwrap_or_else(|e| {
            let _ = e.print();
            std::process::exit(if e.use_stderr() { 1 } else { 0 });
        });
    if matches!(matches.try_get_one::<bool>(VERSION_ID), Ok(Some(true))) {
        println!("{}", super::persona_version(tool));
        std::process::exit(0);
    }
    let command = match tool {
        "iperf3" => iperf3::Iperf3Args::from_arg_matches(&matches).map(Command::Iperf3),
        "iperf" => iperf::IperfArgs::from_arg_matches(&matches).map(Command::Iperf),
        "netserver" => netserver::NetserverArgs::from_arg_matches(&matches).map(Command::Netserver),
        _ => ttcp::TtcpArgs::from_arg_matches(&matches).map(Command::Ttcp),
    };
    match command {
        Ok(command) => Cli { command },
        Err(e) => {
            let _ = e.print();
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_persona_has_consistent_flags() {
        for tool in ["iperf3", "iperf", "ttcp", "netserver"] {
            super::command(tool).debug_assert();
        }
    }

    #[test]
    fn perfpeer_only_flags_are_hidden_but_accepted() {
        let help = super::command("iperf3").render_help().to_string();
        assert!(help.starts_with("iperf3's flags"), "{help}");
        for hidden in ["--token", "--rr", "--skip-rx-copy", "--max-tests"] {
            assert!(!help.contains(hidden), "{hidden} in {help}");
        }
        assert!(help.contains("--udp-counters-64bit"), "{help}");
        let m = super::command("iperf3")
            .try_get_matches_from(["iperf3", "-c", "h", "--token", "x"])
            .unwrap();
        assert!(m.contains_id("token"));
    }
}
