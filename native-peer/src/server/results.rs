//! Result pages and the history API: `/r/<id>` (a self-contained HTML page of a test, a kept
//! sweep or a kept latency run; the id is the permission, no token), `/r/<id>.json`, and with
//! the token `GET /api/results`, `GET /api/results/<id>` (`{"summary", "result"}`, or
//! `{"summary", "sweep"}` / `{"summary", "latency"}` for a kept run; link on or off), `DELETE /api/results/<id>`
//! `POST /api/results/<id>/link` (`{"enabled": false}` turns a share link off) and
//! `PUT /api/results/<id>/notes` (`{"text", "tags"}`, within `Notes::checked`'s bounds; empty
//! clears them). Unknown or disabled ids are a plain 404. With a lab store (`--store
//! postgres://…`) the list is the lab's (filtered by peer, tag and time, a page at a time), and
//! a result kept by another peer of the lab opens here too, by the same rules.

use perfpeer_shared::control::ApiError;
use perfpeer_shared::history::Notes;
use std::sync::Arc;

use perfpeer_shared::format::html;
use warp::Filter;
use warp::filters::BoxedFilter;
use warp::http::StatusCode;
use warp::reply::{Reply, Response};

use super::http::ClientAddr;
use super::state::ServerState;
#[cfg(feature = "postgres")]
use crate::store::{HistoryEntry, ListQuery};
use crate::store::{Kept, Store};

/// Largest body of the link switch.
const MAX_BODY: u64 = 1024;
/// Largest body of a notes write (1000 characters of text, up to 4 bytes each, and 8 tags).
const MAX_NOTES_BODY: u64 = 8 * 1024;

fn with_state(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (Arc<ServerState>,), Error = std::convert::Infallible> + Clone {
    warp::any().map(move || state.clone())
}

/// Every result route.
pub(crate) fn routes(state: Arc<ServerState>) -> BoxedFilter<(Response,)> {
    let page = warp::path!("r" / String)
        .and(warp::get())
        .and(with_state(state.clone()))
        .then(result_page);
    let list = warp::path!("api" / "results")
        .and(warp::get())
        .and(auth(state.clone()));
    // PC builds: filters and pages (the lab's list, or this peer's); a DUT build lists its
    // newest 500, as its history is bounded far below that.
    #[cfg(feature = "postgres")]
    let list = list.and(warp::query::<ListParams>()).then(list_results);
    #[cfg(not(feature = "postgres"))]
    let list = list.then(|state: Arc<ServerState>| async move {
        with_store(&state, |s| {
            s.list(500).map(|l| warp::reply::json(&l).into_response())
        })
        .await
    });
    // The token holder's view of one result, its link state included, link on or off.
    let get = warp::path!("api" / "results" / String)
        .and(warp::get())
        .and(auth(state.clone()))
        .then(|id: String, state: Arc<ServerState>| async move {
            match find_kept(&state, id).await {
                Ok(Some(kept)) => warp::reply::json(&kept.opened()).into_response(),
                Ok(None) => not_found_json(),
                Err(response) => response,
            }
        });
    let delete = warp::path!("api" / "results" / String)
        .and(warp::delete())
        .and(auth(state.clone()))
        .then(|id: String, state: Arc<ServerState>| async move {
            with_store(&state, move |s| {
                Ok(if s.delete(&id)? {
                    StatusCode::NO_CONTENT.into_response()
                } else {
                    not_found_json()
                })
            })
            .await
        });
    let notes = warp::path!("api" / "results" / String / "notes")
        .and(warp::put())
        .and(auth(state.clone()))
        .and(warp::body::content_length_limit(MAX_NOTES_BODY))
        .and(warp::body::json())
        .then(
            |id: String, state: Arc<ServerState>, body: Notes| async move {
                let notes = match body.checked() {
                    Ok(n) => n,
                    Err(e) => return error_json(StatusCode::BAD_REQUEST, &e.to_string()),
                };
                with_store(&state, move |s| {
                    Ok(if s.set_notes(&id, &notes)? {
                        StatusCode::NO_CONTENT.into_response()
                    } else {
                        not_found_json()
                    })
                })
                .await
            },
        );
    let link = warp::path!("api" / "results" / String / "link")
        .and(warp::post())
        .and(auth(state))
        .and(warp::body::content_length_limit(MAX_BODY))
        .and(warp::body::json())
        .then(
            |id: String, state: Arc<ServerState>, body: LinkSwitch| async move {
                with_store(&state, move |s| {
                    Ok(if s.set_link(&id, body.enabled)? {
                        StatusCode::NO_CONTENT.into_response()
                    } else {
                        not_found_json()
                    })
                })
                .await
            },
        );
    // Boxed one by one, as filters::routes does its routes.
    page.boxed()
        .or(list.boxed())
        .unify()
        .or(get.boxed())
        .unify()
        .or(delete.boxed())
        .unify()
        .or(link.boxed())
        .unify()
        .or(notes.boxed())
        .unify()
        .boxed()
}

#[derive(serde::Deserialize)]
struct LinkSwitch {
    enabled: bool,
}

/// Passes the state on only with the peer's token (`Authorization: Bearer …`), or when open.
fn auth(
    state: Arc<ServerState>,
) -> impl Filter<Extract = (Arc<ServerState>,), Error = warp::Rejection> + Clone {
    auth_unless(state, false)
}

/// [`auth`], or anyone when `open` (`/metrics` with `--metrics-open`). A refusal is counted.
pub(crate) fn auth_unless(
    state: Arc<ServerState>,
    open: bool,
) -> impl Filter<Extract = (Arc<ServerState>,), Error = warp::Rejection> + Clone {
    warp::header::optional::<String>("authorization")
        .and(warp::ext::optional::<ClientAddr>())
        .and(with_state(state))
        .and_then(
            move |header: Option<String>, client: Option<ClientAddr>, state: Arc<ServerState>| async move {
                if open {
                    return Ok(state);
                }
                let token = header.as_deref().and_then(|h| h.strip_prefix("Bearer "));
                let ip = client.map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |c| c.0.ip());
                let refusal = match state.authorizes(ip, token) {
                    Ok(true) => return Ok(state),
                    Ok(false) => warp::reject::custom(Unauthorized),
                    Err(too_many) => warp::reject::custom(too_many),
                };
                state.metrics.refused(super::metrics::Refusal::Token);
                Err(refusal)
            },
        )
}

