//! Peer↔peer sessions: agree on a test over the control channel, set up the data streams, run
//! the engine at both ends and exchange final reports.
//!
//! - [`channel`]: the control connection as queues of text frames (any WebSocket library).
//! - [`client`]: the end that starts a test (`perfpeer test`, or a browser's `run`); the end that
//!   accepts one is `server::far_end`, above this layer.
//! - [`data_connect`]: the client opening its data streams.
//! - [`driver`]: one client run against any [`driver::FarEnd`] (a perfpeer peer here; the
//!   stock tools' in `compat`): measure, watch the far end, end, finals, the result.
//! - [`far_ends`]: the far ends that are perfpeer peers (one, or a group's receivers) as one
//!   type for the driver, and the runs against them (`run_test`, `run_group`).
//! - [`events`]: what a client run tells its caller while it goes on (tests and sweeps).
//! - [`measure`]: one end's measurement (engine + sampler + CPU) from begin to final report.
//! - [`multicast`]: a test sent to a multicast group, each receiving peer asked over its own
//!   control connection and its report collected (`group_receivers`).
//! - [`remote`]: a test between two other peers, asked of one over its `/ws` and followed
//!   (`perfpeer test --from A B`).

pub(crate) mod channel;
pub(crate) mod client;
pub(crate) mod data_connect;
pub(crate) mod driver;
pub(crate) mod events;
pub(crate) mod far_ends;
pub(crate) mod measure;
pub(crate) mod multicast;
pub(crate) mod remote;
pub(crate) mod target;

use perfpeer_shared::control::ErrorCode;

/// Why a session failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The target could not be reached or resolved.
    #[error("cannot reach {target}: {reason}")]
    Unreachable {
        /// The address as given.
        target: String,
        /// What went wrong.
        reason: String,
    },
    /// The other end refused the request.
    #[error("{message}")]
    Refused {
        /// Its error code.
        code: ErrorCode,
        /// Its explanation.
        message: String,
    },
    /// The other end went away.
    #[error("the other peer went away: {0}")]
    PeerLost(String),
    /// A frame that is not a valid control message.
    #[error("bad control message: {0}")]
    BadMessage(String),
    /// The control protocol was broken (wrong message, WebSocket error).
    #[error("control protocol error: {0}")]
    Protocol(String),
    /// A data stream could not be set up or failed.
    #[error("data stream: {0}")]
    Data(String),
    /// Something in this peer failed.
    #[error("internal error: {0}")]
    Internal(String),
}

impl SessionError {
    /// The code to put in an `error` message for this failure.
    pub fn code(&self) -> ErrorCode {
        match self {
            SessionError::Unreachable { .. } => ErrorCode::Unreachable,
            SessionError::Refused { code, .. } => *code,
            SessionError::PeerLost(_) => ErrorCode::PeerLost,
            SessionError::BadMessage(_) => ErrorCode::BadMessage,
            SessionError::Protocol(_) => ErrorCode::UnexpectedMessage,
            SessionError::Data(_) => ErrorCode::DataPlane,
            SessionError::Internal(_) => ErrorCode::Internal,
        }
    }
}
