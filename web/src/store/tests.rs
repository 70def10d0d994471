//! Host tests of the page's flows: connect with or without a valid token, run, live intervals,
//! result, errors in plain words, and a reconnect that attaches to the still-running test.

use std::time::Duration;

use perfpeer_shared::control::{ClientMsg, ErrorCode, PeerInfo, ServerMsg};
use perfpeer_shared::report::{IntervalReport, PeerRole};
use perfpeer_shared::spec::{Protocol, TestSpec};

use super::*;
use crate::form::{FormInput, RunKind};
use perfpeer_shared::PROTOCOL_VERSION;

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

/// The history's first page as the screen asks for it, no filters typed.
fn first_page() -> crate::history::Request {
    crate::history::Request::List {
        #[cfg(feature = "lab-store")]
        query: "?limit=200".into(),
        #[cfg(feature = "lab-store")]
        more: false,
    }
}

fn booted(token: Option<&str>) -> Model {
    let mut m = Model::default();
    let cmds = m.update(Msg::Boot {
        fragment: token.map(str::to_string),
        stored: None,
        route: None,
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
        wifi: None,
    }
}

/// The sweep in progress (a sweep run is expected).
fn sweep_run(m: &Model) -> &SweepRun {
    let Some(Progress::Sweep(sweep)) = m.run.as_ref().map(|r| &r.progress) else {
        panic!("no sweep runs: {:?}", m.run)
    };
    sweep
}

/// The latency run in progress (one is expected).
fn latency_run(m: &Model) -> &LatencyRun {
    let Some(Progress::Latency(latency)) = m.run.as_ref().map(|r| &r.progress) else {
        panic!("no latency run runs: {:?}", m.run)
    };
    latency
}

fn start_run(m: &mut Model) -> Vec<Cmd> {
    m.update(Msg::Start(FormInput {
        target: "pc:5210".into(),
        ..FormInput::default()
    }))
}

/// The socket opens and the peer accepts the token: it is remembered then.
fn accepted_and_remembered(m: &mut Model, token: &str) {
    m.update(Msg::SocketOpen);
    let cmds = m.update(welcome(true));
    assert_eq!(
        cmds.first(),
        Some(&Cmd::SaveToken(token.into())),
        "{cmds:?}"
    );
    assert_eq!(m.saved_token.as_deref(), Some(token));
}

#[test]
fn the_fragment_token_is_tried_first_and_remembered_once_accepted() {
    let mut m = Model::default();
    let cmds = m.update(Msg::Boot {
        fragment: Some("new".into()),
        stored: Some("old".into()),
        route: None,
    });
    assert_eq!(
        cmds,
        vec![Cmd::Connect],
        "nothing remembered before the peer accepts it"
    );
    assert_eq!(m.token.as_deref(), Some("new"));
    accepted_and_remembered(&mut m, "new");
    assert_eq!(m.notice, None);
    // Accepted again after a blip: already remembered.
    m.update(Msg::SocketClosed);
    m.update(Msg::ReconnectDue);
    m.update(Msg::SocketOpen);
    let cmds = m.update(welcome(true));
    assert!(
        !cmds.iter().any(|c| matches!(c, Cmd::SaveToken(_))),
        "{cmds:?}"
    );
    let mut m = Model::default();
    m.update(Msg::Boot {
        fragment: None,
        stored: Some("old".into()),
        route: None,
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
    assert_eq!(cmds, vec![Cmd::Connect]);
    assert!(!m.token_rejected);
    accepted_and_remembered(&mut m, "right");
    // No token at all is not "wrong".
    let mut m = booted(None);
    m.update(welcome(false));
    assert!(!m.token_rejected && m.screen == Screen::Connect);
}

/// Boots with `fragment` over the remembered `stored` token; the socket opens.
fn booted_over(fragment: &str, stored: &str) -> Model {
    let mut m = Model::default();
    m.update(Msg::Boot {
        fragment: Some(fragment.into()),
        stored: Some(stored.into()),
        route: None,
    });
    m.update(Msg::SocketOpen);
    m
}

/// The `hello` the page sends when its socket opens.
fn hello(m: &Model, token: &str) -> Vec<Cmd> {
    assert_eq!(m.token.as_deref(), Some(token));
    vec![Cmd::Send(ClientMsg::Hello {
        protocol_version: PROTOCOL_VERSION,
        token: Some(token.into()),
    })]
}

#[test]
fn a_refused_new_token_never_loses_the_one_that_works() {
    // A `#token=` link with a wrong token over a working remembered one.
    let mut m = booted_over("wrong", "good");
    assert_eq!(m.update(welcome(false)), vec![Cmd::Connect]);
    assert!(!m.token_rejected && m.link == Link::Connecting, "{m:?}");
    assert_eq!(m.saved_token.as_deref(), Some("good"), "not replaced");
    assert_eq!(m.update(Msg::SocketOpen), hello(&m, "good"));
    let cmds = m.update(welcome(true));
    assert!(
        !cmds.iter().any(|c| matches!(c, Cmd::SaveToken(_))),
        "{cmds:?}"
    );
    assert_eq!((m.authorized, m.screen), (true, Screen::Peer));
    let n = m.notice.clone().expect("the refusal is said");
    assert_eq!(n.title, "The peer did not accept the new token");
    assert!(n.detail.contains("token it remembered"), "{n:?}");
    // A typed token that is refused falls back the same way.
    m.update(Msg::Dismiss);
    m.update(Msg::SubmitToken("typo".into()));
    assert_eq!(m.update(Msg::SocketOpen), hello(&m, "typo"));
    assert_eq!(m.update(welcome(false)), vec![Cmd::Connect]);
    assert_eq!(m.update(Msg::SocketOpen), hello(&m, "good"));
    m.update(welcome(true));
    assert!(m.authorized && m.notice.is_some());
    // Both refused (the peer has a new token): said on the Connect screen, no loop.
    let mut m = booted_over("wrong", "stale");
    assert_eq!(m.update(welcome(false)), vec![Cmd::Connect]);
    m.update(Msg::SocketOpen);
    assert!(m.update(welcome(false)).is_empty());
    assert!(m.token_rejected && m.screen == Screen::Connect);
    assert_eq!(m.notice, None);
    // The same token in the link as remembered: refused once, said at once.
    let mut m = booted_over("good", "good");
    assert!(m.update(welcome(false)).is_empty());
    assert!(m.token_rejected);
}

#[test]
fn a_test_runs_to_its_result() {
    let mut m = connected();
    let cmds = start_run(&mut m);
    assert_eq!(
        cmds,
        vec![
            Cmd::Send(ClientMsg::Run {
                target: "pc:5210".into(),
                spec: TestSpec::new(Protocol::Tcp)
            }),
            // The Peer screen closed: its refresh stops.
            Cmd::StopInfoRefresh
        ],
        "the peer is remembered once it answers, not yet"
    );
    assert_eq!(m.screen, Screen::Running);
    m.update(Msg::Server(ServerMsg::Started {
        test_id: "t1".into(),
        target: "pc:5210".into(),
        spec: TestSpec::new(Protocol::Tcp),
    }));
    let mut saved = Vec::new();
    for (i, role) in [
        (0, PeerRole::Client),
        (0, PeerRole::Server),
        (1, PeerRole::Client),
    ] {
        saved.extend(m.update(Msg::Server(ServerMsg::Interval {
            test_id: "t1".into(),
            role,
            report: interval(i),
        })));
    }
    // Its first figures: the peer answered, and is remembered with the form, once.
    assert_eq!(
        saved,
        vec![Cmd::SaveRecent(
            vec!["pc:5210".into()],
            FormInput {
                target: "pc:5210".into(),
                ..FormInput::default()
            }
        )]
    );
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

#[test]
fn starting_with_a_refused_token_says_it_was_refused() {
    let mut m = booted(Some("wrong"));
    m.update(welcome(false));
    m.update(Msg::Show(Screen::NewTest));
    assert!(start_run(&mut m).is_empty());
    let n = m.notice.clone().unwrap();
    // In the Connect screen's words, not "no token".
    assert_eq!(n.title, "This peer did not accept the token");
    assert!(n.detail.contains("refused the one this page has"), "{n:?}");
    assert!(n.hint.contains("#token="), "{n:?}");
    assert_eq!((m.run.as_ref(), m.screen), (None, Screen::NewTest));
}

#[test]
fn an_open_peer_authorizes_a_page_without_a_token() {
    let mut m = booted(None);
    let cmds = m.update(welcome(true));
    assert_eq!(
        cmds,
        vec![Cmd::Send(ClientMsg::ListTests), Cmd::Fetch(Request::Info)]
    );
    assert!(m.authorized && !m.token_rejected && m.screen == Screen::Peer);
    // Everything that needs the peer's say-so works without a token: History, a run.
    assert_eq!(
        m.update(Msg::Show(Screen::History)),
        vec![Cmd::Fetch(first_page()), Cmd::StopInfoRefresh]
    );
    assert_eq!(m.history.error, None);
    assert!(matches!(
        start_run(&mut m).first(),
        Some(Cmd::Send(ClientMsg::Run { .. }))
    ));
}

mod stored {
    //! The history screen, the comparison, the share box and its switches.

    use super::*;
    use crate::history::{Purpose, Request};
    use crate::present::tests::tcp_result;

    const LIST: &str = r#"[
     {"id":"r2","created_ms":2000,"origin":"browser","role":"client","peer":"pc","protocol":"udp","direction":"normal",
      "status":"complete","bits_per_second":1e6,"link_enabled":true},
     {"id":"r1","created_ms":1000,"origin":"browser","role":"client","peer":"pc","protocol":"tcp","direction":"normal",
      "status":"complete","bits_per_second":9e8,"link_enabled":true}]"#;

    fn opened(link_enabled: bool) -> String {
        serde_json::json!({
            "summary": {"id":"r1","created_ms":1000,"origin":"browser","role":"client","peer":"pc",
                        "protocol":"tcp","direction":"normal",
                        "status":"complete","link_enabled": link_enabled},
            "result": tcp_result(),
        })
        .to_string()
    }

    fn reply(m: &mut Model, request: Request, status: u16, body: &str) -> Vec<Cmd> {
        m.update(Msg::Reply {
            request,
            status,
            body: body.into(),
        })
    }

    fn get(id: &str, purpose: Purpose) -> Request {
        Request::Get {
            id: id.into(),
            purpose,
        }
    }

    /// The expectations' texts.
    fn texts(expect: &[perfpeer_shared::verdict::Expectation]) -> Vec<&str> {
        expect.iter().map(|e| e.text()).collect()
    }

    /// The verdict of the result shown (a test's or a latency run's).
    fn shown_verdict(m: &Model) -> Option<perfpeer_shared::verdict::Verdict> {
        match m.shown.as_ref()? {
            Shown::Test(result) => result.verdict(),
            Shown::Latency(latency) => latency.verdict(),
            Shown::Sweep(_) => None,
        }
    }

    /// Starts a 3-s run of `kind` to pc:5210 from the form with `expect` in its Expect field.
    fn start_expecting(m: &mut Model, kind: RunKind, expect: &str) -> Vec<Cmd> {
        m.update(Msg::Start(FormInput {
            target: "pc:5210".into(),
            mode: kind,
            seconds: "3".into(),
            expect: expect.into(),
            ..FormInput::default()
        }))
    }

    #[test]
    fn the_forms_expectations_judge_the_run_and_the_result_opened_later() {
        use perfpeer_shared::verdict::{Expectation, Outcome};
        let mut m = connected();
        // A bad expectation is the field's error; nothing is sent.
        let cmds = start_expecting(&mut m, RunKind::Test, "rx>300M");
        assert!(cmds.is_empty(), "{cmds:?}");
        assert_eq!(m.form_error.as_ref().map(|e| e.field), Some("expect"));
        // A test: its spec carries them to the peer, its result back.
        let cmds = start_expecting(&mut m, RunKind::Test, "rx>=10T");
        let Some(Cmd::Send(ClientMsg::Run { spec, .. })) = cmds.first() else {
            panic!("expected a run: {cmds:?}")
        };
        assert_eq!(texts(&spec.expect), ["rx>=10T"]);
        let mut result = tcp_result();
        result.spec = spec.clone();
        m.update(Msg::Server(ServerMsg::Result { result }));
        assert_eq!(shown_verdict(&m).map(|v| v.outcome), Some(Outcome::Fail));
        // Opened from the history, a kept test is judged by its own spec's.
        let mut kept = tcp_result();
        kept.spec.expect = Expectation::parse_list("rx>=1G").unwrap();
        let body = serde_json::json!({
            "summary": {"id":"r1","created_ms":1000,"origin":"browser","role":"client","peer":"pc",
                        "protocol":"tcp","direction":"normal","status":"complete","link_enabled":true},
            "result": kept,
        });
        reply(&mut m, get("r1", Purpose::Open), 200, &body.to_string());
        assert_eq!(shown_verdict(&m).map(|v| v.outcome), Some(Outcome::Pass));
        // A latency run: judged by the request it ran, which its result does not carry.
        let cmds = start_expecting(&mut m, RunKind::Latency, "p99<=40ms");
        let Some(Cmd::Send(ClientMsg::Latency { request, .. })) = cmds.first() else {
            panic!("expected a latency run: {cmds:?}")
        };
        assert_eq!(texts(&request.expect), ["p99<=40ms"]);
        m.update(Msg::Server(ServerMsg::LatencyStarted {
            latency_id: "L1".into(),
            target: "pc:5210".into(),
            request: request.clone(),
        }));
        let mut live = perfpeer_shared::latency::Live::default();
        live.apply(&latency_started());
        let result = live.snapshot(None).unwrap();
        m.update(Msg::Server(ServerMsg::LatencyResult {
            latency_id: "L1".into(),
            result: result.clone(),
        }));
        // No probe came back: nothing to judge p99 by.
        let verdict = shown_verdict(&m).expect("a verdict");
        assert_eq!(verdict.outcome, Outcome::Unjudged);
        assert_eq!(verdict.checks[0].expect.text(), "p99<=40ms");
        // Kept, it is opened with its request.
        let kept = perfpeer_shared::history::KeptLatency {
            id: "L2".into(),
            created_ms: 1,
            peer: "pc:5210".into(),
            request: request.clone(),
            result,
            link_enabled: true,
            origin: perfpeer_shared::history::Origin::Browser,
            notes: perfpeer_shared::history::Notes::default(),
        };
        let body = serde_json::json!({ "summary": kept.summary(), "latency": kept });
        reply(&mut m, get("L2", Purpose::Open), 200, &body.to_string());
        assert_eq!(shown_kind(&m), Some("latency"));
        assert_eq!(shown_verdict(&m), kept.verdict());
        assert!(kept.verdict().is_some());
    }

    #[test]
    fn a_run_that_was_stored_shows_its_share_box() {
        let mut m = connected();
        start_run(&mut m);
        m.update(Msg::Server(ServerMsg::Stored {
            test_id: "t1".into(),
            result_id: "abc".into(),
        }));
        m.update(Msg::Server(ServerMsg::Result {
            result: tcp_result(),
        }));
        let share = m.share.clone().expect("share facts");
        assert_eq!(
            (share.result_id.as_str(), share.test_id.as_str()),
            ("abc", "t1")
        );
        assert!(share.link_enabled);
        // Another test's result (not stored) does not take the box over.
        let mut other = tcp_result();
        other.id = "t2".into();
        m.update(Msg::Server(ServerMsg::Result { result: other }));
        assert_eq!(m.share, None);
    }

    #[test]
    fn the_history_loads_with_the_token_each_time_it_opens() {
        let mut m = connected();
        assert_eq!(
            m.update(Msg::Show(Screen::History)),
            vec![Cmd::Fetch(first_page()), Cmd::StopInfoRefresh]
        );
        assert!(m.history.loading);
        reply(&mut m, first_page(), 200, LIST);
        assert!(!m.history.loading && m.history.error.is_none());
        assert_eq!(m.history.entries.len(), 2);
        // Without a token nothing is asked, and the screen says why.
        let mut anon = booted(None);
        anon.update(welcome(false));
        assert!(anon.update(Msg::Show(Screen::History)).is_empty());
        assert!(anon.history.error.as_deref().unwrap().contains("token"));
        // A refused token is said plainly.
        reply(&mut m, first_page(), 401, "");
        assert!(
            m.history
                .error
                .as_deref()
                .unwrap()
                .contains("did not accept the token")
        );
        assert_eq!(m.history.entries.len(), 2, "the last list stays");
    }

    /// `n` history lines, newest first, with ids `{prefix}{i}`.
    #[cfg(feature = "lab-store")]
    fn lines(prefix: &str, n: usize, newest_ms: u64) -> String {
        let rows: Vec<serde_json::Value> = (0..n)
            .map(|i| {
                serde_json::json!({"id": format!("{prefix}{i:03}"), "created_ms": newest_ms - i as u64,
                    "origin":"cli","role":"client","peer":"dut-7:5201","protocol":"tcp",
                    "direction":"normal","status":"complete","link_enabled":true,
                    "kept_by":"pc-lab-2"})
            })
            .collect();
        serde_json::Value::from(rows).to_string()
    }

    #[cfg(feature = "lab-store")]
    #[test]
    fn the_peers_filters_ask_again_and_a_full_page_offers_the_next() {
        use crate::history::{Filter, PAGE};
        let mut m = connected();
        m.update(Msg::Show(Screen::History));
        reply(&mut m, first_page(), 200, &lines("a", PAGE, 1_000_000));
        let next = m.history.next.clone().expect("a full page has a next one");
        assert_eq!(
            next,
            format!("{}_a{:03}", 1_000_000 - (PAGE as u64 - 1), PAGE - 1)
        );
        // The next page goes below; a line already shown is not shown twice.
        let cmds = m.update(Msg::MoreHistory);
        let more = Request::List {
            query: format!("?limit=200&before={next}"),
            more: true,
        };
        assert_eq!(cmds, vec![Cmd::Fetch(more.clone())]);
        let body = lines("b", 3, 1_000);
        reply(&mut m, more, 200, &body);
        assert_eq!(m.history.entries.len(), PAGE + 3);
        assert_eq!(m.history.next, None, "a short page is the last");
        assert!(m.update(Msg::MoreHistory).is_empty());
        // Filters typed: a tag, a time, a peer's name, each sent encoded.
        let filter = Filter::from_fields("pc lab&2".into(), "", "").with_asked(
            "fw=1.2.3",
            "2026-12-01",
            1_796_220_497_000,
            -120,
        );
        assert_eq!(
            filter.since_ms,
            Some(1_796_076_000_000),
            "midnight in UTC+2"
        );
        let cmds = m.update(Msg::FilterHistory(filter.clone()));
        let asked = Request::List {
            query: "?limit=200&peer=pc%20lab%262&tag=fw%3D1.2.3&since=1796076000000".into(),
            more: false,
        };
        assert_eq!(cmds, vec![Cmd::Fetch(asked.clone())]);
        // An answer to the filters before is dropped; the one asked for replaces the list.
        reply(&mut m, first_page(), 200, &lines("old", 5, 9));
        assert_eq!(
            m.history.entries.len(),
            PAGE + 3,
            "a stale answer is dropped"
        );
        reply(&mut m, asked, 200, &lines("c", 2, 5_000));
        assert_eq!(m.history.entries.len(), 2);
        assert!(
            m.history.visible().is_empty(),
            "the name matches no row's peer or keeper"
        );
        m.update(Msg::SetFilter(Filter::from_fields("LAB-2".into(), "", "")));
        assert_eq!(m.history.visible().len(), 2, "kept_by matches, any case");
        // Filters asked again: no next page of the list before them is offered meanwhile.
        let none = Filter::default().with_asked("", "", 0, 0);
        m.update(Msg::FilterHistory(none.clone()));
        reply(&mut m, first_page(), 200, &lines("d", PAGE, 9_000));
        assert!(m.history.next.is_some());
        m.update(Msg::FilterHistory(none));
        assert_eq!(m.history.next, None, "the next page is the new list's");
        assert!(m.update(Msg::MoreHistory).is_empty());
        // A time that does not read is said, and nothing is asked.
        let bad = Filter::default().with_asked("", "yesterday", 0, 0);
        assert!(m.update(Msg::FilterHistory(bad)).is_empty());
        assert!(
            m.history
                .error
                .as_deref()
                .unwrap()
                .contains("'yesterday' is not a time")
        );
    }

    #[test]
    fn comparing_fetches_the_picked_results_once() {
        let mut m = connected();
        m.update(Msg::Show(Screen::History));
        reply(&mut m, first_page(), 200, LIST);
        m.update(Msg::Pick("r1".into()));
        assert!(
            m.update(Msg::Compare).is_empty(),
            "one pick is not a comparison"
        );
        m.update(Msg::Pick("r2".into()));
        assert_eq!(
            m.update(Msg::Compare),
            vec![
                Cmd::Fetch(get("r1", Purpose::Compare)),
                Cmd::Fetch(get("r2", Purpose::Compare))
            ]
        );
        reply(&mut m, get("r1", Purpose::Compare), 200, &opened(true));
        assert_eq!(m.history.overlay(0), None);
        reply(&mut m, get("r2", Purpose::Compare), 200, &opened(true));
        assert_eq!(m.history.overlay(0).map(|l| l.len()), Some(2));
        assert_eq!(m.screen, Screen::History, "comparing stays on the history");
        // Asked again: nothing to fetch.
        m.update(Msg::Pick("r2".into()));
        m.update(Msg::Pick("r2".into()));
        assert!(m.update(Msg::Compare).is_empty());
        // A result that cannot be fetched says so.
        reply(&mut m, get("r9", Purpose::Compare), 404, "");
        assert!(
            m.history
                .error
                .as_deref()
                .unwrap()
                .contains("no such result")
        );
    }

    #[test]
    fn opening_a_stored_result_shows_it_with_its_link_state() {
        let mut m = connected();
        assert_eq!(
            m.update(Msg::Open("r1".into())),
            vec![Cmd::Fetch(get("r1", Purpose::Open))]
        );
        reply(&mut m, get("r1", Purpose::Open), 200, &opened(false));
        assert_eq!(m.screen, Screen::Result);
        assert!(
            matches!(&m.shown, Some(Shown::Test(r)) if r.id == "t1"),
            "{:?}",
            m.shown
        );
        let share = m.share.clone().unwrap();
        assert_eq!(
            (share.result_id.as_str(), share.link_enabled),
            ("r1", false)
        );
        // Failing to open is a notice, and the screen stays.
        let mut m = connected();
        reply(&mut m, get("r1", Purpose::Open), 404, "");
        assert_eq!(
            m.notice.as_ref().unwrap().title,
            "Could not open the result"
        );
        assert_eq!(m.screen, Screen::Peer);
    }

    #[test]
    fn a_result_opened_from_history_is_a_place_back_returns_from() {
        let mut m = connected();
        m.update(Msg::Show(Screen::History));
        reply(&mut m, first_page(), 200, LIST);
        let open = Msg::Open("r1".into());
        // The tap itself moves nowhere yet: the page stays on History until the result comes.
        assert!(!open.is_navigation());
        m.update(open);
        assert_eq!(m.route(), Route::History);
        // It comes: a new entry for #/result/r1, so Back returns to #/history.
        let cmds = reply(&mut m, get("r1", Purpose::Open), 200, &opened(true));
        assert_eq!(cmds, vec![Cmd::NewEntry]);
        assert_eq!(m.route(), Route::Result(Some("r1".into())));
        // Back, then Forward to it: the URL is already there, no new entry.
        m.update(Msg::Navigate(Route::History));
        assert_eq!(m.screen, Screen::History);
        m.update(Msg::Navigate(Route::Result(Some("r1".into()))));
        assert_eq!(m.screen, Screen::Result);
        // A reload on #/result/r2 asks for it by itself: its arrival replaces the entry.
        m.update(Msg::Navigate(Route::Result(Some("r2".into()))));
        assert!(reply(&mut m, get("r2", Purpose::Open), 200, &opened(true)).is_empty());
        // Two rows tapped quickly: only the last one is shown, with its entry.
        m.update(Msg::Show(Screen::History));
        m.update(Msg::Open("r1".into()));
        m.update(Msg::Open("r2".into()));
        assert!(reply(&mut m, get("r1", Purpose::Open), 200, &opened(true)).is_empty());
        assert_eq!(
            m.screen,
            Screen::History,
            "the first tap's result is not shown"
        );
        let cmds = reply(&mut m, get("r2", Purpose::Open), 200, &opened(true));
        assert_eq!((cmds, m.screen), (vec![Cmd::NewEntry], Screen::Result));
        // A failed open stays on History, with no entry of its own.
        m.update(Msg::Show(Screen::History));
        m.update(Msg::Open("r9".into()));
        assert!(reply(&mut m, get("r9", Purpose::Open), 404, "").is_empty());
        assert_eq!((m.screen, m.opening.as_ref()), (Screen::History, None));
        assert!(m.notice.is_some());
    }

    #[test]
    fn the_result_shown_carries_its_notes_into_its_file() {
        let mut m = connected();
        // A run's result the peer did not keep has none.
        m.update(Msg::Server(ServerMsg::Result {
            result: tcp_result(),
        }));
        assert!(m.shown_notes().is_empty());
        // A kept one opened from History: the notes it was kept with.
        let mut body: serde_json::Value = serde_json::from_str(&opened(true)).unwrap();
        body["summary"]["notes"] = serde_json::json!({"text": "fw 1.2", "tags": ["ch36"]});
        reply(&mut m, get("r1", Purpose::Open), 200, &body.to_string());
        let kept = perfpeer_shared::history::Notes::from_input("fw 1.2", "ch36").unwrap();
        assert_eq!(m.shown_notes(), kept);
        assert_eq!(m.shown_share().map(|s| s.result_id.as_str()), Some("r1"));
        // Saved anew: the new ones.
        let cmds = m.update(Msg::SaveNotes {
            text: "fw 1.3".into(),
            tags: "ch40 lab".into(),
        });
        let [Cmd::Fetch(put)] = &cmds[..] else {
            panic!("{cmds:?}")
        };
        reply(&mut m, put.clone(), 204, "");
        assert_eq!(m.shown_notes().tags, vec!["ch40", "lab"]);
        assert_eq!(m.shown_notes().text, "fw 1.3");
        // Another run's result takes the screen: the notes were not its.
        let mut other = tcp_result();
        other.id = "t2".into();
        m.update(Msg::Server(ServerMsg::Result { result: other }));
        assert!(m.shown_notes().is_empty());
    }

    #[test]
    fn the_link_switch_and_delete_with_a_second_tap() {
        let mut m = connected();
        m.update(Msg::Show(Screen::History));
        reply(&mut m, first_page(), 200, LIST);
        reply(&mut m, get("r1", Purpose::Open), 200, &opened(true));
        let off = Request::SetLink {
            id: "r1".into(),
            enabled: false,
        };
        assert_eq!(m.update(Msg::ToggleLink), vec![Cmd::Fetch(off.clone())]);
        reply(&mut m, off, 204, "");
        assert!(!m.share.as_ref().unwrap().link_enabled);
        assert!(!m.history.entries[1].link_enabled);
        // Delete asks once more, for a while only: the wait runs out, then asks again.
        assert_eq!(
            m.update(Msg::Delete),
            vec![Cmd::ExpireDeleteIn(DELETE_CONFIRM_MS)]
        );
        assert!(m.share.as_ref().unwrap().confirm_delete);
        m.update(Msg::DeleteExpired);
        assert!(!m.share.as_ref().unwrap().confirm_delete);
        m.update(Msg::Delete);
        assert!(m.share.as_ref().unwrap().confirm_delete);
        let del = Request::Delete { id: "r1".into() };
        assert_eq!(m.update(Msg::Delete), vec![Cmd::Fetch(del.clone())]);
        reply(&mut m, del, 204, "");
        assert_eq!((m.share.as_ref(), m.shown.as_ref()), (None, None));
        assert_eq!(m.screen, Screen::History);
        assert_eq!(m.history.entries.len(), 1);
        // Without the token the switches do nothing.
        let mut anon = booted(None);
        anon.update(welcome(false));
        anon.share = Some(Share {
            confirm_delete: true,
            ..Share::new("r2".into(), "t".into(), true, Default::default())
        });
        assert!(anon.update(Msg::ToggleLink).is_empty());
        assert!(anon.update(Msg::Delete).is_empty());
        assert!(
            anon.update(Msg::SaveNotes {
                text: "x".into(),
                tags: String::new()
            })
            .is_empty()
        );
    }

    #[test]
    fn notes_are_checked_saved_and_shown_in_the_list() {
        let mut m = connected();
        m.update(Msg::Show(Screen::History));
        reply(&mut m, first_page(), 200, LIST);
        reply(&mut m, get("r1", Purpose::Open), 200, &opened(true));
        // Out of bounds: said, nothing sent.
        assert!(
            m.update(Msg::SaveNotes {
                text: String::new(),
                tags: "a<b".into()
            })
            .is_empty()
        );
        assert!(
            m.share
                .as_ref()
                .unwrap()
                .notes_error
                .as_deref()
                .unwrap()
                .starts_with("Not saved: tag"),
            "{:?}",
            m.share
        );
        let cmds = m.update(Msg::SaveNotes {
            text: " fw 1.2 ".into(),
            tags: "ch36, lab".into(),
        });
        let notes = perfpeer_shared::history::Notes {
            text: "fw 1.2".into(),
            tags: vec!["ch36".into(), "lab".into()],
        };
        let put = Request::SetNotes {
            id: "r1".into(),
            notes: notes.clone(),
        };
        assert_eq!(cmds, vec![Cmd::Fetch(put.clone())]);
        assert_eq!(put.method(), "PUT");
        assert_eq!(put.path(), "/api/results/r1/notes");
        assert_eq!(
            put.body().as_deref(),
            Some(r#"{"text":"fw 1.2","tags":["ch36","lab"]}"#)
        );
        reply(&mut m, put.clone(), 204, "");
        let share = m.share.clone().unwrap();
        assert!(share.notes_saved && share.notes_error.is_none());
        assert_eq!(share.notes, notes);
        let entry = m.history.entries.iter().find(|e| e.id == "r1").unwrap();
        assert_eq!(crate::history::row(entry, 0).notes, "ch36 lab · fw 1.2");
        assert!(crate::history::overlay_label(entry, 0).ends_with(" · ch36 lab"));
        // A refusal from the peer is said where the notes are.
        reply(
            &mut m,
            put,
            400,
            r#"{"error":"the note has a control character"}"#,
        );
        assert!(
            m.share
                .as_ref()
                .unwrap()
                .notes_error
                .as_deref()
                .unwrap()
                .contains("control character")
        );
    }

    #[test]
    fn each_finished_run_replaces_the_result_shown_whatever_its_kind() {
        let mut m = connected();
        assert!(!m.has_result());
        m.update(Msg::Server(ServerMsg::Result {
            result: tcp_result(),
        }));
        assert_eq!(
            (shown_kind(&m), m.route()),
            (Some("test"), Route::Result(None))
        );
        m.update(Msg::Server(ServerMsg::SweepResult {
            sweep_id: "s1".into(),
            result: perfpeer_shared::sweep::SweepResult {
                protocol: Protocol::Udp,
                ccid: None,
                bitrate: None,
                seconds_per_size: 1.0,
                points: vec![sweep_point(64)],
            },
        }));
        assert_eq!(shown_kind(&m), Some("sweep"));
        assert_eq!(m.shown.as_ref().map(Shown::id), Some("s1"));
        // A kept latency run: its share link is the URL's.
        let mut live = perfpeer_shared::latency::Live::default();
        live.apply(&latency_started());
        m.update(Msg::Server(ServerMsg::Stored {
            test_id: "L1".into(),
            result_id: "R1".into(),
        }));
        m.update(Msg::Server(ServerMsg::LatencyResult {
            latency_id: "L1".into(),
            result: live.snapshot(None).unwrap(),
        }));
        assert_eq!(shown_kind(&m), Some("latency"));
        assert_eq!(m.route(), Route::Result(Some("R1".into())));
        // A test opened from the history takes its place, and goes with its deletion.
        reply(&mut m, get("r1", Purpose::Open), 200, &opened(true));
        assert_eq!(shown_kind(&m), Some("test"));
        assert_eq!(m.route(), Route::Result(Some("r1".into())));
        reply(&mut m, Request::Delete { id: "r1".into() }, 204, "");
        assert_eq!((shown_kind(&m), m.has_result()), (None, false));
    }
}

fn sweep_point(len: u32) -> perfpeer_shared::sweep::SweepPoint {
    perfpeer_shared::sweep::SweepPoint::failed(len, "test row")
}

#[test]
fn a_sweep_shows_each_size_and_attaches_again_after_a_drop() {
    let mut m = connected();
    let cmds = m.update(Msg::Start(FormInput {
        target: "pc".into(),
        mode: RunKind::Sweep,
        sizes: "64,128".into(),
        seconds: "1".into(),
        ..FormInput::default()
    }));
    let [
        Cmd::Send(ClientMsg::Sweep { sizes, spec, .. }),
        Cmd::StopInfoRefresh,
    ] = &cmds[..]
    else {
        panic!("{cmds:?}")
    };
    assert_eq!(
        (sizes.clone(), spec.protocol),
        (vec![64, 128], Protocol::Udp)
    );
    let spec = spec.clone();
    m.update(Msg::Server(ServerMsg::SweepStarted {
        sweep_id: "s1".into(),
        target: "pc".into(),
        spec: spec.clone(),
        sizes: vec![64, 128],
    }));
    let live = |m: &mut Model, test: &str, i: u64| {
        m.update(Msg::Server(ServerMsg::Interval {
            test_id: test.into(),
            role: PeerRole::Client,
            report: interval(i),
        }))
    };
    live(&mut m, "t1", 0);
    live(&mut m, "t1", 1);
    assert_eq!(m.run.as_ref().unwrap().client.len(), 2);
    m.update(Msg::Server(ServerMsg::SweepPoint {
        sweep_id: "s1".into(),
        point: sweep_point(64),
    }));
    // The next size's intervals start the live figures afresh.
    live(&mut m, "t2", 0);
    let run = m.run.as_ref().unwrap();
    assert_eq!(run.client.len(), 1);
    let sweep = sweep_run(&m);
    assert_eq!((sweep.points.len(), sweep.running_size()), (1, Some(128)));
    // A drop: the reconnect attaches to the sweep by its id.
    m.update(Msg::SocketClosed);
    m.update(Msg::SocketOpen);
    let cmds = m.update(welcome(true));
    assert!(
        cmds.contains(&Cmd::Send(ClientMsg::Attach {
            test_id: "s1".into()
        })),
        "{cmds:?}"
    );
    // A point of another sweep is not ours.
    m.update(Msg::Server(ServerMsg::SweepPoint {
        sweep_id: "other".into(),
        point: sweep_point(999),
    }));
    assert_eq!(sweep_run(&m).points.len(), 1);
    let result = perfpeer_shared::sweep::SweepResult {
        protocol: Protocol::Udp,
        ccid: None,
        bitrate: None,
        seconds_per_size: 1.0,
        points: vec![sweep_point(64), sweep_point(128)],
    };
    m.update(Msg::Server(ServerMsg::Stored {
        test_id: "s1".into(),
        result_id: "r1".into(),
    }));
    m.update(Msg::Server(ServerMsg::SweepResult {
        sweep_id: "s1".into(),
        result: result.clone(),
    }));
    assert_eq!(m.screen, Screen::Result);
    assert_eq!(
        m.share.as_ref().map(|s| s.result_id.as_str()),
        Some("r1"),
        "the kept sweep's share link"
    );
    assert!(m.run.is_none());
    let Some(Shown::Sweep(done)) = m.shown else {
        panic!("the sweep is not shown: {:?}", m.shown)
    };
    assert_eq!(
        (done.result, done.context.other_peer, done.spec),
        (result, "pc".to_string(), spec)
    );
}

#[test]
fn dccp_is_refused_at_the_form_when_this_peer_has_none() {
    let mut m = booted(Some("tok"));
    let mut peer = PeerInfo::default();
    peer.dccp.available = false;
    peer.dccp.reason = Some("this kernel has no DCCP (removed from Linux in 6.16)".into());
    m.update(Msg::Server(ServerMsg::Welcome {
        protocol_version: PROTOCOL_VERSION,
        peer,
        authorized: true,
    }));
    let dccp = FormInput {
        target: "pc".into(),
        protocol: Protocol::Dccp,
        ..FormInput::default()
    };
    assert!(m.update(Msg::Start(dccp.clone())).is_empty());
    let e = m.form_error.clone().unwrap();
    assert_eq!(e.field, "protocol");
    assert!(e.message.contains("removed from Linux in 6.16"), "{e:?}");
    assert!(m.run.is_none());
    // With DCCP here, the same form starts a DCCP run.
    m.peer.as_mut().unwrap().dccp.available = true;
    let cmds = m.update(Msg::Start(dccp));
    assert!(
        matches!(&cmds[..], [Cmd::Send(ClientMsg::Run { spec, .. }), Cmd::StopInfoRefresh] if spec.protocol == Protocol::Dccp),
        "{cmds:?}"
    );
}

/// The first event of a latency run to pc:5210: 3 s loaded phases, 2 streams.
fn latency_started() -> perfpeer_shared::latency::LatencyEvent {
    perfpeer_shared::latency::LatencyEvent::Started {
        target: "pc:5210".into(),
        started_unix_ms: 1,
        settings: perfpeer_shared::latency::LoadSettings {
            idle_seconds: 2.0,
            load_seconds: 3.0,
            streams: 2,
            congestion: None,
            udp_bits_per_second: None,
            load_bits_per_second: None,
            probe_interval_ms: 10.0,
            probe_bytes: 64,
            probe_bits_per_second: 73_600.0,
            probe_tos: None,
        },
    }
}

#[test]
fn a_latency_run_goes_live_survives_a_reconnect_and_ends_on_the_result_screen() {
    use perfpeer_shared::latency::{LatencyEvent, LatencyRequest, Phase};
    let mut m = connected();
    let cmds = m.update(Msg::Start(FormInput {
        target: "pc:5210".into(),
        mode: RunKind::Latency,
        seconds: "3".into(),
        streams: "2".into(),
        ..FormInput::default()
    }));
    let request = match cmds.as_slice() {
        [
            Cmd::Send(ClientMsg::Latency { target, request }),
            Cmd::StopInfoRefresh,
        ] => {
            assert_eq!(target, "pc:5210");
            assert_eq!((request.load_seconds, request.streams), (3.0, 2));
            request.clone()
        }
        other => panic!("expected a latency request, got {other:?}"),
    };
    assert_eq!(m.screen, Screen::Running);
    m.update(Msg::Server(ServerMsg::LatencyStarted {
        latency_id: "L1".into(),
        target: "pc:5210".into(),
        request: request.clone(),
    }));
    for (id, event) in [
        ("L1", latency_started()),
        (
            "L1",
            LatencyEvent::PhaseStarted {
                phase: Phase::Idle,
                at: 0.0,
            },
        ),
        // Another run's event is not this run's.
        (
            "other",
            LatencyEvent::PhaseStarted {
                phase: Phase::Both,
                at: 9.0,
            },
        ),
    ] {
        m.update(Msg::Server(ServerMsg::LatencyEvent {
            latency_id: id.into(),
            event,
        }));
    }
    let live = &latency_run(&m).live;
    assert_eq!(live.running, Some((Phase::Idle, 0.0)));
    // The connection drops and comes back: the page attaches to the run by its id.
    m.update(Msg::SocketClosed);
    m.update(Msg::ReconnectDue);
    m.update(Msg::SocketOpen);
    let cmds = m.update(welcome(true));
    assert!(
        cmds.contains(&Cmd::Send(ClientMsg::Attach {
            test_id: "L1".into()
        })),
        "{cmds:?}"
    );
    let result = latency_run(&m).live.snapshot(None).unwrap();
    m.update(Msg::Server(ServerMsg::Stored {
        test_id: "L1".into(),
        result_id: "R1".into(),
    }));
    m.update(Msg::Server(ServerMsg::LatencyResult {
        latency_id: "L1".into(),
        result: result.clone(),
    }));
    assert_eq!(m.screen, Screen::Result);
    assert!(m.run.is_none());
    assert!(
        matches!(&m.shown, Some(Shown::Latency(l)) if l.result == result),
        "{:?}",
        m.shown
    );
    assert_eq!(m.share.as_ref().map(|s| s.result_id.as_str()), Some("R1"));
    // A bad form value names its field and sends nothing.
    let cmds = m.update(Msg::Start(FormInput {
        target: "pc:5210".into(),
        mode: RunKind::Latency,
        seconds: "0".into(),
        ..FormInput::default()
    }));
    assert!(cmds.is_empty());
    assert_eq!(m.form_error.as_ref().map(|e| e.field), Some("seconds"));
    let _ = LatencyRequest::default();
}

#[test]
fn starting_without_the_token_or_the_connection_says_which_is_missing() {
    // Connected, but the page has no token (and the peer is not open).
    let mut m = booted(None);
    m.update(welcome(false));
    m.update(Msg::Show(Screen::NewTest));
    assert!(start_run(&mut m).is_empty());
    let n = m.notice.clone().unwrap();
    assert_eq!(n.title, "This page has no token for the peer");
    assert!(
        n.hint.contains("Connect screen") && !n.hint.contains("Wait"),
        "{n:?}"
    );
    // The token is fine but the connection dropped.
    let mut m = connected();
    m.update(Msg::SocketClosed);
    assert!(start_run(&mut m).is_empty());
    let n = m.notice.clone().unwrap();
    assert_eq!(n.title, "Not connected to the peer");
    assert!(n.hint.contains("Wait for the connection"), "{n:?}");
}

#[test]
fn peers_tested_are_remembered_newest_first_and_a_run_starts_again_as_it_was() {
    let mut m = connected();
    m.update(Msg::Recall {
        peers: vec!["old:5210".into(), "has space".into(), "pc:5210".into()],
        last: None,
    });
    assert_eq!(
        m.recent_peers,
        ["old:5210", "pc:5210"],
        "a bad entry is dropped"
    );
    let cmds = start_run(&mut m);
    assert!(
        !cmds.iter().any(|c| matches!(c, Cmd::SaveRecent(..))),
        "not before the peer answers: {cmds:?}"
    );
    let cmds = answer(&mut m);
    assert!(
        cmds.iter()
            .any(|c| matches!(c, Cmd::SaveRecent(peers, input)
            if peers == &["pc:5210", "old:5210"] && input.target == "pc:5210")),
        "{cmds:?}"
    );
    // Nothing starts again while the run runs.
    assert!(m.update(Msg::RunAgain).is_empty());
    m.run = None;
    let again = m.update(Msg::RunAgain);
    assert!(
        again
            .iter()
            .any(|c| matches!(c, Cmd::Send(ClientMsg::Run { target, .. }) if target == "pc:5210")),
        "{again:?}"
    );
    // At most five, newest first.
    for i in 0..7 {
        m.run = None;
        m.update(Msg::Start(FormInput {
            target: format!("h{i}"),
            ..FormInput::default()
        }));
        answer(&mut m);
    }
    assert_eq!(m.recent_peers, ["h6", "h5", "h4", "h3", "h2"]);
    // A target that never answers (refused, unreachable) is not remembered.
    m.run = None;
    m.update(Msg::Start(FormInput {
        target: "nobody:5210".into(),
        ..FormInput::default()
    }));
    m.update(Msg::Server(ServerMsg::error(
        perfpeer_shared::control::ErrorCode::Unreachable,
        "connection refused",
    )));
    assert_eq!(m.recent_peers, ["h6", "h5", "h4", "h3", "h2"]);
    assert!(!m.recent_peers.iter().any(|p| p == "nobody:5210"));
}

/// The running test's first figures arrive: its peer answered.
fn answer(m: &mut Model) -> Vec<Cmd> {
    m.update(Msg::Server(ServerMsg::Interval {
        test_id: "t1".into(),
        role: PeerRole::Server,
        report: interval(0),
    }))
}

#[test]
fn a_first_open_starts_a_default_test_to_the_other_peer_typed() {
    // Without the token, the Peer screen has no Start.
    let mut m = booted(None);
    m.update(welcome(false));
    assert!(!m.offers_first_test());
    let mut m = connected();
    if let Some(peer) = &mut m.peer {
        peer.addresses = vec!["192.168.1.20".into(), "fd00::20".into()];
    }
    assert!(m.offers_first_test(), "nothing tested from this page yet");
    let here = "dut.lan:5210";
    let first = |m: &mut Model, typed: &str| {
        m.update(Msg::FirstTest {
            target: typed.into(),
            here: here.into(),
        })
    };
    // Nothing typed, or this peer itself (as the page reached it, or by another of its
    // addresses at its port): nothing starts, and the field says why.
    for typed in [
        " ",
        "DUT.lan",
        "dut.lan:5210",
        "192.168.1.20",
        "[fd00::20]:5210",
    ] {
        m.form_error = None;
        assert!(first(&mut m, typed).is_empty(), "{typed}");
        assert_eq!(m.form_error.as_ref().map(|e| e.field), Some("target"));
        assert_eq!(m.screen, Screen::Peer);
    }
    assert!(
        m.form_error
            .as_ref()
            .unwrap()
            .message
            .contains("is this peer"),
        "{:?}",
        m.form_error
    );
    // Another peer on this peer's host (another port) is another peer: TCP, this peer sends.
    let cmds = first(&mut m, " 192.168.1.20:5211 ");
    let expected = FormInput {
        target: "192.168.1.20:5211".into(),
        ..FormInput::default()
    };
    assert_eq!(cmds.first(), Some(&Cmd::FillForm(expected.clone())));
    assert!(
        cmds.iter()
            .any(|c| matches!(c, Cmd::Send(ClientMsg::Run { target, spec })
            if target == "192.168.1.20:5211"
                && spec.protocol == Protocol::Tcp
                && spec.direction == perfpeer_shared::spec::Direction::Normal)),
        "{cmds:?}"
    );
    assert_eq!((m.screen, m.form_error.clone()), (Screen::Running, None));
    assert!(!m.offers_first_test(), "a test runs");
    // After it, the one-tap "Test to <peer>" takes its place.
    m.run = None;
    assert!(!m.offers_first_test());
    assert_eq!(m.quick_test(), Some(expected));
}

/// What kind of result is shown (each kind named, so a new kind is a compile error here too).
fn shown_kind(m: &Model) -> Option<&'static str> {
    m.shown.as_ref().map(|shown| match shown {
        Shown::Test(_) => "test",
        Shown::Sweep(_) => "sweep",
        Shown::Latency(_) => "latency",
    })
}

#[test]
fn a_run_takes_only_its_own_kinds_messages() {
    let mut m = connected();
    m.update(Msg::Server(ServerMsg::SweepStarted {
        sweep_id: "s1".into(),
        target: "pc".into(),
        spec: TestSpec::new(Protocol::Udp),
        sizes: vec![64, 128],
    }));
    // A latency event with the sweep's id changes nothing.
    let before = m.run.clone();
    m.update(Msg::Server(ServerMsg::LatencyEvent {
        latency_id: "s1".into(),
        event: latency_started(),
    }));
    assert_eq!(m.run, before);
    // A latency run replaces the sweep; a sweep point with its id changes nothing.
    m.update(Msg::Server(ServerMsg::LatencyStarted {
        latency_id: "L1".into(),
        target: "pc:5210".into(),
        request: perfpeer_shared::latency::LatencyRequest::default(),
    }));
    m.update(Msg::Server(ServerMsg::SweepPoint {
        sweep_id: "L1".into(),
        point: sweep_point(64),
    }));
    assert_eq!(
        latency_run(&m).live,
        perfpeer_shared::latency::Live::default()
    );
    m.update(Msg::Server(ServerMsg::LatencyEvent {
        latency_id: "L1".into(),
        event: latency_started(),
    }));
    assert!(latency_run(&m).live.snapshot(None).is_some());
}

/// Routes: a reload on `#/run/<id>` follows that run once greeted; the URL follows the screens.
mod routes {
    use super::*;
    use crate::route::Route;

    fn started(id: &str) -> Msg {
        Msg::Server(ServerMsg::Started {
            test_id: id.into(),
            target: "pc:5210".into(),
            spec: TestSpec::new(Protocol::Tcp),
        })
    }

    #[test]
    fn a_reload_mid_test_attaches_to_the_run_in_the_url() {
        let mut m = Model::default();
        m.update(Msg::Boot {
            fragment: None,
            stored: Some("tok".into()),
            route: Route::parse("#/run/ab12"),
        });
        m.update(Msg::SocketOpen);
        let cmds = m.update(welcome(true));
        assert!(
            cmds.contains(&Cmd::Send(ClientMsg::Attach {
                test_id: "ab12".into()
            })),
            "{cmds:?}"
        );
        assert_eq!(m.screen, Screen::Running);
        assert_eq!(m.route(), Route::Run("ab12".into()));
        // The replay begins: the run is shown, the URL unchanged.
        m.update(started("ab12"));
        assert_eq!(m.attaching, None);
        assert_eq!(m.run.as_ref().unwrap().test_id.as_deref(), Some("ab12"));
        assert_eq!(m.route().hash(), "#/run/ab12");
    }

    #[test]
    fn a_run_that_is_gone_says_so_and_lands_on_the_peer_screen() {
        let mut m = connected();
        m.update(Msg::Navigate(Route::Run("gone".into())));
        assert_eq!(m.screen, Screen::Running);
        m.update(Msg::Server(ServerMsg::error(
            ErrorCode::UnknownTest,
            "no test gone",
        )));
        assert_eq!(m.screen, Screen::Peer);
        let n = m.notice.clone().unwrap();
        assert!(n.title.contains("no longer"), "{n:?}");
        assert!(n.hint.contains("History"), "{n:?}");
    }

    #[test]
    fn tapping_another_running_test_follows_it_over_a_new_connection() {
        let mut m = connected();
        start_run(&mut m);
        m.update(started("t1"));
        // Tapping the one followed already just shows it.
        m.update(Msg::Show(Screen::Peer));
        assert_eq!(
            m.update(Msg::AttachTo("t1".into())),
            vec![Cmd::StopInfoRefresh]
        );
        assert_eq!(m.screen, Screen::Running);
        // Another: this connection follows t1, so a new one follows t2.
        assert_eq!(m.update(Msg::AttachTo("t2".into())), vec![Cmd::Connect]);
        assert_eq!(m.route(), Route::Run("t2".into()));
        m.update(Msg::SocketOpen);
        let cmds = m.update(welcome(true));
        assert!(
            cmds.contains(&Cmd::Send(ClientMsg::Attach {
                test_id: "t2".into()
            })),
            "{cmds:?}"
        );
    }

    #[test]
    fn back_moves_between_screens_and_routes_name_them() {
        let mut m = connected();
        assert_eq!(m.route(), Route::Peer);
        m.update(Msg::Navigate(Route::New));
        assert_eq!((m.screen, m.route()), (Screen::NewTest, Route::New));
        m.update(Msg::Navigate(Route::History));
        assert_eq!(m.screen, Screen::History);
        // Nothing to show at #/result: the Peer screen.
        m.update(Msg::Navigate(Route::Result(None)));
        assert_eq!(m.screen, Screen::Peer);
        // A stored result is opened from the peer.
        let cmds = m.update(Msg::Navigate(Route::Result(Some("r9".into()))));
        assert!(
            matches!(&cmds[..], [Cmd::Fetch(Request::Get { id, .. }), Cmd::StopInfoRefresh] if id == "r9"),
            "{cmds:?}"
        );
        // Before the greeting, a route waits for it.
        let mut early = booted(Some("tok"));
        assert!(early.update(Msg::Navigate(Route::History)).is_empty());
        let cmds = early.update(welcome(true));
        assert!(cmds.contains(&Cmd::Fetch(first_page())), "{cmds:?}");
        assert_eq!(early.screen, Screen::History);
    }

    #[test]
    fn one_tap_tests_the_last_peer_and_presets_start_with_their_tab() {
        let mut m = connected();
        // Nothing remembered: nothing to start.
        assert!(m.update(Msg::QuickTest).is_empty());
        let last = FormInput {
            target: "pc:5210".into(),
            protocol: Protocol::Udp,
            bitrate: "20M".into(),
            ..FormInput::default()
        };
        m.update(Msg::Recall {
            peers: vec!["pc:5210".into()],
            last: Some(last.clone()),
        });
        assert_eq!(m.quick_test(), Some(last));
        let cmds = m.update(Msg::QuickTest);
        assert!(
            matches!(&cmds[0], Cmd::Send(ClientMsg::Run { spec, .. }) if spec.protocol == Protocol::Udp),
            "{cmds:?}"
        );
        assert_eq!(m.screen, Screen::Running);
        // A remembered form for another peer, or one that no longer makes a test, is dropped.
        let mut m = connected();
        m.update(Msg::Recall {
            peers: vec!["pc:5210".into()],
            last: Some(FormInput {
                target: "pc:5210".into(),
                seconds: "-1".into(),
                ..FormInput::default()
            }),
        });
        assert_eq!(m.last_input, None);
        assert_eq!(m.quick_test().unwrap().target, "pc:5210");
        // A preset with no target fills the form and asks for one.
        let cmds = m.update(Msg::Preset {
            id: "netperf".into(),
            target: String::new(),
        });
        assert!(matches!(&cmds[..], [Cmd::FillForm(f)] if f.len == "16K"));
        assert_eq!(m.form_error.as_ref().unwrap().field, "target");
        // With one, it starts, and its result opens on its tool's tab.
        let cmds = m.update(Msg::Preset {
            id: "netperf".into(),
            target: "pc:5210".into(),
        });
        assert!(
            cmds.iter().any(
                |c| matches!(c, Cmd::Send(ClientMsg::Run { spec, .. }) if spec.len == 16 * 1024)
            ),
            "{cmds:?}"
        );
        assert!(m.preset_note.as_deref().unwrap().starts_with("Started"));
        m.update(started("t5"));
        let mut result = crate::present::tests::tcp_result();
        result.id = "t5".into();
        m.update(Msg::Server(ServerMsg::Result { result }));
        assert_eq!(m.tab, Layout::Netperf);
    }

    #[test]
    fn the_unpaced_sweep_preset_takes_a_capped_peers_rate() {
        let mut m = connected();
        if let Some(p) = &mut m.peer {
            p.max_bitrate = 50_000_000;
        }
        let cmds = m.update(Msg::Preset {
            id: "sweep".into(),
            target: "pc".into(),
        });
        assert!(
            cmds.iter()
                .any(|c| matches!(c, Cmd::Send(ClientMsg::Sweep { spec, .. })
                if spec.bitrate.map(|b| b.0) == Some(50_000_000))),
            "{cmds:?}"
        );
    }
}

/// What `/api/info` says of a peer with one access point and a client on it.
fn info_with_radio(signal: i8) -> String {
    serde_json::json!({
        "name": "dut", "version": "0.1.0", "system": "Linux", "addresses": [],
        "data_port": 5211, "congestion_controls": [], "max_tests": 2, "max_duration_s": 60,
        "max_bitrate": 0,
        "wifi": [{
            "iface": "wlan0", "mode": "ap", "mac": "02:00:00:00:00:01", "ssid": "lab",
            "freq_mhz": 5180, "channel": 36, "width_mhz": 80,
            "stations": [{ "signal_dbm": signal,
                           "tx_rate": { "kind": "vht", "mcs": 9, "nss": 2, "mbps": 866.7 } }]
        }]
    })
    .to_string()
}

#[test]
fn a_peer_that_cannot_read_a_radio_says_so_once_on_the_peer_screen() {
    let mut m = booted(Some("tok"));
    m.update(welcome(true));
    // A Windows or macOS peer: one line, whatever its (empty) radio list.
    let mut info: serde_json::Value = serde_json::from_str(&info_with_radio(-48)).unwrap();
    info["wifi"] = serde_json::json!([]);
    info["wifi_not_measured"] = true.into();
    info_reply(&mut m, 200, &info.to_string());
    let peer = m.peer.as_ref().unwrap();
    assert_eq!(radios_text(peer), "Wi-Fi: not measured on this system\n");
    // A Linux peer (and an older one, which does not say): its radios, or nothing.
    info_reply(&mut m, 200, &info_with_radio(-48));
    let peer = m.peer.as_ref().unwrap();
    assert!(!peer.wifi_not_measured);
    assert!(
        radios_text(peer).starts_with("wlan0 ("),
        "{}",
        radios_text(peer)
    );
    assert_eq!(radios_text(&PeerInfo::default()), "");
}

fn info_reply(m: &mut Model, status: u16, body: &str) -> Vec<Cmd> {
    m.update(Msg::Reply {
        request: crate::history::Request::Info,
        status,
        body: body.into(),
    })
}

#[test]
fn the_peer_screen_asks_for_the_radios_every_two_seconds_while_it_is_open() {
    use crate::history::Request;
    let mut m = booted(Some("tok"));
    let cmds = m.update(welcome(true));
    assert_eq!(
        cmds.last(),
        Some(&Cmd::Fetch(Request::Info)),
        "opened: asked at once"
    );
    assert!(m.peer.as_ref().unwrap().wifi.is_empty());
    // The answer replaces what the page knew; the next ask is timed.
    assert_eq!(
        info_reply(&mut m, 200, &info_with_radio(-48)),
        vec![Cmd::RefreshInfoIn(INFO_REFRESH_MS)]
    );
    let wifi = &m.peer.as_ref().unwrap().wifi;
    assert_eq!(
        (wifi[0].ssid.as_deref(), wifi[0].channel),
        (Some("lab"), Some(36))
    );
    assert_eq!(wifi[0].stations[0].signal_dbm, Some(-48));
    assert_eq!(m.update(Msg::InfoDue), vec![Cmd::Fetch(Request::Info)]);
    // No answer, or one that does not parse: what the page knew stays, and it asks again.
    for (status, body) in [(0, "network error"), (200, "{")] {
        assert_eq!(
            info_reply(&mut m, status, body),
            vec![Cmd::RefreshInfoIn(INFO_REFRESH_MS)]
        );
        assert_eq!(m.peer.as_ref().unwrap().wifi.len(), 1);
    }
    // Another screen: the timer stops; a late timer or answer asks nothing more.
    assert_eq!(
        m.update(Msg::Show(Screen::NewTest)),
        vec![Cmd::StopInfoRefresh]
    );
    assert!(m.update(Msg::InfoDue).is_empty());
    assert!(info_reply(&mut m, 200, &info_with_radio(-70)).is_empty());
    assert_eq!(
        m.peer.as_ref().unwrap().wifi[0].stations[0].signal_dbm,
        Some(-70)
    );
    // Back on the Peer screen: asked at once again.
    assert_eq!(
        m.update(Msg::Show(Screen::Peer)),
        vec![Cmd::Send(ClientMsg::ListTests), Cmd::Fetch(Request::Info)]
    );
    assert_eq!(Request::Info.path(), "/api/info");
    assert_eq!(Request::Info.method(), "GET");
}

#[test]
fn each_ends_wi_fi_link_runs_live_and_stays_with_the_result() {
    let mut m = connected();
    start_run(&mut m);
    m.update(Msg::Server(ServerMsg::Started {
        test_id: "t1".into(),
        target: "pc:5210".into(),
        spec: TestSpec::new(Protocol::Tcp),
    }));
    let r = crate::present::tests::wifi_result();
    let mut far = r.remote.clone().unwrap().intervals[0].clone();
    far.wifi = Some(Box::new(crate::present::tests::link_sample(-63, 1200.0)));
    for (role, report) in [
        (PeerRole::Client, r.local.intervals[0].clone()),
        (PeerRole::Server, far),
    ] {
        m.update(Msg::Server(ServerMsg::Interval {
            test_id: "t1".into(),
            role,
            report,
        }));
    }
    let run = m.run.as_ref().unwrap();
    let live = crate::live::live(&run.spec, &run.client, &run.server);
    assert!(live.link_here.unwrap().contains("-50 dBm, tx VHT MCS 9"));
    assert!(live.link_far.unwrap().contains("-63 dBm"));
    m.update(Msg::Server(ServerMsg::Result { result: r }));
    let Some(Shown::Test(result)) = &m.shown else {
        panic!("{:?}", m.shown)
    };
    let rows = crate::present::summary(result);
    assert!(rows.iter().any(|r| r.key == "wifi-this"), "{rows:?}");
}

#[cfg(feature = "plans")]
fn plan_row(label: &str) -> perfpeer_shared::plan_progress::CaseRow {
    perfpeer_shared::plan_progress::CaseRow {
        label: label.into(),
        metric: perfpeer_shared::verdict::Metric::Rx,
        headline: None,
        ran: 0,
        repeats: 1,
        result_ids: Vec::new(),
        outcome: None,
        verdict_line: "-".into(),
    }
}

#[cfg(feature = "plans")]
fn plan_msg(event: perfpeer_shared::plan_progress::PlanProgress) -> Msg {
    Msg::Server(ServerMsg::PlanEvent {
        plan_id: "p1".into(),
        event,
    })
}

#[cfg(feature = "plans")]
#[test]
fn a_plan_is_listed_run_followed_again_after_a_drop_and_ends_with_its_id() {
    use perfpeer_shared::plan_progress::{ListedPlan, PlanEnd, PlanProgress, PlanStatus};
    let mut m = connected();
    let cmds = m.update(Msg::Show(Screen::Plans));
    assert_eq!(cmds.first(), Some(&Cmd::Send(ClientMsg::Plans)), "{cmds:?}");
    assert_eq!(m.route(), Route::Plans);
    m.update(Msg::Server(ServerMsg::PlanList {
        plans: vec![ListedPlan {
            name: "quick".into(),
            title: "quick".into(),
            cases: 2,
            eta_s: 4,
            error: None,
        }],
    }));
    assert_eq!(m.plans.list.as_ref().map(Vec::len), Some(1));
    // Refused before it started: no run left.
    m.update(Msg::RunPlan {
        name: "gone".into(),
        tags: String::new(),
    });
    m.update(Msg::Server(ServerMsg::error(
        ErrorCode::UnknownTest,
        "no plan",
    )));
    assert!(m.plans.run.is_none());
    assert!(m.notice.is_some());
    // Tags the peer would refuse are refused here, nothing sent.
    let bad = m.update(Msg::RunPlan {
        name: "quick".into(),
        tags: "fw<1.2>".into(),
    });
    assert!(bad.is_empty(), "{bad:?}");
    assert!(m.plans.run.is_none());
    let notice = m.notice.as_ref().expect("said");
    assert!(notice.detail.starts_with("Tags: tag 1: "), "{notice:?}");
    assert_eq!(
        m.update(Msg::RunPlan {
            name: "quick".into(),
            tags: "fw=1.2.3, board=a7".into()
        }),
        vec![Cmd::Send(ClientMsg::Plan {
            name: "quick".into(),
            tags: vec!["fw=1.2.3".into(), "board=a7".into()]
        })]
    );
    let started = Msg::Server(ServerMsg::PlanStarted {
        plan_id: "p1".into(),
        name: "quick".into(),
        cases: 2,
        eta_s: 4,
    });
    let starting = |index| {
        plan_msg(PlanProgress::Starting {
            index,
            of: 2,
            label: "up".into(),
            repeat: 1,
            repeats: 1,
            eta_s: 4 - 2 * u64::from(index),
        })
    };
    let done = |index, label| {
        plan_msg(PlanProgress::CaseDone {
            index,
            row: plan_row(label),
        })
    };
    m.update(started.clone());
    m.update(starting(0));
    m.update(done(0, "up"));
    m.update(starting(1));
    let run = m.plans.run.as_ref().unwrap();
    assert_eq!(run.rows.len(), 1);
    assert_eq!(run.progress, "Case 2 of 2: up, about 2 s left");
    // A drop: the page attaches again and the replay rebuilds the rows.
    m.update(Msg::SocketClosed);
    m.update(Msg::SocketOpen);
    let cmds = m.update(welcome(true));
    assert!(
        cmds.contains(&Cmd::Send(ClientMsg::Attach {
            test_id: "p1".into()
        })),
        "{cmds:?}"
    );
    for msg in [
        started,
        starting(0),
        done(0, "up"),
        starting(1),
        done(1, "down"),
        done(1, "down"),
    ] {
        m.update(msg);
    }
    let labels: Vec<&str> = m
        .plans
        .run
        .as_ref()
        .unwrap()
        .rows
        .iter()
        .map(|r| r.label.as_str())
        .collect();
    assert_eq!(labels, ["up", "down"], "each case once");
    m.update(Msg::Server(ServerMsg::PlanEnded {
        plan_id: "p1".into(),
        end: PlanEnd {
            status: PlanStatus::Complete,
            cases: 2,
            planned_cases: 2,
            outcome: None,
            result_id: Some("r1".into()),
        },
    }));
    let run = m.plans.run.as_ref().unwrap();
    assert!(!run.running());
    assert_eq!(
        run.end.as_ref().and_then(|e| e.result_id.as_deref()),
        Some("r1")
    );
    assert_eq!(run.progress, "Done: 2 cases.");
    // A run that ended long before the page came back is gone: back to the list.
    let mut gone = m.clone();
    gone.plans.run.as_mut().unwrap().end = None;
    gone.update(Msg::Server(ServerMsg::error(
        ErrorCode::UnknownTest,
        "no test p1",
    )));
    assert!(gone.plans.run.is_none());
    // Back to the list: asked for again.
    assert_eq!(
        m.update(Msg::Show(Screen::Plans)),
        vec![Cmd::Send(ClientMsg::Plans)]
    );
    assert!(m.plans.run.is_none());
}

#[cfg(feature = "plans")]
#[test]
fn a_plan_tapped_among_the_running_tests_opens_on_the_plans_screen() {
    let mut m = connected();
    let cmds = m.update(Msg::AttachTo("p9".into()));
    assert_eq!(
        cmds.first(),
        Some(&Cmd::Send(ClientMsg::Attach {
            test_id: "p9".into()
        })),
        "{cmds:?}"
    );
    m.update(Msg::Server(ServerMsg::PlanStarted {
        plan_id: "p9".into(),
        name: "nightly".into(),
        cases: 3,
        eta_s: 60,
    }));
    assert_eq!(m.screen, Screen::Plans);
    assert!(m.attaching.is_none());
    assert!(m.follows_plan("p9"));
    // Tapped again: already followed, nothing sent.
    m.update(Msg::Show(Screen::Peer));
    let cmds = m.update(Msg::AttachTo("p9".into()));
    assert!(
        !cmds
            .iter()
            .any(|c| matches!(c, Cmd::Send(_) | Cmd::Connect)),
        "{cmds:?}"
    );
    assert_eq!(m.screen, Screen::Plans);
}
