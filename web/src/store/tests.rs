//! Host tests of the page's flows: connect with or without a valid token, run, live intervals,
//! result, errors in plain words, and a reconnect that attaches to the still-running test.

use std::time::Duration;

use perfpeer_shared::control::{ClientMsg, ErrorCode, PeerInfo, ServerMsg};
use perfpeer_shared::report::{IntervalReport, PeerRole};
use perfpeer_shared::spec::{Protocol, TestSpec};

use super::*;
use crate::form::FormInput;

fn welcome(authorized: bool) -> Msg {
    Msg::Server(ServerMsg::Welcome {
        protocol_version: PROTOCOL_VERSION,
        peer: PeerInfo {
            name: "dut".into(),
            ..PeerInfo::default()
        },
        authorized,
    })
}

fn booted(token: Option<&str>) -> Model {
    let mut m = Model::default();
    let cmds = m.update(Msg::Boot {
        fragment: token.map(str::to_string),
        stored: None,
    });
    assert_eq!(cmds.last(), Some(&Cmd::Connect));
    let cmds = m.update(Msg::SocketOpen);
    assert_eq!(
        cmds,
        vec![Cmd::Send(ClientMsg::Hello {
            protocol_version: PROTOCOL_VERSION,
            token: token.map(str::to_string)
        })]
    );
    m
}

fn connected() -> Model {
    let mut m = booted(Some("tok"));
    m.update(welcome(true));
    m
}

fn interval(i: u64) -> IntervalReport {
    IntervalReport {
        start: Duration::from_secs(i),
        end: Duration::from_secs(i + 1),
        omitted: false,
        streams: Vec::new(),
    }
}

fn start_run(m: &mut Model) -> Vec<Cmd> {
    m.update(Msg::Start(FormInput {
        target: "pc:5210".into(),
        ..FormInput::default()
    }))
}

#[test]
fn the_fragment_token_wins_and_is_remembered() {
    let mut m = Model::default();
    let cmds = m.update(Msg::Boot {
        fragment: Some("new".into()),
        stored: Some("old".into()),
    });
    assert_eq!(cmds, vec![Cmd::SaveToken("new".into()), Cmd::Connect]);
    assert_eq!(m.token.as_deref(), Some("new"));
    let mut m = Model::default();
    m.update(Msg::Boot {
        fragment: None,
        stored: Some("old".into()),
    });
    assert_eq!(m.token.as_deref(), Some("old"));
}

#[test]
fn a_good_token_opens_the_peer_screen() {
    let m = connected();
    assert_eq!(
        (m.link, m.authorized, m.screen),
        (Link::Open, true, Screen::Peer)
    );
    assert!(!m.token_rejected);
}

#[test]
fn a_wrong_token_is_said_plainly_and_a_new_one_reconnects() {
    let mut m = booted(Some("wrong"));
    assert!(m.update(welcome(false)).is_empty());
    assert!(m.token_rejected && m.screen == Screen::Connect);
    // The peer's own unauthorized error keeps the same state.
    m.update(Msg::Server(ServerMsg::error(
        ErrorCode::Unauthorized,
        "wrong access token",
    )));
    assert!(m.token_rejected && m.screen == Screen::Connect);
    let cmds = m.update(Msg::SubmitToken(" right ".into()));
    assert_eq!(cmds, vec![Cmd::SaveToken("right".into()), Cmd::Connect]);
    assert!(!m.token_rejected);
    // No token at all is not "wrong".
    let mut m = booted(None);
    m.update(welcome(false));
    assert!(!m.token_rejected && m.screen == Screen::Connect);
}

#[test]
fn a_test_runs_to_its_result() {
    let mut m = connected();
    let cmds = start_run(&mut m);
    assert_eq!(
        cmds,
        vec![Cmd::Send(ClientMsg::Run {
            target: "pc:5210".into(),
            spec: TestSpec::new(Protocol::Tcp)
        })]
    );
    assert_eq!(m.screen, Screen::Running);
    m.update(Msg::Server(ServerMsg::Started {
        test_id: "t1".into(),
        target: "pc:5210".into(),
        spec: TestSpec::new(Protocol::Tcp),
    }));
    for (i, role) in [
        (0, PeerRole::Client),
        (0, PeerRole::Server),
        (1, PeerRole::Client),
    ] {
        m.update(Msg::Server(ServerMsg::Interval {
            test_id: "t1".into(),
            role,
            report: interval(i),
        }));
    }
    // An interval of another test is not ours.
    m.update(Msg::Server(ServerMsg::Interval {
        test_id: "other".into(),
        role: PeerRole::Client,
        report: interval(5),
    }));
    let run = m.run.as_ref().unwrap();
    assert_eq!((run.client.len(), run.server.len()), (2, 1));
    assert_eq!(m.update(Msg::Cancel), vec![Cmd::Send(ClientMsg::Cancel)]);
    assert!(m.run.as_ref().unwrap().cancelling);
}

