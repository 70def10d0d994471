//! Reading and writing iperf3's control messages on a socket: state bytes, the cookie and
//! length-prefixed JSON, each with a time limit, each failure a typed [`Iperf3Error`].

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::codec::{COOKIE_LEN, CodecError, Cookie, State, frame_json, frame_len};

/// How long one control read may take outside the running phase.
pub(crate) const STEP_TIMEOUT: Duration = Duration::from_secs(10);

/// Why an iperf3 exchange failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Iperf3Error {
    /// Socket error.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The peer sent something that is not valid iperf3.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// The peer said nothing in time.
    #[error("the iperf3 peer did not answer in time ({0})")]
    Timeout(&'static str),
    /// The peer closed the control connection.
    #[error("the iperf3 peer closed the control connection ({0})")]
    Closed(&'static str),
    /// A stock server answered ACCESS_DENIED.
    #[error("the server is busy running a test. try again later")]
    Busy,
    /// A stock server reported an error.
    #[error("the iperf3 server reported error {code} (errno {errno})")]
    ServerError {
        /// iperf3's i_errno.
        code: i32,
        /// The OS errno.
        errno: i32,
    },
    /// The peer ended the test (signal) or sent a state we did not expect.
    #[error("{0}")]
    Aborted(String),
}

/// An iperf3 control connection.
pub(crate) struct Control {
    stream: TcpStream,
}

impl Control {
    /// Wraps a connected control socket (NODELAY, as iperf3 sets it).
    pub(crate) fn new(stream: TcpStream) -> Control {
        let _ = stream.set_nodelay(true);
        Control { stream }
    }

    /// Gives the socket back (a connection that turned out to be a data stream).
    pub(crate) fn into_inner(self) -> TcpStream {
        self.stream
    }

    /// The socket.
    pub(crate) fn stream(&self) -> &TcpStream {
        &self.stream
    }

    async fn timed<T>(
        &mut self,
        what: &'static str,
        f: impl AsyncFnOnce(&mut TcpStream) -> std::io::Result<T>,
    ) -> Result<T, Iperf3Error> {
        match tokio::time::timeout(STEP_TIMEOUT, f(&mut self.stream)).await {
            Err(_) => Err(Iperf3Error::Timeout(what)),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                Err(Iperf3Error::Closed(what))
            }
            Ok(r) => Ok(r?),
        }
    }

    /// Reads the 37-byte cookie.
    pub(crate) async fn read_cookie(&mut self) -> Result<Cookie, Iperf3Error> {
        let mut buf = [0u8; COOKIE_LEN];
        self.timed("cookie", async |s| s.read_exact(&mut buf).await)
            .await?;
        Ok(Cookie::from_bytes(&buf)?)
    }

    /// Writes raw bytes.
    pub(crate) async fn write(&mut self, bytes: &[u8]) -> Result<(), Iperf3Error> {
        self.timed("write", async |s| s.write_all(bytes).await)
            .await
    }

    /// Writes a state byte.
    pub(crate) async fn write_state(&mut self, state: State) -> Result<(), Iperf3Error> {
        self.write(&[state.byte()]).await
    }

    /// Reads a state byte (with the step time limit).
    pub(crate) async fn read_state(&mut self) -> Result<State, Iperf3Error> {
        let b = self.timed("state", async |s| s.read_u8().await).await?;
        Ok(State::from_byte(b)?)
    }

    /// Reads a state byte with no time limit; cancel-safe (one byte is read or none).
    pub(crate) async fn next_state(&mut self) -> Result<State, Iperf3Error> {
        let mut b = [0u8; 1];
        match self.stream.read(&mut b).await? {
            0 => Err(Iperf3Error::Closed("during the test")),
            _ => Ok(State::from_byte(b[0])?),
        }
    }

    /// Reads a JSON frame of at most `max` bytes.
    pub(crate) async fn read_json(&mut self, max: usize) -> Result<Vec<u8>, Iperf3Error> {
        let mut prefix = [0u8; 4];
        self.timed("JSON length", async |s| s.read_exact(&mut prefix).await)
            .await?;
        let len = frame_len(prefix, max)?;
        let mut body = vec![0u8; len];
        self.timed("JSON body", async |s| s.read_exact(&mut body).await)
            .await?;
        Ok(body)
    }

    /// Writes a JSON frame.
    pub(crate) async fn write_json(&mut self, value: &Value) -> Result<(), Iperf3Error> {
        self.write(&frame_json(value)).await
    }

    /// After SERVER_ERROR: the two error numbers (a short read means only the code was sent).
    pub(crate) async fn read_server_error(&mut self) -> Iperf3Error {
        let mut buf = [0u8; 8];
        let mut got = 0;
        while got < 8 {
            match tokio::time::timeout(Duration::from_secs(2), self.stream.read(&mut buf[got..]))
                .await
            {
                Ok(Ok(n)) if n > 0 => got += n,
                _ => break,
            }
        }
        let code = if got >= 4 {
            i32::from_be_bytes(buf[..4].try_into().expect("4 bytes"))
        } else {
            -1
        };
        let errno = if got >= 8 {
            i32::from_be_bytes(buf[4..].try_into().expect("4 bytes"))
        } else {
            0
        };
        Iperf3Error::ServerError { code, errno }
    }
}