/// A request without the token.
#[derive(Debug)]
pub(crate) struct Unauthorized;
impl warp::reject::Reject for Unauthorized {}

async fn with_store<F>(state: &Arc<ServerState>, f: F) -> Response
where
    F: FnOnce(&Store) -> Result<Response, crate::store::StoreError> + Send + 'static,
{
    let Some(store) = state.store().cloned() else {
        return unavailable();
    };
    match crate::util::spawn_blocking(move || f(&store)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => error_json(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => error_json(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

fn error_json(status: StatusCode, message: &str) -> Response {
    warp::reply::with_status(
        warp::reply::json(&ApiError {
            error: message.to_string(),
        }),
        status,
    )
    .into_response()
}

fn not_found_json() -> Response {
    error_json(StatusCode::NOT_FOUND, "no such result")
}

fn not_found_page() -> Response {
    let body = perfpeer_shared::format::html::not_found_page();
    warp::reply::with_status(warp::reply::html(body), StatusCode::NOT_FOUND).into_response()
}

/// `GET /r/<id>` and `/r/<id>.json`.
async fn result_page(name: String, state: Arc<ServerState>) -> Response {
    let (id, json) = match name.strip_suffix(".json") {
        Some(id) => (id.to_string(), true),
        None => (name, false),
    };
    let missing = move || {
        if json {
            not_found_json()
        } else {
            not_found_page()
        }
    };
    if id.len() != 32 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return missing();
    }
    let kept = match find_kept(&state, id).await {
        Ok(kept) => kept,
        Err(response) => return response,
    };
    {
        let page = |body: String| {
            warp::reply::with_header(warp::reply::html(body), "cache-control", "no-cache")
                .into_response()
        };
        match kept {
            Some(Kept::Test(found)) if found.summary.link_enabled => {
                if json {
                    warp::reply::json(&found.result).into_response()
                } else {
                    page(html::page(&found.result, &found.summary.notes))
                }
            }
            Some(Kept::Sweep(sweep)) if sweep.link_enabled => {
                if json {
                    warp::reply::json(&sweep.result).into_response()
                } else {
                    page(html::sweep_page(
                        &sweep.result,
                        &sweep.title(),
                        &sweep.context(),
                        &sweep.notes,
                    ))
                }
            }
            Some(Kept::Latency(run)) if run.link_enabled => {
                if json {
                    warp::reply::json(&run.result).into_response()
                } else {
                    page(html::latency_page(
                        &run.result,
                        &run.title(),
                        run.verdict().as_ref(),
                        &run.notes,
                    ))
                }
            }
            #[cfg(feature = "plans")]
            Some(Kept::Plan(run)) if run.link_enabled => {
                if json {
                    warp::reply::json(&run.result).into_response()
                } else {
                    page(html::plan_page(&run))
                }
            }
            _ => missing(),
        }
    }
}

#[cfg(feature = "postgres")]
/// The query of `GET /api/results` (every part optional): `peer` (part of the name of the peer
/// that kept it, in a lab store, or of the far end's address or name, any case),
/// `tag`, `since` and `until` (ms since the Unix epoch), `before` (the cursor of the previous
/// page's last line: its `x-next-cursor` header) and `limit` (≤ 500).
#[derive(Debug, Default, serde::Deserialize)]
struct ListParams {
    peer: Option<String>,
    tag: Option<String>,
    since: Option<u64>,
    until: Option<u64>,
    before: Option<String>,
    limit: Option<u32>,
}

#[cfg(feature = "postgres")]
impl ListParams {
    /// Longest `peer` or `tag` asked for: a name, an address or a tag is far shorter, and
    /// every listed line is compared with it.
    const MAX_FILTER: usize = 128;

    fn query(self) -> Result<ListQuery, String> {
        for (name, value) in [("peer", &self.peer), ("tag", &self.tag)] {
            if value.as_ref().is_some_and(|v| v.len() > Self::MAX_FILTER) {
                return Err(format!("{name}: at most {} bytes", Self::MAX_FILTER));
            }
        }
        let before = match self.before.as_deref() {
            Some(cursor) => Some(
                ListQuery::parse_cursor(cursor)
                    .ok_or("before: not a cursor of this list (an x-next-cursor header)")?,
            ),
            None => None,
        };
        Ok(ListQuery {
            peer: self.peer,
            tag: self.tag,
            since_ms: self.since,
            until_ms: self.until,
            before,
            limit: self.limit,
        })
    }
}

#[cfg(feature = "postgres")]
/// `GET /api/results`: a page of the history, newest first: the lab's (every peer's) with a
/// lab store, else this peer's own (also when the lab store cannot be reached: the
/// `x-results-from` header says `local` then). A full page has an `x-next-cursor` header.
async fn list_results(state: Arc<ServerState>, params: ListParams) -> Response {
    let query = match params.query() {
        Ok(q) => q,
        Err(e) => return error_json(StatusCode::BAD_REQUEST, &e),
    };
    let Some(store) = state.store().cloned() else {
        return unavailable();
    };
    #[cfg(feature = "postgres")]
    if let Some(lab) = store.lab().cloned() {
        match lab.list(&query).await {
            Ok(rows) => return page_of(&rows, &query, "lab"),
            Err(e) => {
                static FALLBACK: crate::admission::LogLimit = crate::admission::LogLimit::new(
                    "the lab database cannot be listed; listing this peer's own results",
                    std::time::Duration::from_secs(60),
                );
                FALLBACK.warn("the lab store", e);
            }
        }
    }
    let kept_by = kept_by(&store);
    let local = query.clone();
    match crate::util::spawn_blocking(move || store.list_matching(&local, &kept_by)).await {
        Ok(Ok(rows)) => page_of(&rows, &query, "local"),
        Ok(Err(e)) => error_json(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
        Err(e) => error_json(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()),
    }
}

#[cfg(feature = "postgres")]
/// The name this peer's own results are listed under.
fn kept_by(store: &Store) -> String {
    #[cfg(feature = "postgres")]
    if let Some(lab) = store.lab() {
        return lab.kept_by().to_string();
    }
    let _ = store;
    crate::hostinfo::hostname()
}

#[cfg(feature = "postgres")]
/// A page of the list as JSON, with where it came from and the next page's cursor.
fn page_of(rows: &[HistoryEntry], query: &ListQuery, from: &'static str) -> Response {
    let mut response =
        warp::reply::with_header(warp::reply::json(&rows), "x-results-from", from).into_response();
    if rows.len() == query.limit() as usize
        && let Some(last) = rows.last()
        && let Ok(cursor) = last.cursor_after().parse()
    {
        response.headers_mut().insert("x-next-cursor", cursor);
    }
    response
}

/// What is kept under `id`: here, or (not here) in the lab store; a response saying why not.
async fn find_kept(state: &Arc<ServerState>, id: String) -> Result<Option<Kept>, Response> {
    let Some(store) = state.store().cloned() else {
        return Err(unavailable());
    };
    let local = store.clone();
    let lab_id = id.clone();
    let found = crate::util::spawn_blocking(move || local.kept(&id))
        .await
        .map_err(|e| error_json(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))?
        .map_err(|e| error_json(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string()))?;
    if found.is_some() {
        return Ok(found);
    }
    #[cfg(feature = "postgres")]
    if let Some(lab) = store.lab() {
        return match lab.get(&lab_id).await {
            Ok(opened) => Ok(opened.and_then(Kept::from_opened)),
            Err(e) => Err(error_json(StatusCode::SERVICE_UNAVAILABLE, &e.to_string())),
        };
    }
    let _ = lab_id;
    Ok(None)
}

fn unavailable() -> Response {
    error_json(
        StatusCode::SERVICE_UNAVAILABLE,
        "this peer keeps no results",
    )
}

#[cfg(all(test, feature = "postgres"))]
mod tests {
    use super::*;

    #[test]
    fn list_filters_are_bounded_and_a_bad_cursor_is_not_echoed() {
        let long = "x".repeat(ListParams::MAX_FILTER + 1);
        for params in [
            ListParams {
                peer: Some(long.clone()),
                ..ListParams::default()
            },
            ListParams {
                tag: Some(long.clone()),
                ..ListParams::default()
            },
        ] {
            assert!(params.query().unwrap_err().contains("at most 128 bytes"));
        }
        let bad = ListParams {
            before: Some(long.clone()),
            ..ListParams::default()
        };
        assert!(!bad.query().unwrap_err().contains(&long));
        let fine = ListParams {
            peer: Some("dut-7".into()),
            tag: Some("fw=1.2.4".into()),
            before: Some("1796169600000_3f2a".into()),
            ..ListParams::default()
        };
        let query = fine.query().unwrap();
        assert_eq!(query.before, Some((1_796_169_600_000, "3f2a".into())));
    }
}
