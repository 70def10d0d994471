//! A test sent to a multicast group: every receiver is a perfpeer peer asked over its own
//! control connection to join the group and count the flow from this end's address and port;
//! this end sends one UDP stream to the group; at the end each receiver's final report comes
//! back over its control connection, and the result carries them all (`group_receivers`).
//! A receiver that cannot be reached, refuses or goes away is a row with its reason; the test
//! runs while at least one receiver listens.

use std::sync::Arc;

use perfpeer_shared::control::ErrorCode;
use perfpeer_shared::multicast::{GroupReceiver, MAX_RECEIVERS};
use perfpeer_shared::report::{PeerRole, SideReport, StreamRole};
use perfpeer_shared::spec::{TestSpec, ValidSpec};
use socket2::SockRef;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::Poll;
use tokio::sync::mpsc;

use super::SessionError;
use super::channel::ControlChannel;
use super::client::{ClientOptions, PerfpeerFarEnd, connect_from, hello, open_receiver};
use super::driver::{FarEnd, FarEvent, Ready};
use super::events::TestEvent;
use super::measure::Measurement;
use super::target::{Family, resolve};
use crate::engine::{DataSocket, StreamSetup, WireOptions};

/// Sets up the multicast test `spec` (its `multicast` set) with `receivers` (host[:port] of
/// each receiving peer's control port), up to every receiver's `ready` and `begin`: the group's
/// far end, this end's sending stream, and the spec as the receivers were asked it (with the
/// sending port). `far_ends::run_group` drives it.
pub(crate) async fn open_group(
    receivers: &[String],
    spec: &ValidSpec,
    opts: &ClientOptions,
) -> Result<(GroupFarEnd, Ready, ValidSpec), SessionError> {
    let refused = |message: String| SessionError::Refused {
        code: ErrorCode::InvalidSpec,
        message,
    };
    let group = spec
        .multicast
        .ok_or_else(|| SessionError::Internal("a group test without its group".into()))?;
    if receivers.is_empty() || receivers.len() > MAX_RECEIVERS {
        return Err(refused(format!(
            "a multicast test takes 1 to {MAX_RECEIVERS} receiving peers, got {}",
            receivers.len()
        )));
    }
    // Receivers are reached over the group's family: their view of this end's address is
    // what they take the flow from.
    let family = Some(if group.group.is_ipv6() {
        Family::V6
    } else {
        Family::V4
    });
    if opts.family.is_some_and(|f| Some(f) != family) {
        return Err(refused(format!(
            "the group {} is not of the address family asked for",
            group.group
        )));
    }
    // One after another (a receiver that does not answer costs its connect timeout): a join
    // of futures would be one more copy of this code in a router's binary.
    let mut connected = Vec::with_capacity(receivers.len());
    for peer in receivers {
        connected.push(connect_receiver(peer, family, opts).await);
    }
    let Some(local) = opts.bind.or_else(|| {
        connected
            .iter()
            .find_map(|c| c.as_ref().ok().map(|(_, _, local)| local.ip()))
    }) else {
        return Err(first_error(connected.into_iter().map(|c| c.err())));
    };
    // The sending socket first: its port goes to every receiver.
    let socket = crate::multicast::sender_socket(
        group.group,
        group.port,
        group.ttl,
        local.to_canonical(),
        opts.device.as_deref(),
    )
    .map_err(|e| {
        SessionError::Data(format!(
            "cannot send to {} from {local}: {}",
            group.address(),
            crate::util::plain_error(&e)
        ))
    })?;
    let _ = crate::engine::sockopt::apply(SockRef::from(&socket), spec, group.group.is_ipv6());
    let mut asked = TestSpec::clone(spec);
    if let Some(m) = asked.multicast.as_mut() {
        m.sender_port = socket
            .local_addr()
            .map_err(|e| SessionError::Data(e.to_string()))?
            .port();
    }
    let asked = ValidSpec::new(asked).map_err(|e| SessionError::Internal(e.to_string()))?;
    let mut members: Vec<Member> = Vec::with_capacity(receivers.len());
    for (peer, connected) in receivers.iter().zip(connected) {
        let opened = match connected {
            Ok((chan, server, _)) => open_receiver(chan, server, &asked).await,
            Err(e) => Err(e),
        };
        members.push(match opened {
            Ok((far, _)) => Member::listening(peer, far),
            Err(e) => Member::failed(peer, e.to_string()),
        });
    }
    if members.iter().all(|m| m.far.is_none()) {
        let why = members
            .iter()
            .map(|m| format!("{}: {}", m.peer, m.error.as_deref().unwrap_or("")))
            .collect::<Vec<_>>()
            .join("; ");
        return Err(SessionError::Refused {
            code: ErrorCode::Unreachable,
            message: format!("no receiver joined the group ({why})"),
        });
    }
    for m in &mut members {
        if let Some(Err(e)) = m.far.as_mut().map(|f| f.begin()) {
            m.fail(e.to_string());
        }
    }
    let (id, _) = asked.stream_plan()[0];
    let ready = Ready {
        test_id: crate::engine::wire::cookie_to_hex(&crate::engine::wire::random_cookie())[..12]
            .to_string(),
        server_addr: group.address(),
        setups: vec![StreamSetup {
            id,
            role: StreamRole::Sender,
            socket: DataSocket::Udp(Arc::new(socket)),
        }],
        wire: WireOptions::default(),
        role: PeerRole::Client,
    };
    Ok((GroupFarEnd { members }, ready, asked))
}

