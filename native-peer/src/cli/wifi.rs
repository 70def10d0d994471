//! The Wi-Fi link on the command line: the flags `perfpeer test` and `perfpeer serve` share
//! (`--no-wifi`, `--wifi-iface`, `--wifi-station`), and `perfpeer wifi [IF]`, this host's
//! radios now (mode, network, channel, each station's signal and rates), as text or `-J`.

use std::process::ExitCode;

use clap::Args;
use perfpeer_shared::wifi::WifiInterface;

use super::UsageError;
use crate::wifi::{WifiChoice, choose, parse_mac};

/// Which radio a peer reads beside its tests.
#[derive(Debug, Args)]
pub(super) struct WifiFlags {
    /// Leave the Wi-Fi link out: read no radio here, print no link lines.
    #[arg(long, conflicts_with_all = ["wifi_iface", "wifi_station"])]
    no_wifi: bool,
    /// Read this wireless interface's link, whatever interface carries the test.
    #[arg(long, value_name = "IF")]
    wifi_iface: Option<String>,
    /// Follow this station (its MAC address, aa:bb:cc:dd:ee:ff) on the interface, instead of
    /// the far end's neighbour entry (an access point with several clients).
    #[arg(long, value_name = "MAC")]
    wifi_station: Option<String>,
}

impl WifiFlags {
    /// Whether link lines are printed.
    pub(super) fn shown(&self) -> bool {
        !self.no_wifi
    }

    /// Sets this process's choice; a MAC that does not read is a usage error.
    pub(super) fn apply(&self) -> Result<(), UsageError> {
        let station = match &self.wifi_station {
            Some(text) => Some(parse_mac(text).ok_or_else(|| {
                UsageError(format!(
                    "--wifi-station {text}: not a MAC address (aa:bb:cc:dd:ee:ff)"
                ))
            })?),
            None => None,
        };
        if let Some(name) = &self.wifi_iface
            && (name.is_empty() || name.len() > 15 || name.contains(['/', ' ']))
        {
            return Err(UsageError(format!(
                "--wifi-iface {name}: not an interface name"
            )));
        }
        choose(WifiChoice {
            off: self.no_wifi,
            iface: self.wifi_iface.clone(),
            station,
        });
        if let Some(note) = self.not_measured_note(crate::wifi::MEASURED) {
            eprintln!("{note}");
        }
        Ok(())
    }

    /// The one line said when a radio is named on a system that cannot read one (not an
    /// error: the test runs, without link lines).
    fn not_measured_note(&self, measured: bool) -> Option<&'static str> {
        (!measured && (self.wifi_iface.is_some() || self.wifi_station.is_some()))
            .then_some("perfpeer: the Wi-Fi link is not measured on this system")
    }
}

/// `perfpeer wifi`.
#[derive(Debug, Args)]
pub(super) struct WifiArgs {
    /// Only this interface.
    #[arg(value_name = "IF")]
    iface: Option<String>,
    /// JSON on stdout.
    #[arg(short = 'J', long)]
    json: bool,
}

/// Prints this host's radios; exit 1 where the system has no nl80211 (not Linux, no
/// cfg80211), 2 for an interface that is not one of them.
pub(super) fn run(args: &WifiArgs) -> anyhow::Result<ExitCode> {
    let all = crate::wifi::interfaces().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!(
            "the Wi-Fi link is not measured here: the kernel has no nl80211 (no Wi-Fi driver loaded)"
        ),
        _ => anyhow::anyhow!("the Wi-Fi link is not measured on this system: {e}"),
    })?;
    let list: Vec<WifiInterface> = match &args.iface {
        Some(name) => {
            let one: Vec<_> = all.into_iter().filter(|i| &i.iface == name).collect();
            if one.is_empty() {
                return Err(UsageError(format!("{name} is not a wireless interface here")).into());
            }
            one
        }
        None => all,
    };
    if args.json {
        outln!(
            "{}",
            perfpeer_shared::format::pretty_json(&list).unwrap_or_default()
        );
    } else if list.is_empty() {
        outln!("no wireless interfaces");
    } else {
        out!("{}", perfpeer_shared::format::wifi::interfaces_text(&list));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_named_radio_on_a_system_without_one_is_said_once_not_refused() {
        let flags = |iface: Option<&str>, station: Option<&str>| WifiFlags {
            no_wifi: false,
            wifi_iface: iface.map(Into::into),
            wifi_station: station.map(Into::into),
        };
        let note = Some("perfpeer: the Wi-Fi link is not measured on this system");
        assert_eq!(flags(Some("wlan0"), None).not_measured_note(false), note);
        assert_eq!(
            flags(None, Some("02:00:00:00:01:00")).not_measured_note(false),
            note
        );
        // Nothing named, or a system that reads radios: nothing said.
        assert_eq!(flags(None, None).not_measured_note(false), None);
        assert_eq!(flags(Some("wlan0"), None).not_measured_note(true), None);
    }
}
