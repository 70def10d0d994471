//! A control channel as two queues of text frames, independent of which WebSocket library
//! carries them: the server side adapts warp's socket, the client side tokio-tungstenite's.
//! Each adapter pings every second so either end notices a vanished peer within seconds.

use std::pin::Pin;
use std::time::Duration;

use futures_util::{Sink, SinkExt, Stream, StreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::SessionError;

/// How often each end pings the other.
pub(crate) const PING_EVERY: Duration = Duration::from_secs(1);
/// Silence after which the other end counts as gone.
pub(crate) const PEER_TIMEOUT: Duration = Duration::from_secs(5);
/// Outgoing frames queued before a slow reader is dropped.
const OUT_QUEUE: usize = 256;

/// What the reader side of an adapter passes on.
#[derive(Debug)]
pub(crate) enum Frame {
    /// A text frame.
    Text(String),
    /// A ping or pong: the other end is alive.
    Alive,
    /// A frame that is not text (binary): answered, not fatal.
    Invalid(String),
    /// The WebSocket broke (protocol error, oversized frame): fatal.
    Broken(String),
}

/// Fixed words for a message that could not be read, with where it went wrong: never the
/// message's own text (serde's words quote the offending value, and these words go back to the
/// sender and into logs). A missing field is named, since its name is this peer's own word.
fn unreadable_message(e: &serde_json::Error) -> String {
    use serde_json::error::Category;
    let what = match e.classify() {
        Category::Syntax => "not JSON",
        Category::Eof => "JSON cut short",
        Category::Io => "unreadable",
        Category::Data => {
            let words = e.to_string();
            match words
                .strip_prefix("missing field `")
                .and_then(|rest| rest.split_once('`'))
            {
                Some((field, _)) if field.len() <= 32 => {
                    return format!(
                        "a message without its field {field} (line {}, column {})",
                        e.line(),
                        e.column()
                    );
                }
                _ => "a type, field or value this peer does not take",
            }
        }
    };
    format!("{what} (line {}, column {})", e.line(), e.column())
}

/// One end of a control connection.
pub(crate) struct ControlChannel {
    incoming: mpsc::Receiver<Frame>,
    outgoing: mpsc::Sender<String>,
    closed: CancellationToken,
    last_heard: tokio::time::Instant,
}

/// What the writer task hands a socket.
enum Outgoing {
    /// A text frame.
    Text(String),
    /// A ping frame.
    Ping,
}

/// The generic message operations a WebSocket library must offer the adapter.
pub(crate) trait WsMessage: Sized + Send + 'static {
    /// A text frame.
    fn text(s: String) -> Self;
    /// A ping frame.
    fn ping() -> Self;
    /// What the frame is.
    fn classify(self) -> Option<Frame>;
}

impl ControlChannel {
    /// Wraps a WebSocket (split into its stream and sink) in reader and writer tasks.
    pub(crate) fn spawn<M, S, E1, E2>(socket: S) -> ControlChannel
    where
        M: WsMessage,
        S: Stream<Item = Result<M, E1>> + Sink<M, Error = E2> + Send + 'static,
        E1: std::fmt::Display + Send,
        E2: std::fmt::Display + Send,
    {
        // Each library's socket seen as frames in and out, its types erased: the reader and
        // writer tasks below are compiled once, not once per WebSocket library.
        let (sink, stream) = socket.split();
        let stream = stream.map(|next| match next {
            Ok(msg) => msg.classify(),
            Err(e) => Some(Frame::Broken(e.to_string())),
        });
        let sink = sink.sink_map_err(|_| ()).with(|out: Outgoing| {
            std::future::ready(Ok(match out {
                Outgoing::Text(text) => M::text(text),
                Outgoing::Ping => M::ping(),
            }))
        });
        Self::spawn_erased(Box::pin(stream), Box::pin(sink))
    }

    /// [`spawn`](Self::spawn)'s reader and writer tasks over a socket's frames: `None` from
    /// `stream` is a close frame.
    fn spawn_erased(
        mut stream: Pin<Box<dyn Stream<Item = Option<Frame>> + Send>>,
        mut sink: Pin<Box<dyn Sink<Outgoing, Error = ()> + Send>>,
    ) -> ControlChannel {
        let (in_tx, incoming) = mpsc::channel(64);
        let (outgoing, mut out_rx) = mpsc::channel::<String>(OUT_QUEUE);
        let closed = CancellationToken::new();
        let reader_closed = closed.clone();
        crate::util::spawn(async move {
            loop {
                let next = tokio::select! {
                    _ = reader_closed.cancelled() => break,
                    n = stream.next() => n,
                };
                let frame = match next {
                    Some(Some(f)) => f,
                    Some(None) => break, // close frame
                    None => break,
                };
                let fatal = matches!(frame, Frame::Broken(_));
                if in_tx.send(frame).await.is_err() || fatal {
                    break;
                }
            }
            reader_closed.cancel();
        });
        let writer_closed = closed.clone();
        crate::util::spawn(async move {
            let mut ping = tokio::time::interval(PING_EVERY);
            let mut broken = false;
            loop {
                let msg = tokio::select! {
                    _ = writer_closed.cancelled() => break,
                    _ = ping.tick() => Outgoing::Ping,
                    m = out_rx.recv() => match m {
                        Some(text) => Outgoing::Text(text),
                        None => break,
                    },
                };
                if sink.send(msg).await.is_err() {
                    broken = true;
                    break;
                }
            }
            // Flush what is queued (a final error or result), then close — not on a sink that
            // failed: it is broken, and its error mapping (`sink_map_err`, used once) panics
            // when polled again.
            while let (false, Ok(text)) = (broken, out_rx.try_recv()) {
                broken = sink.send(Outgoing::Text(text)).await.is_err();
            }
            if !broken {
                let _ = sink.close().await;
            }
            writer_closed.cancel();
        });
        ControlChannel {
            incoming,
            outgoing,
            closed,
            last_heard: tokio::time::Instant::now(),
        }
    }

