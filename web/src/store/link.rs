//! The model's side of the connection and the token: the token at load and as typed (tried
//! first, remembered once accepted, the remembered one tried again when it is refused), the
//! WebSocket opening, dropping and reconnecting with backoff, and the peer's greeting and
//! refusals (`welcome`, `error`).

use perfpeer_shared::PROTOCOL_VERSION;
use perfpeer_shared::control::{ClientMsg, ErrorCode, PeerInfo};

use super::{Cmd, Model, RunState, Screen};
use crate::present::{Notice, explain};
use crate::route::Route;

/// The WebSocket to this peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Link {
    /// Opening.
    Connecting,
    /// Open and greeted.
    Open,
    /// Dropped; a reconnect is scheduled (attempt number, from 1).
    Lost {
        /// Reconnect attempts since the drop.
        attempt: u32,
    },
}

/// Delay before reconnect attempt `attempt` (1-based): 0.5 s, 1 s, 2 s, then every 3 s.
pub fn backoff_ms(attempt: u32) -> u32 {
    match attempt {
        0 | 1 => 500,
        2 => 1000,
        3 => 2000,
        _ => 3000,
    }
}

impl Model {
    /// Page loaded: the token from the URL fragment is tried before the stored one, which is
    /// kept until the new one is accepted.
    pub(super) fn boot(
        &mut self,
        fragment: Option<String>,
        stored: Option<String>,
        route: Option<Route>,
    ) -> Vec<Cmd> {
        self.token = fragment.or_else(|| stored.clone());
        self.saved_token = stored;
        self.pending_route = route;
        vec![Cmd::Connect]
    }

    pub(super) fn socket_open(&self) -> Vec<Cmd> {
        vec![Cmd::Send(ClientMsg::Hello {
            protocol_version: PROTOCOL_VERSION,
            token: self.token.clone(),
        })]
    }

    pub(super) fn socket_closed(&mut self) -> Vec<Cmd> {
        let attempt = match self.link {
            Link::Lost { attempt } => attempt + 1,
            _ => 1,
        };
        self.link = Link::Lost { attempt };
        vec![Cmd::ReconnectIn(backoff_ms(attempt))]
    }

    pub(super) fn reconnect_due(&self) -> Vec<Cmd> {
        match self.link {
            Link::Lost { .. } => vec![Cmd::Connect],
            _ => Vec::new(),
        }
    }

    pub(super) fn submit_token(&mut self, typed: &str) -> Vec<Cmd> {
        let t = typed.trim().to_string();
        if t.is_empty() {
            return Vec::new();
        }
        self.token = Some(t);
        self.token_rejected = false;
        self.falling_back = false;
        self.link = Link::Connecting;
        // `hello` is the first message only: a new token needs a new connection.
        vec![Cmd::Connect]
    }

    /// Whether messages that need the token can go: the link is open and the token accepted.
    pub(super) fn can_send(&self) -> bool {
        self.link == Link::Open && self.authorized
    }

    /// The peer refused the token in use: the remembered one is tried when it is another (a new
    /// token never loses the one that works); otherwise the Connect screen says so.
    fn token_refused(&mut self) -> Vec<Cmd> {
        let other = self
            .saved_token
            .clone()
            .filter(|saved| self.token.as_ref() != Some(saved));
        if let Some(saved) = other {
            self.token = Some(saved);
            self.falling_back = true;
            self.link = Link::Connecting;
            return vec![Cmd::Connect];
        }
        self.falling_back = false;
        self.token_rejected = self.token.is_some();
        self.screen = Screen::Connect;
        Vec::new()
    }

    /// The peer accepted the token in use: remembered when it is new; when it is the
    /// remembered one after a new one was refused, the page says so.
    fn token_accepted(&mut self) -> Vec<Cmd> {
        self.token_rejected = false;
        if std::mem::take(&mut self.falling_back) {
            self.notice = Some(Notice {
                title: "The peer did not accept the new token".into(),
                detail: "This page goes on with the token it remembered, which the peer accepts."
                    .into(),
                hint: "If the peer was restarted with a new token, open the URL it printed then."
                    .into(),
            });
        }
        match &self.token {
            Some(t) if self.saved_token.as_ref() != Some(t) => {
                self.saved_token = Some(t.clone());
                vec![Cmd::SaveToken(t.clone())]
            }
            _ => Vec::new(),
        }
    }

    pub(super) fn on_welcome(&mut self, peer: PeerInfo, authorized: bool) -> Vec<Cmd> {
        self.peer = Some(peer);
        self.link = Link::Open;
        self.authorized = authorized;
        if !authorized {
            return self.token_refused();
        }
        let mut cmds = self.token_accepted();
        cmds.push(Cmd::Send(ClientMsg::ListTests));
        #[cfg(feature = "plans")]
        {
            if let Some(attach) = self.plan_reattach() {
                cmds.push(attach);
                return cmds;
            }
            // Dropped before `plan_started`: that run cannot be identified.
            self.plan_refused();
        }
        if self.run.is_none()
            && let Some(id) = &self.attaching
        {
            cmds.push(Cmd::Send(ClientMsg::Attach {
                test_id: id.clone(),
            }));
            return cmds;
        }
        // The token works: a reload on the token screen lands on the Peer screen instead.
        if self.run.is_none()
            && let Some(route) = self.pending_route.take().filter(|r| *r != Route::Connect)
        {
            if self.screen == Screen::Connect {
                self.screen = Screen::Peer;
            }
            cmds.extend(self.navigate(route));
            return cmds;
        }
        match &self.run {
            Some(RunState {
                test_id: Some(id), ..
            }) => cmds.push(Cmd::Send(ClientMsg::Attach {
                test_id: id.clone(),
            })),
            Some(run) => {
                // Dropped before `started`: the test may run on, but it cannot be identified.
                self.notice = Some(Notice {
                    title: "The connection dropped while the test was starting".into(),
                    detail: format!("test to {}", run.target),
                    hint:
                        "It may still be running: see This peer's running tests, or start it again."
                            .into(),
                });
                self.run = None;
                self.screen = Screen::NewTest;
            }
            None if self.screen == Screen::Connect => self.screen = Screen::Peer,
            None => {}
        }
        cmds
    }

    pub(super) fn on_error(&mut self, code: ErrorCode, message: &str) -> Vec<Cmd> {
        if code == ErrorCode::Unauthorized {
            self.token_rejected = self.token.is_some();
            self.authorized = false;
            self.screen = Screen::Connect;
            return Vec::new();
        }
        if let Some(id) = self.attaching.take() {
            // The run asked for by id is gone (finished a while ago, or the peer restarted).
            if self.screen == Screen::Running {
                self.screen = Screen::Peer;
            }
            self.notice = Some(Notice {
                title: format!("Test {id} is no longer on this peer"),
                detail: message.to_string(),
                hint: "A finished test's result is in History when the peer kept it.".into(),
            });
            return Vec::new();
        }
        let target = self.run.as_ref().map(|r| r.target.clone());
        let ends_run = !matches!(code, ErrorCode::BadMessage | ErrorCode::UnexpectedMessage);
        if ends_run && self.run.take().is_some() {
            self.screen = Screen::NewTest;
        }
        self.notice = Some(explain(code, message, target.as_deref()));
        Vec::new()
    }
}
