//! What a client run tells its caller while it goes on: a test's live events, and a packet-size
//! sweep's (its running size's test events and each size's row). The CLI prints them; a
//! browser's run logs them for its followers.

use perfpeer_shared::report::{IntervalReport, PeerRole, SocketInfo};
use perfpeer_shared::sweep::SweepPoint;

/// What happens during a test, for live display.
#[derive(Debug, Clone)]
pub enum TestEvent {
    /// Streams are up and measurement starts.
    Started {
        /// Test id.
        test_id: String,
        /// `ip:port` of the far peer's control endpoint.
        server_addr: String,
        /// The client's data sockets.
        sockets: Vec<SocketInfo>,
    },
    /// A peer stored the test: its result id and page.
    Stored {
        /// The result id (`perfpeer results show ID` there).
        id: String,
        /// `http://peer:port/r/<id>`.
        url: String,
    },
    /// The far end's own output of the test (a stock iperf3 server's, when asked for with
    /// `--get-server-output`).
    FarEndOutput {
        /// As text.
        text: Option<String>,
        /// As its `-J` object.
        json: Option<serde_json::Value>,
    },
    /// An interval measured at one end.
    Interval {
        /// Which end.
        role: PeerRole,
        /// The interval.
        report: IntervalReport,
    },
}

impl TestEvent {
    /// That the peer at control address `peer` kept the test under result id `id`, with its
    /// page; `None` for an id that is not 1 to 64 hex digits (a peer's word is not printed as
    /// a link unchecked).
    pub fn stored(peer: impl std::fmt::Display, id: String) -> Option<TestEvent> {
        let plausible = (1..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit());
        plausible.then(|| TestEvent::Stored {
            url: format!("http://{peer}/r/{id}"),
            id,
        })
    }
}

/// What a running sweep tells its caller.
#[derive(Debug)]
pub enum SweepEvent {
    /// An event of the running size's test.
    Test(TestEvent),
    /// The size is done (its row, or why it has none).
    Point(SweepPoint),
}

#[cfg(test)]
mod tests {
    use super::TestEvent;

    #[test]
    fn only_a_hex_id_becomes_a_link() {
        let Some(TestEvent::Stored { id, url }) = TestEvent::stored("10.0.0.2:5210", "00ff".into())
        else {
            panic!("a hex id is a link");
        };
        assert_eq!(
            (id.as_str(), url.as_str()),
            ("00ff", "http://10.0.0.2:5210/r/00ff")
        );
        for bad in ["", "../x", "0g", &"a".repeat(65)] {
            assert!(TestEvent::stored("h", bad.to_string()).is_none(), "{bad}");
        }
    }
}