    /// Queues a message; fails if the connection is gone or the reader is too slow.
    pub(crate) fn send(&self, msg: &impl Serialize) -> Result<(), SessionError> {
        let text = serde_json::to_string(msg).map_err(|e| SessionError::Internal(e.to_string()))?;
        self.outgoing.try_send(text).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => {
                SessionError::PeerLost("control connection too slow".into())
            }
            mpsc::error::TrySendError::Closed(_) => {
                SessionError::PeerLost("control connection closed".into())
            }
        })
    }

    /// Next text frame; pings and pongs only reset the silence timer. Cancel-safe: the silence
    /// limit counts from the last frame heard, not from this call.
    pub(crate) async fn recv_text(&mut self) -> Result<String, SessionError> {
        loop {
            let deadline = self.last_heard + PEER_TIMEOUT;
            let frame = match tokio::time::timeout_at(deadline, self.incoming.recv()).await {
                Err(_) => {
                    return Err(SessionError::PeerLost(format!(
                        "no word for {} s",
                        PEER_TIMEOUT.as_secs()
                    )));
                }
                Ok(None) => return Err(SessionError::PeerLost("control connection closed".into())),
                Ok(Some(frame)) => frame,
            };
            self.last_heard = tokio::time::Instant::now();
            match frame {
                Frame::Alive => continue,
                Frame::Text(t) => return Ok(t),
                Frame::Invalid(e) => return Err(SessionError::BadMessage(e)),
                Frame::Broken(e) => {
                    return Err(SessionError::PeerLost(format!("WebSocket error: {e}")));
                }
            }
        }
    }

    /// Next message of type `T`; malformed text is [`SessionError::BadMessage`].
    pub(crate) async fn recv<T: DeserializeOwned>(&mut self) -> Result<T, SessionError> {
        let text = self.recv_text().await?;
        if text.len() > perfpeer_shared::control::MAX_CONTROL_MESSAGE {
            return Err(SessionError::BadMessage(format!(
                "{} bytes is over the limit of {}",
                text.len(),
                perfpeer_shared::control::MAX_CONTROL_MESSAGE
            )));
        }
        // Any key order: a script's hand-written message may have its `type` last.
        perfpeer_shared::tagged::from_json(&text)
            .map_err(|e| SessionError::BadMessage(unreadable_message(&e)))
    }

    /// Waits (up to `max`) for the other end to close, reading and dropping what it sends, then
    /// closes. Used after a final error reply, so the client reads the reply before the socket
    /// goes away instead of meeting a reset.
    pub(crate) async fn linger(&mut self, max: Duration) {
        let _ = tokio::time::timeout(max, async { while self.incoming.recv().await.is_some() {} })
            .await;
        self.close();
    }

    /// Closes the connection; frames already queued are still sent first.
    pub(crate) fn close(&self) {
        self.closed.cancel();
    }
}

impl Drop for ControlChannel {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words_for(text: &str) -> String {
        let e = perfpeer_shared::tagged::from_json::<perfpeer_shared::control::ClientMsg>(text)
            .unwrap_err();
        unreadable_message(&e)
    }

    #[test]
    fn an_unreadable_message_is_described_without_its_text() {
        let secret = "x".repeat(5000) + "<script>";
        for text in [
            format!(r#"{{"type":"{secret}"}}"#),
            format!(r#"{{"type":"open","spec":"{secret}"}}"#),
            format!(r#"{{"type":"hello","protocol_version":"{secret}"}}"#),
            secret.clone(),
            format!(r#"{{"type":"open","{secret}":1"#),
        ] {
            let words = words_for(&text);
            assert!(words.len() < 120, "{words}");
            assert!(
                !words.contains("xxx") && !words.contains("script"),
                "{words}"
            );
        }
        assert!(words_for(r#"{"type":"open"}"#).contains("field spec"));
    }
}
