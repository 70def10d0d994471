//! The model's side of moving around the page: the screen in front, the user picking one, Back
//! and Forward (and the URL at load) going to a [`Route`], and the route the URL shows.

use perfpeer_shared::control::ClientMsg;

use super::{Cmd, Model, Msg};
use crate::route::Route;

/// Which screen is in front.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Token entry and connection state.
    Connect,
    /// What this peer is and runs.
    Peer,
    /// The new-test form.
    NewTest,
    /// A test in progress.
    Running,
    /// The last result.
    Result,
    /// The results this peer keeps (needs the token, unless the peer is open).
    History,
    /// The peer's plans, and the plan run started from this page.
    Plans,
}

impl Model {
    /// The user picked a screen.
    pub(super) fn show(&mut self, screen: Screen) -> Vec<Cmd> {
        // Gone elsewhere: a result still on its way no longer takes a place of its own.
        self.opening = None;
        self.screen = screen;
        self.form_error = None;
        if screen != Screen::NewTest {
            self.preset_note = None;
        }
        if screen == Screen::Peer && self.can_send() {
            return vec![Cmd::Send(ClientMsg::ListTests)];
        }
        if screen == Screen::History {
            return self.load_history();
        }
        #[cfg(feature = "plans")]
        if screen == Screen::Plans {
            return self.plans_shown();
        }
        Vec::new()
    }

    /// Goes where a route points (Back, Forward, or the URL at load once greeted).
    pub(super) fn navigate(&mut self, route: Route) -> Vec<Cmd> {
        self.opening = None;
        if !self.can_send() && !matches!(route, Route::Connect | Route::Peer) {
            self.pending_route = Some(route);
            return Vec::new();
        }
        let show = |model: &mut Model, screen| model.update(Msg::Show(screen));
        match route {
            Route::Connect => show(self, Screen::Connect),
            Route::Peer => show(self, Screen::Peer),
            Route::New => show(self, Screen::NewTest),
            Route::History => show(self, Screen::History),
            Route::Plans => show(self, Screen::Plans),
            Route::Run(id) => self.attach(id),
            Route::Starting if self.run.is_some() => show(self, Screen::Running),
            Route::Starting => show(self, Screen::NewTest),
            Route::Result(Some(id)) if self.share.as_ref().is_some_and(|s| s.result_id == id) => {
                show(self, Screen::Result)
            }
            Route::Result(Some(id)) => {
                self.screen = Screen::Result;
                self.open(id)
            }
            Route::Result(None) if self.has_result() => show(self, Screen::Result),
            Route::Result(None) => show(self, Screen::Peer),
        }
    }

    /// Where the page is, for the URL: a run by its id, a stored result by its result id; before
    /// the peer's greeting, where the URL pointed at load (not to lose it).
    pub fn route(&self) -> Route {
        if let Some(route) = &self.pending_route {
            return route.clone();
        }
        match self.screen {
            Screen::Connect => Route::Connect,
            Screen::Peer => Route::Peer,
            Screen::NewTest => Route::New,
            Screen::History => Route::History,
            Screen::Plans => Route::Plans,
            Screen::Running => match self
                .run
                .as_ref()
                .and_then(|r| r.test_id.clone())
                .or_else(|| self.attaching.clone())
            {
                Some(id) => Route::Run(id),
                None => Route::Starting,
            },
            Screen::Result => Route::Result(self.shown_share().map(|s| s.result_id.clone())),
        }
    }
}
