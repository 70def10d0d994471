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

/// What a running sweep tells its caller.
#[derive(Debug)]
pub enum SweepEvent {
    /// An event of the running size's test.
    Test(TestEvent),
    /// The size is done (its row, or why it has none).
    Point(SweepPoint),
}
