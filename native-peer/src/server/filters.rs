//! warp routes, one function each: `/ws` (control), `/api/info` (what this peer is),
//! `/metrics` (Prometheus), `/` and `/assets/…` (the embedded web UI). State reaches handlers
//! through `with_state`.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use perfpeer_shared::control::MAX_CONTROL_MESSAGE;
use warp::Filter;

use super::http::ClientAddr;
use super::metrics::Refusal;
use super::state::ServerState;
use super::{assets, guard, handlers};
use crate::admission::{Admission, Caps};

/// Every route of the control port, behind the `Host`/`Origin` guard; every refusal is a short
/// JSON error.
pub(crate) fn routes(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (impl warp::Reply,), Error = Infallible> + Clone {
    // Each route a boxed filter answering a plain `Response`: warp's `Or` futures and reply
    // conversions are then compiled for one type, not nested around every route's own (41 KB
    // of a MIPS build in three nested copies).
    let host_policy = state.host_policy.clone();
    let routes = boxed(ws(state.clone()))
        .or(super::results::routes(state.clone()))
        .unify()
        .or(boxed(info(state.clone())))
        .unify()
        .or(boxed(metrics(state)))
        .unify()
        .or(boxed(index()))
        .unify()
        .or(boxed(static_files()))
        .unify();
    guard::checked(host_policy)
        .and(routes)
        .recover(handle_rejection)
}

/// `route` with its type erased, answering a plain `Response`.
fn boxed(
    route: impl Filter<Extract = (impl warp::Reply + 'static,), Error = warp::Rejection>
    + Clone
    + Send
    + Sync
    + 'static,
) -> warp::filters::BoxedFilter<(warp::reply::Response,)> {
    route.map(warp::Reply::into_response).boxed()
}

fn with_state(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (Arc<ServerState>,), Error = Infallible> + Clone {
    warp::any().map(move || state.clone())
}

/// WebSockets held at once, from all sources and from one (a browser tab keeps one; a
/// perfpeer client one per test).
const WS_CAPS: Caps = Caps {
    total: 256,
    per_source: 32,
};

/// A WebSocket refused because its source holds its share.
#[derive(Debug)]
pub(crate) struct TooManySockets(crate::admission::Refusal);
impl warp::reject::Reject for TooManySockets {}

/// `GET /ws`: the control WebSocket.
pub(crate) fn ws(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone {
    let sockets = Admission::new(WS_CAPS);
    warp::path("ws")
        .and(warp::path::end())
        .and(warp::ws())
        .and(with_state(state))
        .and(warp::ext::optional::<ClientAddr>())
        .and_then(
            move |ws: warp::ws::Ws, state: Arc<ServerState>, remote: Option<ClientAddr>| {
                let sockets = sockets.clone();
                async move {
                    let remote =
                        remote.map_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)), |c| c.0);
                    let place = sockets.admit(remote.ip()).map_err(|refusal| {
                        state.metrics.refused(Refusal::Admission);
                        warp::reject::custom(TooManySockets(refusal))
                    })?;
                    Ok::<_, warp::Rejection>(
                        ws.max_message_size(MAX_CONTROL_MESSAGE)
                            .max_frame_size(MAX_CONTROL_MESSAGE)
                            .on_upgrade(move |socket| {
                                let tasks = state.tasks.clone();
                                tasks
                                    .track_future(handlers::on_socket(socket, state, remote, place))
                            }),
                    )
                }
            },
        )
}

/// `GET /api/info`: the peer's self-description (no secrets).
pub(crate) fn info(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone {
    warp::path!("api" / "info")
        .and(warp::get())
        .and(with_state(state))
        .map(|s: Arc<ServerState>| warp::reply::json(&s.peer_info()))
}

/// `GET /metrics`: Prometheus's text exposition of the peer's counters and last tests, with
/// the token unless `--metrics-open`. A GET with no body; the page is bounded by the caps of
/// [`super::metrics`].
pub(crate) fn metrics(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone {
    let open = state.config.metrics_open;
    warp::path!("metrics")
        .and(warp::get())
        .and(super::results::auth_unless(state, open))
        .map(|s: Arc<ServerState>| {
            let mut page = warp::reply::Response::new(s.metrics_page().into());
            page.headers_mut().insert(
                warp::http::header::CONTENT_TYPE,
                warp::http::HeaderValue::from_static(perfpeer_proto::prometheus::CONTENT_TYPE),
            );
            page
        })
}

/// `GET /`: the web UI's page (embedded; see [`super::assets`]).
pub(crate) fn index() -> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone
{
    warp::path::end()
        .and(warp::get())
        .and(warp::header::optional::<String>("accept-encoding"))
        .map(|enc: Option<String>| assets::response(assets::index(), enc.as_deref()))
}

/// `GET /assets/<version>/<file>`: the UI's scripts, wasm and styles, cached for a year (the
/// version in the path changes with their content).
pub(crate) fn static_files()
-> impl Filter<Extract = (impl warp::Reply,), Error = warp::Rejection> + Clone {
    warp::path("assets")
        .and(warp::get())
        .and(warp::path::tail())
        .and(warp::header::optional::<String>("accept-encoding"))
        .and_then(|tail: warp::path::Tail, enc: Option<String>| async move {
            match assets::find(&format!("assets/{}", tail.as_str())) {
                Some(asset) => Ok(assets::response(asset, enc.as_deref())),
                None => Err(warp::reject::not_found()),
            }
        })
}

async fn handle_rejection(err: warp::Rejection) -> Result<impl warp::Reply, Infallible> {
    use warp::Reply;
    use warp::http::StatusCode;
    // Fixed words per kind: never the rejection's Debug text, never the client's input.
    let (code, message) = if err.is_not_found() {
        (StatusCode::NOT_FOUND, "not found")
    } else if err.find::<super::results::Unauthorized>().is_some() {
        (
            StatusCode::UNAUTHORIZED,
            "this needs the peer's access token (Authorization: Bearer …)",
        )
    } else if err.find::<super::token::TooManyFailures>().is_some() {
        (
            StatusCode::TOO_MANY_REQUESTS,
            "too many wrong tokens from this address: wait a minute",
        )
    } else if err.find::<guard::ForeignHost>().is_some() {
        (
            StatusCode::MISDIRECTED_REQUEST,
            "this peer does not answer to that host name (start it with --host-name NAME)",
        )
    } else if err.find::<guard::CrossOrigin>().is_some() {
        (
            StatusCode::FORBIDDEN,
            "requests from another site's page are refused (start the peer with --allow-origin URL)",
        )
    } else if let Some(TooManySockets(refusal)) = err.find::<TooManySockets>() {
        // Counted where it was refused (`ws`).
        let words = match refusal {
            crate::admission::Refusal::SourceFull => "too many WebSockets from this address",
            crate::admission::Refusal::Full => "too many WebSockets",
        };
        (StatusCode::TOO_MANY_REQUESTS, words)
    } else if err.find::<warp::reject::MethodNotAllowed>().is_some() {
        (StatusCode::METHOD_NOT_ALLOWED, "method not allowed")
    } else if err.find::<warp::reject::PayloadTooLarge>().is_some() {
        (StatusCode::PAYLOAD_TOO_LARGE, "request body too large")
    } else {
        (StatusCode::BAD_REQUEST, "bad request")
    };
    let body = warp::reply::json(&perfpeer_shared::control::ApiError {
        error: message.to_string(),
    });
    let mut response = warp::reply::with_status(body, code).into_response();
    if code == StatusCode::UNAUTHORIZED {
        // RFC 6750: the scheme a 401 asks for.
        response.headers_mut().insert(
            warp::http::header::WWW_AUTHENTICATE,
            warp::http::HeaderValue::from_static("Bearer"),
        );
    }
    Ok(response)
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
            data_from_any_address: false,
            max_memory: 64 << 20,
            host_names: Vec::new(),
            allowed_origins: Vec::new(),
            metrics_open: false,
        };
        let info = PeerInfo {
            name: "t".into(),
            data_port: 5211,
            ..Default::default()
        };
        ServerState::new(config, info, Arc::new(NoRuns), CancellationToken::new())
    }

    /// These routes never start a run.
    struct NoRuns;

    impl crate::server::runner::Runner for NoRuns {
        fn run(
            &self,
            _: String,
            _: perfpeer_shared::spec::ValidSpec,
            _: tokio::sync::mpsc::UnboundedSender<crate::session::events::TestEvent>,
            _: CancellationToken,
        ) -> futures_util::future::BoxFuture<
            'static,
            Result<perfpeer_shared::report::TestResult, crate::session::SessionError>,
        > {
            unreachable!("the routes tested here start no run")
        }

        fn sweep(
            &self,
            _: String,
            _: perfpeer_shared::spec::TestSpec,
            _: Vec<u32>,
            _: tokio::sync::mpsc::UnboundedSender<crate::session::events::SweepEvent>,
            _: CancellationToken,
        ) -> futures_util::future::BoxFuture<'static, perfpeer_shared::sweep::SweepResult> {
            unreachable!("the routes tested here start no sweep")
        }

        fn latency(
            &self,
            _: String,
            _: perfpeer_shared::latency::LatencyRequest,
            _: tokio::sync::mpsc::UnboundedSender<perfpeer_shared::latency::LatencyEvent>,
            _: CancellationToken,
        ) -> futures_util::future::BoxFuture<
            'static,
            Result<perfpeer_shared::latency::LatencyResult, crate::session::SessionError>,
        > {
            unreachable!("the routes tested here start no latency run")
        }

        #[cfg(feature = "plans")]
        fn plans(
            &self,
        ) -> futures_util::future::BoxFuture<'static, Vec<perfpeer_shared::plan_progress::ListedPlan>>
        {
            unreachable!("the routes tested here list no plans")
        }

        #[cfg(feature = "plans")]
        fn plan(
            &self,
            _: String,
            _: Vec<String>,
            _: Option<Arc<crate::store::Store>>,
            _: tokio::sync::mpsc::UnboundedSender<perfpeer_shared::plan_progress::PlanProgress>,
            _: CancellationToken,
            _: CancellationToken,
        ) -> futures_util::future::BoxFuture<
            'static,
            Result<super::super::runner::PlanJob, super::super::runner::PlanRefusal>,
        > {
            unreachable!("the routes tested here start no plan")
        }
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
        let res = warp::test::request()
            .path("/assets/nope/x.js")
            .reply(&api)
            .await;
        assert_eq!(res.status(), 404);
    }

    #[tokio::test]
    async fn metrics_need_the_token_and_say_so() {
        let api = routes(state());
        let res = warp::test::request().path("/metrics").reply(&api).await;
        assert_eq!(res.status(), 401);
        assert_eq!(res.headers()["www-authenticate"], "Bearer");
        let res = warp::test::request()
            .path("/metrics")
            .header("authorization", "Bearer secret-token")
            .reply(&api)
            .await;
        assert_eq!(res.status(), 200);
        assert_eq!(
            res.headers()["content-type"],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        let page = String::from_utf8_lossy(res.body());
        // The refused scrape was counted.
        assert!(
            page.contains("perfpeer_refusals_total{reason=\"token\"} 1\n"),
            "{page}"
        );
    }

    #[tokio::test]
    async fn the_page_and_its_assets_are_served_compressed_and_cached() {
        let api = routes(state());
        let res = warp::test::request()
            .path("/")
            .header("accept-encoding", "gzip, br")
            .reply(&api)
            .await;
        assert_eq!(res.status(), 200);
        assert_eq!(res.headers()["content-type"], "text/html; charset=utf-8");
        assert_eq!(res.headers()["cache-control"], "no-cache");
        let page = assets::index();
        let expected = page.gzip().or(page.plain()).unwrap();
        assert_eq!(res.body().as_ref(), expected);
        let html = String::from_utf8_lossy(page.plain().unwrap());
        if assets::UI_BUILT {
            assert!(html.contains("/boot.js"), "{html}");
        } else {
            assert!(
                html.contains("run <code>scripts/build-web.sh</code>"),
                "{html}"
            );
        }
        for asset in assets::ASSETS
            .iter()
            .filter(|a| a.path.starts_with("assets/"))
        {
            let res = warp::test::request()
                .path(&format!("/{}", asset.path))
                .reply(&api)
                .await;
            assert_eq!(res.status(), 200, "{}", asset.path);
            // No accept-encoding: the plain bytes, inflated from the embedded gzip if need be.
            assert_eq!(
                res.body().as_ref(),
                asset.plain().unwrap(),
                "{}",
                asset.path
            );
            assert!(res.headers().get("content-encoding").is_none());
            assert!(
                res.headers()["cache-control"]
                    .to_str()
                    .unwrap()
                    .contains("max-age=31536000")
            );
            assert_eq!(
                res.headers()["content-type"],
                assets::content_type(asset.path)
            );
        }
    }
}
