//! The model's side of the other peers tested from this page: the few remembered across
//! reloads (most recent first) with the last test's form, recalled at load, recorded once the
//! peer of a run answers (a target that never answered is not kept), and the one-tap "Test to
//! <peer>" they make.

use super::{Cmd, Model};
use crate::form::{self, FormInput};

/// How many other peers the page remembers.
pub const RECENT_PEERS: usize = 5;

impl Model {
    /// The peers and the last form as stored at load: the first [`RECENT_PEERS`] good addresses.
    pub(super) fn recall(&mut self, peers: Vec<String>, last: Option<FormInput>) {
        self.recent_peers = peers
            .into_iter()
            .filter(|p| form::check_target(p).is_ok())
            .take(RECENT_PEERS)
            .collect();
        // Only a form that still makes a test, to a peer still remembered.
        self.last_input = last.filter(|input| {
            self.recent_peers.first() == Some(&input.target)
                && (form::to_latency(input).is_some_and(|r| r.is_ok())
                    || form::to_request(input).is_ok())
        });
    }

    /// A run to `target` from `input` starts: the form is the last one ("Run again"), and the
    /// peer waits to be remembered until it answers ([`Model::peer_answered`]).
    pub(super) fn run_started(&mut self, target: String, input: &FormInput) {
        self.last_input = Some(input.clone());
        self.unconfirmed_peer = Some((target, input.clone()));
    }

    /// The peer of the run just started answered (figures came from it): it goes first in the
    /// list with its form, both to be stored.
    pub(super) fn peer_answered(&mut self) -> Vec<Cmd> {
        match self.unconfirmed_peer.take() {
            Some((target, input)) => vec![self.remember_run(target, &input)],
            None => Vec::new(),
        }
    }

    /// `target` goes first in the list and `input` is the last form; both are to be stored.
    fn remember_run(&mut self, target: String, input: &FormInput) -> Cmd {
        self.recent_peers.retain(|p| *p != target);
        self.recent_peers.insert(0, target);
        self.recent_peers.truncate(RECENT_PEERS);
        self.last_input = Some(input.clone());
        Cmd::SaveRecent(self.recent_peers.clone(), input.clone())
    }

    /// What "Test to <peer>" runs: the last test again, or a default one to the peer tested
    /// last; `None` when no peer was tested from this page.
    pub fn quick_test(&self) -> Option<FormInput> {
        self.last_input.clone().or_else(|| {
            self.recent_peers.first().map(|target| FormInput {
                target: target.clone(),
                ..FormInput::default()
            })
        })
    }
}