/// A receiving peer, connected and said hello to: its channel, its address, and the local
/// address this end reached it from.
async fn connect_receiver(
    peer: &str,
    family: Option<Family>,
    opts: &ClientOptions,
) -> Result<(ControlChannel, SocketAddr, SocketAddr), SessionError> {
    let server = resolve(peer, family).await?;
    let (mut chan, local) = connect_from(
        server,
        peer,
        opts.bind,
        opts.device.as_deref(),
        opts.connect_timeout,
    )
    .await?;
    hello(&mut chan, opts.token.clone()).await?;
    Ok((chan, server, local))
}

/// The first error among `errors` (there is one: nothing connected).
fn first_error(errors: impl Iterator<Item = Option<SessionError>>) -> SessionError {
    errors
        .flatten()
        .next()
        .unwrap_or_else(|| SessionError::Internal("no receiver".into()))
}

/// One receiving peer of the group.
struct Member {
    /// As it was named.
    peer: String,
    /// Its control connection while it listens.
    far: Option<PerfpeerFarEnd>,
    report: Option<SideReport>,
    /// Where it kept the test: its result id and page.
    kept: Option<(String, String)>,
    error: Option<String>,
}

impl Member {
    fn listening(peer: &str, far: PerfpeerFarEnd) -> Member {
        Member {
            peer: peer.to_string(),
            far: Some(far),
            report: None,
            kept: None,
            error: None,
        }
    }

    fn failed(peer: &str, why: String) -> Member {
        Member {
            peer: peer.to_string(),
            far: None,
            report: None,
            kept: None,
            error: Some(why),
        }
    }

    /// It stopped listening (`why`): its control connection is closed.
    fn fail(&mut self, why: String) {
        self.far = None;
        self.error.get_or_insert(why);
    }
}

/// The group's receivers as the far end of the test.
pub(crate) struct GroupFarEnd {
    members: Vec<Member>,
}

