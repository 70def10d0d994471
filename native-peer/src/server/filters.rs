//! warp routes, one function each: `/ws` (control), `/api/info` (what this peer is), `/`
//! (the page). State reaches handlers through `with_state`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use perfpeer_shared::control::MAX_CONTROL_MESSAGE;
use warp::Filter;

use super::handlers;
use super::state::ServerState;

/// Every route of the control port.
pub fn routes(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (impl warp::Reply,), Error = Infallible> + Clone {
    ws(state.clone())
        .or(info(state))
        .or(index())
        .recover(handle_rejection)
}

fn with_state(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (Arc<ServerState>,), Error = Infallible> + Clone {
    warp::any().map(move || state.clone())
}

/// `GET /ws`: the control WebSocket.
pub fn ws(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone {
    warp::path("ws")
        .and(warp::path::end())
        .and(warp::ws())
        .and(with_state(state))
        .and(warp::addr::remote())
        .map(
            |ws: warp::ws::Ws, state: Arc<ServerState>, remote: Option<SocketAddr>| {
                let remote = remote.unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
                ws.max_message_size(MAX_CONTROL_MESSAGE)
                    .max_frame_size(MAX_CONTROL_MESSAGE)
                    .on_upgrade(move |socket| handlers::on_socket(socket, state, remote))
            },
        )
}

/// `GET /api/info`: the peer's self-description (no secrets).
pub fn info(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone {
    warp::path!("api" / "info")
        .and(warp::get())
        .and(with_state(state))
        .map(|s: Arc<ServerState>| warp::reply::json(&s.info))
}

/// `GET /`: a minimal page until the web front-end lands; it says what the peer is.
pub fn index() -> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone {
    warp::path::end().and(warp::get()).map(|| {
        warp::reply::html(concat!(
            "<!doctype html><meta charset=utf-8><meta name=viewport content='width=device-width'>",
            "<title>perfpeer</title><h1>perfpeer</h1>",
            "<p>This peer is running. Its control endpoint is <code>/ws</code>; <a href='/api/info'>/api/info</a> ",
            "describes it. Run a test from another machine with <code>perfpeer test &lt;this host&gt;</code>.</p>"
        ))
    })
}

async fn handle_rejection(err: warp::Rejection) -> Result<impl warp::Reply, Infallible> {
    let (code, message) = if err.is_not_found() {
        (warp::http::StatusCode::NOT_FOUND, "not found".to_string())
    } else {
        (warp::http::StatusCode::BAD_REQUEST, format!("{err:?}"))
    };
    let body = warp::reply::json(&serde_json::json!({ "error": message }));
    Ok(warp::reply::with_status(body, code))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::state::ServeConfig;
    use perfpeer_shared::control::PeerInfo;
    use std::time::Duration;
    use tokio_util::sync::CancellationToken;

    fn state() -> Arc<ServerState> {
        let config = ServeConfig {
            max_tests: 2,
            max_duration: Duration::from_secs(60),
            max_bitrate: None,
            token: Some("secret-token".into()),
        };
        let info = PeerInfo {
            name: "t".into(),
            data_port: 5211,
            ..Default::default()
        };
        ServerState::new(config, info, CancellationToken::new())
    }

    #[tokio::test]
    async fn info_and_not_found() {
        let api = routes(state());
        let res = warp::test::request().path("/api/info").reply(&api).await;
        assert_eq!(res.status(), 200);
        let body: serde_json::Value = serde_json::from_slice(res.body()).unwrap();
        assert_eq!(body["data_port"], 5211);
        assert!(!String::from_utf8_lossy(res.body()).contains("secret-token"));
        let res = warp::test::request().path("/nope").reply(&api).await;
        assert_eq!(res.status(), 404);
    }
}
