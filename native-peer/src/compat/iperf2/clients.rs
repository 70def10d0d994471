//! The TCP streams one client address has at an iperf 2 server at once, as iperf 2's server
//! groups them: their `[SUM]` when the last of two or more ends, and `-1` (`--singleclient`),
//! which serves one address at a time while the others wait for their turn.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::util::lock;

/// Streams that may wait for their turn under `-1` at once; more are refused.
const MAX_WAITING: usize = 64;

/// The sum of a client's streams that ran together.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClientSum {
    /// Streams in the group.
    pub streams: u32,
    /// Their bytes together.
    pub bytes: u64,
    /// From the first stream's start to the last one's end, seconds.
    pub seconds: f64,
}

#[derive(Debug)]
struct Group {
    active: u32,
    streams: u32,
    bytes: u64,
    since: Instant,
}

#[derive(Debug, Default)]
struct State {
    by_ip: HashMap<IpAddr, Group>,
    waiting: usize,
}

/// Every client address's group.
#[derive(Debug)]
pub struct Clients {
    state: Mutex<State>,
    turn: Notify,
    one_at_a_time: bool,
}

/// A stream's place in its client's group; the group's sum comes from [`Member::leave`].
#[derive(Debug)]
pub struct Member {
    clients: Arc<Clients>,
    ip: IpAddr,
    left: bool,
}

impl Clients {
    /// Groups for a server; with `one_at_a_time` (`-1`), one address is served at a time.
    pub fn new(one_at_a_time: bool) -> Arc<Clients> {
        Arc::new(Clients {
            state: Mutex::new(State::default()),
            turn: Notify::new(),
            one_at_a_time,
        })
    }

    /// Joins `ip`'s group, waiting under `-1` while another address is served; `Err` when too
    /// many wait already or the server shuts down.
    pub async fn join(
        self: &Arc<Self>,
        ip: IpAddr,
        shutdown: &CancellationToken,
    ) -> Result<Member, String> {
        let ip = ip.to_canonical();
        let mut counted_waiting = false;
        let joined = loop {
            let turn = self.turn.notified();
            tokio::pin!(turn);
            turn.as_mut().enable();
            {
                let mut state = lock(&self.state);
                let busy = self.one_at_a_time
                    && state
                        .by_ip
                        .iter()
                        .any(|(other, g)| *other != ip && g.active > 0);
                if !busy {
                    if counted_waiting {
                        state.waiting -= 1;
                    }
                    let group = state.by_ip.entry(ip).or_insert_with(|| Group {
                        active: 0,
                        streams: 0,
                        bytes: 0,
                        since: Instant::now(),
                    });
                    group.active += 1;
                    group.streams += 1;
                    break Ok(());
                }
                if !counted_waiting {
                    if state.waiting >= MAX_WAITING {
                        break Err(format!(
                            "-1: {MAX_WAITING} clients already wait for their turn"
                        ));
                    }
                    state.waiting += 1;
                    counted_waiting = true;
                }
            }
            tokio::select! {
                () = turn => {}
                () = shutdown.cancelled() => {
                    lock(&self.state).waiting -= 1;
                    break Err("the server is shutting down".into());
                }
            }
        };
        joined.map(|()| Member {
            clients: self.clone(),
            ip,
            left: false,
        })
    }
}

impl Member {
    /// Leaves the group with this stream's bytes; the group's sum if it was the last of two or
    /// more streams.
    pub fn leave(mut self, bytes: u64) -> Option<ClientSum> {
        self.left = true;
        self.clients.depart(self.ip, bytes)
    }
}

impl Clients {
    fn depart(&self, ip: IpAddr, bytes: u64) -> Option<ClientSum> {
        let mut state = lock(&self.state);
        let group = state.by_ip.get_mut(&ip)?;
        group.bytes += bytes;
        group.active -= 1;
        if group.active > 0 {
            return None;
        }
        let group = state.by_ip.remove(&ip)?;
        drop(state);
        self.turn.notify_waiters();
        (group.streams >= 2).then(|| ClientSum {
            streams: group.streams,
            bytes: group.bytes,
            seconds: group.since.elapsed().as_secs_f64(),
        })
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if !self.left {
            let _ = self.clients.depart(self.ip, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[tokio::test]
    async fn a_group_of_two_is_summed_when_its_last_stream_leaves() {
        let clients = Clients::new(false);
        let stop = CancellationToken::new();
        let a = clients.join(ip(1), &stop).await.unwrap();
        let b = clients.join(ip(1), &stop).await.unwrap();
        let lone = clients.join(ip(2), &stop).await.unwrap();
        assert_eq!(a.leave(100), None);
        let sum = b.leave(50).unwrap();
        assert_eq!((sum.streams, sum.bytes), (2, 150));
        assert_eq!(lone.leave(7), None, "one stream has no [SUM]");
    }

    #[tokio::test]
    async fn one_at_a_time_makes_other_addresses_wait() {
        let clients = Clients::new(true);
        let stop = CancellationToken::new();
        let first = clients.join(ip(1), &stop).await.unwrap();
        let same = clients.join(ip(1), &stop).await.unwrap();
        let other = {
            let clients = clients.clone();
            let stop = stop.clone();
            tokio::spawn(async move { clients.join(ip(2), &stop).await.map(|m| m.leave(1)) })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!other.is_finished(), "the second address waits");
        drop(first);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(
            !other.is_finished(),
            "until the first address's last stream ends"
        );
        drop(same);
        let served = tokio::time::timeout(Duration::from_secs(2), other).await;
        assert!(matches!(served, Ok(Ok(Ok(None)))), "{served:?}");
    }
}