impl FarEnd for GroupFarEnd {
    /// Receivers' intervals are kept with each (not shown live: several far ends would
    /// interleave); one that goes away becomes a row with its reason, and the test ends only
    /// when none listens.
    async fn next_event(&mut self) -> FarEvent {
        loop {
            let (index, event) = {
                type Next<'a> = Pin<Box<dyn Future<Output = (usize, FarEvent)> + Send + 'a>>;
                let mut live: Vec<Next<'_>> = self
                    .members
                    .iter_mut()
                    .enumerate()
                    .filter_map(|(i, m)| m.far.as_mut().map(|far| (i, far)))
                    .map(|(i, far)| -> Next<'_> {
                        Box::pin(async move { (i, far.next_event().await) })
                    })
                    .collect();
                if live.is_empty() {
                    return FarEvent::Ended("every receiver of the group went away".into());
                }
                // The first receiver with something to say (each one's wait is cancel-safe).
                std::future::poll_fn(|cx| {
                    live.iter_mut()
                        .find_map(|next| match next.as_mut().poll(cx) {
                            Poll::Ready(said) => Some(said),
                            Poll::Pending => None,
                        })
                        .map_or(Poll::Pending, Poll::Ready)
                })
                .await
            };
            if let FarEvent::Ended(why) = event {
                self.members[index].fail(why);
            }
        }
    }

    /// A time-limited test ends at its time; one by bytes when this end sent them.
    fn done(&mut self, m: &Measurement, spec: &TestSpec) -> bool {
        spec.total_time().is_none() && m.engine().senders_done()
    }

    async fn end(&mut self, measured: &Measurement) -> Result<(), SessionError> {
        for m in &mut self.members {
            if let Some(far) = m.far.as_mut()
                && let Err(e) = far.end(measured).await
            {
                m.fail(e.to_string());
            }
        }
        Ok(())
    }

    fn finals_after_cancel(&self) -> bool {
        true
    }

    /// Each listening receiver's final report, asked of all at once.
    async fn finals(
        &mut self,
        local: &mut SideReport,
        _events: &mpsc::UnboundedSender<TestEvent>,
    ) -> Result<Option<SideReport>, String> {
        // One after another: each drained its stream when told to stop, so each answers at once.
        let mut answers = Vec::with_capacity(self.members.len());
        for m in &mut self.members {
            let Some(far) = m.far.as_mut() else {
                answers.push(None);
                continue;
            };
            let (tx, mut stored) = mpsc::unbounded_channel();
            let mut mine = local.clone();
            let report = far.finals(&mut mine, &tx).await;
            // Its last intervals come first (kept with its report); then where it kept the test.
            let mut id = None;
            while let Ok(event) = stored.try_recv() {
                if let TestEvent::Stored { id: kept, url } = event {
                    id = Some((kept, url));
                }
            }
            answers.push(Some((report, id)));
        }
        for (m, answer) in self.members.iter_mut().zip(answers) {
            match answer {
                // Where each receiver kept the test goes with its row, not in the one
                // "Result page" line of a unicast test.
                Some((Ok(report), kept)) => {
                    m.report = report;
                    m.kept = kept;
                    if let Some(why) = m.far.as_ref().and_then(|f| f.far_stream_errors()) {
                        m.error = Some(why);
                    }
                    m.far = None;
                }
                Some((Err(why), _)) => m.fail(why),
                None => {}
            }
        }
        Ok(None)
    }

    /// A receiver with no report (or whose stream broke) makes the result partial.
    fn far_stream_errors(&self) -> Option<String> {
        let failed: Vec<String> = self
            .members
            .iter()
            .filter_map(|m| m.error.as_ref().map(|why| format!("{}: {why}", m.peer)))
            .collect();
        (!failed.is_empty())
            .then(|| format!("receivers did not all report ({})", failed.join("; ")))
    }

    fn group_receivers(&mut self) -> Vec<GroupReceiver> {
        self.members
            .iter_mut()
            .map(|m| {
                let (result_id, result_url) = m.kept.take().unzip();
                GroupReceiver {
                    peer: m.peer.clone(),
                    report: m.report.take(),
                    result_id,
                    result_url,
                    error: m.error.clone(),
                }
            })
            .collect()
    }
}
