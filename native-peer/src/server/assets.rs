//! The web UI embedded at build time (see native-peer/build.rs): lookup by path, content types,
//! caching (index.html revalidates; versioned `assets/<hash>/` files are immutable for a year),
//! and the gzip body when the browser accepts it. A file the build gzipped is embedded only
//! gzipped (the binary carries one copy: it matters on a router's flash); a client that takes
//! no gzip gets it inflated, once per file per process. No I/O.

use std::io::Read;
use std::sync::OnceLock;

use warp::Reply;
use warp::http::StatusCode;
use warp::http::header::{CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, HeaderValue, VARY};
use warp::reply::Response;

/// The largest file an embedded gzip body may inflate to (the UI's wasm is under 1 MiB).
const MAX_INFLATED: u64 = 16 << 20;

/// One embedded file.
#[derive(Debug)]
pub(crate) struct Asset {
    /// Path under the site root, without a leading slash (`index.html`, `assets/…/x.js`).
    pub path: &'static str,
    /// Its bytes as embedded: gzipped when `gzipped`, else plain.
    stored: &'static [u8],
    gzipped: bool,
    /// The plain bytes of a gzipped file, inflated the first time a client needs them.
    inflated: OnceLock<Option<Vec<u8>>>,
}

impl Asset {
    /// An embedded file (build.rs writes one call per file).
    pub(crate) const fn new(path: &'static str, stored: &'static [u8], gzipped: bool) -> Asset {
        Asset {
            path,
            stored,
            gzipped,
            inflated: OnceLock::new(),
        }
    }

    /// Its gzip bytes, when the build made them.
    pub(crate) fn gzip(&self) -> Option<&'static [u8]> {
        self.gzipped.then_some(self.stored)
    }

    /// Its plain bytes; `None` only if the embedded gzip is broken (a test checks every one).
    pub(crate) fn plain(&'static self) -> Option<&'static [u8]> {
        if !self.gzipped {
            return Some(self.stored);
        }
        self.inflated
            .get_or_init(|| {
                let mut out = Vec::new();
                flate2::read::GzDecoder::new(self.stored)
                    .take(MAX_INFLATED)
                    .read_to_end(&mut out)
                    .ok()
                    .map(|_| out)
            })
            .as_deref()
    }
}

include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// The embedded file at `path`.
pub(crate) fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

/// The page at `/`.
pub(crate) fn index() -> &'static Asset {
    find("index.html").expect("build.rs always embeds index.html")
}

/// MIME type by extension.
pub(crate) fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("wasm") => "application/wasm",
        Some("css") => "text/css; charset=utf-8",
        Some("png") => "image/png",
        Some("svg") => "image/svg+xml",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

/// Cache policy: versioned assets never change; everything else is revalidated.
pub(crate) fn cache_control(path: &str) -> &'static str {
    if path.starts_with("assets/") {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    }
}

/// Whether an `Accept-Encoding` value allows gzip (`gzip;q=0` does not).
pub(crate) fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    accept_encoding.is_some_and(|v| {
        v.split(',').any(|part| {
            let mut it = part.split(';').map(str::trim);
            let name = it.next().unwrap_or("");
            let q_zero = it.any(|p| {
                p.strip_prefix("q=")
                    .is_some_and(|q| q.parse::<f32>() == Ok(0.0))
            });
            (name.eq_ignore_ascii_case("gzip") || name == "*") && !q_zero
        })
    })
}

/// The HTTP response for `asset`.
pub(crate) fn response(asset: &'static Asset, accept_encoding: Option<&str>) -> Response {
    let gzip = asset.gzip().filter(|_| accepts_gzip(accept_encoding));
    let Some(body) = gzip.or_else(|| asset.plain()) else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let mut res = body.into_response();
    let headers = res.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(content_type(asset.path)),
    );
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static(cache_control(asset.path)),
    );
    if asset.gzipped {
        headers.insert(VARY, HeaderValue::from_static("accept-encoding"));
    }
    if gzip.is_some() {
        headers.insert(CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_and_caching_follow_the_path() {
        assert_eq!(
            content_type("assets/ab/perfpeer_web_bg.wasm"),
            "application/wasm"
        );
        assert_eq!(content_type("index.html"), "text/html; charset=utf-8");
        assert!(content_type("assets/ab/perfpeer_web.js").starts_with("text/javascript"));
        assert_eq!(cache_control("index.html"), "no-cache");
        assert!(cache_control("assets/ab/style.css").contains("immutable"));
    }

    #[test]
    fn gzip_only_when_accepted() {
        assert!(accepts_gzip(Some("gzip, deflate, br")));
        assert!(accepts_gzip(Some("br;q=1.0, GZIP;q=0.5")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("br")));
        assert!(!accepts_gzip(None));
    }

    #[test]
    fn every_embedded_file_is_served_with_its_type() {
        let index = index();
        let res = response(index, None);
        assert_eq!(res.headers()[CONTENT_TYPE], "text/html; charset=utf-8");
        assert_eq!(res.headers()[CACHE_CONTROL], "no-cache");
        assert!(res.headers().get(CONTENT_ENCODING).is_none());
        for asset in &ASSETS {
            let plain = asset.plain().expect("every embedded gzip inflates");
            assert!(!plain.is_empty(), "{}", asset.path);
            let res = response(asset, Some("gzip"));
            let gz = res.headers().get(CONTENT_ENCODING).is_some();
            assert_eq!(gz, asset.gzip().is_some(), "{}", asset.path);
        }
    }
}
