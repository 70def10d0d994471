//! Who may talk to the control port from a browser: the `Host` a request names must be this peer
//! (an IP literal, `localhost`, this machine's name, or a `--host-name`), which defeats DNS
//! rebinding; a request that carries an `Origin` must come from the page's own origin (or an
//! `--allow-origin`), so another site's page cannot open `/ws` or call the API. Every response
//! carries the security headers that keep it from being framed, sniffed or leaking its URL.

use std::net::IpAddr;
use std::sync::Arc;

use warp::Filter;
use warp::http::header::{HeaderMap, HeaderName, HeaderValue};

/// The names and origins this peer answers to.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostPolicy {
    /// Host names (lower case, no port) besides IP literals and `localhost`.
    names: Vec<String>,
    /// Origins (`scheme://host[:port]`, lower case) allowed besides the page's own.
    origins: Vec<String>,
}

/// A request whose `Host` names something other than this peer (DNS rebinding).
#[derive(Debug)]
pub(crate) struct ForeignHost;
impl warp::reject::Reject for ForeignHost {}

/// A request from another site's page.
#[derive(Debug)]
pub(crate) struct CrossOrigin;
impl warp::reject::Reject for CrossOrigin {}

impl HostPolicy {
    /// A policy for a machine called `hostname`, with extra `names` and allowed `origins`.
    pub(crate) fn new(hostname: &str, names: &[String], origins: &[String]) -> HostPolicy {
        let mut all: Vec<String> = names.iter().map(|n| n.to_ascii_lowercase()).collect();
        let own = hostname.to_ascii_lowercase();
        if !own.is_empty() {
            all.push(format!("{own}.local"));
            all.push(own);
        }
        HostPolicy {
            names: all,
            origins: origins
                .iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        }
    }

    /// Whether a `Host` header value names this peer. No `Host` (HTTP/1.0, scripts) is allowed:
    /// rebinding needs a browser, and browsers always send it.
    pub(crate) fn host_allowed(&self, host: Option<&str>) -> bool {
        let Some(host) = host else { return true };
        let name = host_without_port(host).to_ascii_lowercase();
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        bare.parse::<IpAddr>().is_ok()
            || name == "localhost"
            || name.ends_with(".localhost")
            || self.names.contains(&name)
    }

    /// Whether a request with `origin` sent to `host` may be served: no `Origin` (a non-browser
    /// client), the page's own origin, or an allowed one.
    pub(crate) fn origin_allowed(&self, origin: Option<&str>, host: Option<&str>) -> bool {
        let Some(origin) = origin else { return true };
        let origin = origin.trim_end_matches('/').to_ascii_lowercase();
        let own = host.is_some_and(|h| {
            let h = h.to_ascii_lowercase();
            origin == format!("http://{h}") || origin == format!("https://{h}")
        });
        own || self.origins.contains(&origin)
    }
}

/// `host[:port]` or `[v6][:port]` → the host part.
fn host_without_port(host: &str) -> &str {
    if let Some(end) = host.find(']') {
        return &host[..=end];
    }
    match host.rsplit_once(':') {
        // More than one colon and no brackets: a bare IPv6 address.
        Some((h, _)) if !h.contains(':') => h,
        _ => host,
    }
}

/// Passes requests whose `Host` and `Origin` the policy allows; rejects the rest.
pub(crate) fn checked(
    policy: Arc<HostPolicy>,
) -> impl Filter<Extract = (), Error = warp::Rejection> + Clone {
    warp::header::optional::<String>("host")
        .and(warp::header::optional::<String>("origin"))
        .and_then(move |host: Option<String>, origin: Option<String>| {
            let policy = policy.clone();
            async move {
                if !policy.host_allowed(host.as_deref()) {
                    return Err(warp::reject::custom(ForeignHost));
                }
                if !policy.origin_allowed(origin.as_deref(), host.as_deref()) {
                    return Err(warp::reject::custom(CrossOrigin));
                }
                Ok(())
            }
        })
        .untuple_one()
}

/// The UI's policy: its own scripts and wasm, styles (the charts set inline ones), images from
/// itself or data URLs, requests and the WebSocket to itself only, never framed.
const UI_POLICY: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; \
     style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self' blob:; \
     manifest-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// Security headers for every response; result pages (`/r/…`) run no script at all.
pub(crate) fn security_headers(path: &str, headers: &mut HeaderMap) {
    let csp = if path.starts_with("/r/") {
        perfpeer_shared::format::html::PAGE_POLICY
    } else {
        UI_POLICY
    };
    let set = |headers: &mut HeaderMap, name: &'static str, value: &'static str| {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    };
    set(headers, "content-security-policy", csp);
    set(headers, "x-frame-options", "DENY");
    set(headers, "x-content-type-options", "nosniff");
    set(headers, "referrer-policy", "no-referrer");
    set(headers, "cross-origin-resource-policy", "same-origin");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> HostPolicy {
        HostPolicy::new(
            "OpenWrt",
            &["dut.lan".into()],
            &["http://dashboard.lan:8080/".into()],
        )
    }

    #[test]
    fn hosts_are_this_peer_or_refused() {
        let p = policy();
        for ok in [
            "192.168.1.1:5210",
            "192.168.1.1",
            "[fe80::1]:5210",
            "[::1]",
            "localhost:5210",
            "openwrt:5210",
            "OpenWrt.local",
            "dut.lan",
        ] {
            assert!(p.host_allowed(Some(ok)), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:5210",
            "192.168.1.1.evil.example",
            "openwrt.evil.example",
            "",
        ] {
            assert!(!p.host_allowed(Some(bad)), "{bad}");
        }
        assert!(p.host_allowed(None));
    }

    #[test]
    fn origins_are_the_pages_own_or_allowed() {
        let p = policy();
        let host = Some("192.168.1.1:5210");
        assert!(p.origin_allowed(None, host));
        assert!(p.origin_allowed(Some("http://192.168.1.1:5210"), host));
        assert!(p.origin_allowed(Some("http://dashboard.lan:8080"), host));
        for bad in [
            "http://evil.example",
            "null",
            "http://192.168.1.1:5211",
            "http://192.168.1.1",
            "file://",
        ] {
            assert!(!p.origin_allowed(Some(bad), host), "{bad}");
        }
        assert!(!p.origin_allowed(Some("http://192.168.1.1:5210"), None));
    }
}