#[test]
fn form_errors_stay_on_the_form() {
    let mut m = connected();
    m.update(Msg::Show(Screen::NewTest));
    let cmds = m.update(Msg::Start(FormInput::default()));
    assert!(cmds.is_empty());
    assert_eq!(m.form_error.as_ref().unwrap().field, "target");
    assert_eq!(m.screen, Screen::NewTest);
}

#[test]
fn an_unreachable_target_ends_the_run_with_what_to_do() {
    let mut m = connected();
    start_run(&mut m);
    m.update(Msg::Server(ServerMsg::error(
        ErrorCode::Unreachable,
        "cannot reach pc:5210: connection refused",
    )));
    assert!(m.run.is_none());
    assert_eq!(m.screen, Screen::NewTest);
    let n = m.notice.as_ref().unwrap();
    assert!(n.title.contains("Could not reach pc:5210"), "{n:?}");
    assert!(n.hint.contains("perfpeer serve"));
    m.update(Msg::Dismiss);
    assert!(m.notice.is_none());
}

#[test]
fn a_blip_reconnects_with_backoff_and_attaches_to_the_running_test() {
    let mut m = connected();
    start_run(&mut m);
    m.update(Msg::Server(ServerMsg::Started {
        test_id: "t1".into(),
        target: "pc".into(),
        spec: TestSpec::new(Protocol::Tcp),
    }));
    m.update(Msg::Server(ServerMsg::Interval {
        test_id: "t1".into(),
        role: PeerRole::Client,
        report: interval(0),
    }));
    assert_eq!(m.update(Msg::SocketClosed), vec![Cmd::ReconnectIn(500)]);
    assert_eq!(m.update(Msg::ReconnectDue), vec![Cmd::Connect]);
    assert_eq!(m.update(Msg::SocketClosed), vec![Cmd::ReconnectIn(1000)]);
    assert_eq!(m.link, Link::Lost { attempt: 2 });
    assert_eq!(m.screen, Screen::Running, "the run stays on screen");
    m.update(Msg::ReconnectDue);
    m.update(Msg::SocketOpen);
    let cmds = m.update(welcome(true));
    assert_eq!(
        cmds,
        vec![
            Cmd::Send(ClientMsg::ListTests),
            Cmd::Send(ClientMsg::Attach {
                test_id: "t1".into()
            })
        ]
    );
    // The replay starts with `started`: intervals are not counted twice.
    m.update(Msg::Server(ServerMsg::Started {
        test_id: "t1".into(),
        target: "pc".into(),
        spec: TestSpec::new(Protocol::Tcp),
    }));
    for i in 0..2 {
        m.update(Msg::Server(ServerMsg::Interval {
            test_id: "t1".into(),
            role: PeerRole::Client,
            report: interval(i),
        }));
    }
    assert_eq!(m.run.as_ref().unwrap().client.len(), 2);
    assert_eq!(m.link, Link::Open);
    // Reconnecting while connected does nothing.
    assert!(m.update(Msg::ReconnectDue).is_empty());
}

#[test]
fn a_test_that_ended_during_the_blip_is_explained() {
    let mut m = connected();
    start_run(&mut m);
    m.update(Msg::Server(ServerMsg::Started {
        test_id: "t1".into(),
        target: "pc".into(),
        spec: TestSpec::new(Protocol::Tcp),
    }));
    m.update(Msg::SocketClosed);
    m.update(Msg::ReconnectDue);
    m.update(Msg::SocketOpen);
    m.update(welcome(true));
    m.update(Msg::Server(ServerMsg::error(
        ErrorCode::UnknownTest,
        "no test t1",
    )));
    assert!(m.run.is_none());
    assert!(
        m.notice
            .as_ref()
            .unwrap()
            .title
            .contains("ended while the connection was down")
    );
}

#[test]
fn a_drop_before_started_cannot_attach_and_says_so() {
    let mut m = connected();
    start_run(&mut m);
    m.update(Msg::SocketClosed);
    m.update(Msg::ReconnectDue);
    m.update(Msg::SocketOpen);
    let cmds = m.update(welcome(true));
    assert_eq!(cmds, vec![Cmd::Send(ClientMsg::ListTests)]);
    assert!(m.run.is_none());
    assert!(m.notice.is_some());
}

#[test]
fn starting_needs_the_token() {
    let mut m = booted(None);
    m.update(welcome(false));
    assert!(start_run(&mut m).is_empty());
    assert!(m.run.is_none() && m.notice.is_some());
}
