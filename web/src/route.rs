//! Where the page is, as the URL's fragment says it: `#/peer`, `#/new`, `#/run/<id>`,
//! `#/result/<id>`, `#/history`, `#/plans`. The page writes it on every screen change (so a
//! reload comes back to the same place and Back steps through the screens) and reads it at load
//! and on Back. DOM-free: parsing and printing only.

/// A place in the page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The token screen.
    Connect,
    /// What this peer is and runs.
    Peer,
    /// The new-test form.
    New,
    /// A run on this peer (a test, sweep or latency run's id), to follow live.
    Run(String),
    /// A run asked for whose id has not come yet (`#/run`: its own history entry, so Back
    /// returns to the screen it was started from; not a place to come back to on reload).
    Starting,
    /// A result: a stored one by its result id, or the last one shown (not kept on the peer).
    Result(Option<String>),
    /// The results this peer keeps.
    History,
    /// The peer's plans and the plan run started here.
    Plans,
}

/// Longest id a route carries (ids are 16–32 hex digits; anything longer is not ours).
const MAX_ID: usize = 64;

fn id(text: &str) -> Option<String> {
    (!text.is_empty()
        && text.len() <= MAX_ID
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    .then(|| text.to_string())
}

impl Route {
    /// The route in a URL fragment (`#/run/ab12`), or `None` for anything else (an empty
    /// fragment, `#token=…`, an id with characters no id has).
    pub fn parse(hash: &str) -> Option<Route> {
        let path = hash.trim_start_matches('#').strip_prefix('/')?;
        let (head, rest) = path.split_once('/').unwrap_or((path, ""));
        match (head, rest) {
            ("connect", "") => Some(Route::Connect),
            ("peer", "") => Some(Route::Peer),
            ("new", "") => Some(Route::New),
            ("history", "") => Some(Route::History),
            ("plans", "") => Some(Route::Plans),
            ("result", "") => Some(Route::Result(None)),
            ("result", r) => id(r).map(|r| Route::Result(Some(r))),
            ("run", r) => id(r).map(Route::Run),
            _ => None,
        }
    }

    /// The fragment for this route, `#` included.
    pub fn hash(&self) -> String {
        match self {
            Route::Connect => "#/connect".into(),
            Route::Peer => "#/peer".into(),
            Route::New => "#/new".into(),
            Route::Run(id) => format!("#/run/{id}"),
            Route::Starting => "#/run".into(),
            Route::Result(Some(id)) => format!("#/result/{id}"),
            Route::Result(None) => "#/result".into(),
            Route::History => "#/history".into(),
            Route::Plans => "#/plans".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Route;

    #[test]
    fn every_route_reads_back_as_itself() {
        for r in [
            Route::Connect,
            Route::Peer,
            Route::New,
            Route::Run("0a1b2c3d4e5f6a7b".into()),
            Route::Result(Some("deadbeef".into())),
            Route::Result(None),
            Route::History,
            Route::Plans,
        ] {
            assert_eq!(Route::parse(&r.hash()), Some(r.clone()), "{}", r.hash());
        }
    }

    #[test]
    fn anything_else_is_no_route() {
        for hash in [
            "",
            "#",
            "#token=abc",
            "#/",
            "#/run/",
            "#/run",
            "#/run/a b",
            "#/run/<script>",
            "#/result/x/y",
            "#/peer/extra",
            "#/nowhere",
        ] {
            assert_eq!(Route::parse(hash), None, "{hash}");
        }
        assert_eq!(Route::parse(&format!("#/run/{}", "a".repeat(65))), None);
    }
}
