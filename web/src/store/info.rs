//! The model's side of the Peer screen's refresh: while the screen is open this peer is asked
//! what it is now (`GET /api/info`) every [`INFO_REFRESH_MS`], so its radios (mode, network,
//! channel, each station's signal and rates) are seen live before any test. The timer starts
//! when the screen opens and stops when it closes, whatever moved the page. [`radios_text`]
//! is what the screen says of them.

use perfpeer_shared::control::PeerInfo;
use perfpeer_shared::format::wifi as wifi_text;

use super::{Cmd, Model, Screen};
use crate::history::Request;

/// The Peer screen's radios as `perfpeer wifi` prints them (no station addresses: the peer
/// leaves them out); one line on a system that cannot read a radio; nothing without a radio.
pub fn radios_text(peer: &PeerInfo) -> String {
    if peer.wifi_not_measured {
        "Wi-Fi: not measured on this system\n".into()
    } else {
        wifi_text::interfaces_text(&peer.wifi)
    }
}

/// How often the Peer screen asks again, ms (the peer reads its radios at most once a second).
pub const INFO_REFRESH_MS: u32 = 2000;

impl Model {
    /// The screen moved from `before`: opening the Peer screen asks at once, closing it stops
    /// the timer.
    pub(super) fn screen_changed(&self, before: Screen) -> Option<Cmd> {
        match (before == Screen::Peer, self.screen == Screen::Peer) {
            (false, true) => Some(Cmd::Fetch(Request::Info)),
            (true, false) => Some(Cmd::StopInfoRefresh),
            _ => None,
        }
    }

    /// The timer fired: ask, if the Peer screen is still open (the next ask waits for this
    /// answer, so asks never pile up behind a slow peer).
    pub(super) fn info_due(&self) -> Vec<Cmd> {
        if self.screen == Screen::Peer {
            vec![Cmd::Fetch(Request::Info)]
        } else {
            Vec::new()
        }
    }

    /// The peer's answer: what it says now replaces what the page knew (an answer that did not
    /// come or did not parse keeps it); while the screen is open, the next ask is timed.
    pub(super) fn on_info(&mut self, status: u16, body: &str) -> Vec<Cmd> {
        if (200..300).contains(&status)
            && let Ok(info) = serde_json::from_str::<PeerInfo>(body)
        {
            self.peer = Some(info);
        }
        if self.screen == Screen::Peer {
            vec![Cmd::RefreshInfoIn(INFO_REFRESH_MS)]
        } else {
            Vec::new()
        }
    }
}
