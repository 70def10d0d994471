//! The web UI embedded at build time (see native-peer/build.rs): lookup by path, content types,
//! caching (index.html revalidates; versioned `assets/<hash>/` files are immutable for a year),
//! and the gzip body when the browser accepts it. A file the build packed is embedded only
//! packed (the binary carries one copy: it matters on a router's flash): LZMA (what xz packs
//! best, as firmware images are packed) is unpacked the first time a client asks for the file
//! and gzipped for browsers then, once per file per process; a gzipped one is served as it is
//! and inflated for a client that takes no gzip. No I/O.

use std::sync::OnceLock;

use warp::Reply;
use warp::http::StatusCode;
use warp::http::header::{CACHE_CONTROL, CONTENT_ENCODING, CONTENT_TYPE, HeaderValue, VARY};
use warp::reply::Response;

/// The largest file an embedded LZMA stream may unpack to (the UI's wasm is under 1 MiB).
const MAX_INFLATED: usize = 16 << 20;

/// How an embedded file's bytes are packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Packed {
    /// As the file is.
    Plain,
    /// LZMA-alone (`xz --format=lzma`).
    Lzma,
}

/// One embedded file.
#[derive(Debug)]
pub(crate) struct Asset {
    /// Path under the site root, without a leading slash (`index.html`, `assets/…/x.js`).
    pub path: &'static str,
    /// Its bytes as embedded, packed as `packed` says.
    stored: &'static [u8],
    packed: Packed,
    /// Its plain bytes, unpacked the first time a client needs them.
    unpacked: OnceLock<Option<Vec<u8>>>,
    /// The gzip member of an LZMA-packed file, made the first time a browser asks for it.
    gzipped: OnceLock<Option<Vec<u8>>>,
}

impl Asset {
    /// An embedded file (build.rs writes one call per file).
    pub(crate) const fn new(path: &'static str, stored: &'static [u8], packed: Packed) -> Asset {
        Asset {
            path,
            stored,
            packed,
            unpacked: OnceLock::new(),
            gzipped: OnceLock::new(),
        }
    }

    /// Its gzip bytes, when the build packed it (made from its plain bytes the first time).
    pub(crate) fn gzip(&'static self) -> Option<&'static [u8]> {
        match self.packed {
            Packed::Plain => None,
            Packed::Lzma => self
                .gzipped
                .get_or_init(|| self.plain().map(gzip_member))
                .as_deref(),
        }
    }

    /// Its plain bytes; `None` only if the embedded bytes are broken (a test checks every one).
    pub(crate) fn plain(&'static self) -> Option<&'static [u8]> {
        match self.packed {
            Packed::Plain => Some(self.stored),
            Packed::Lzma => self.unpacked.get_or_init(|| unlzma(self.stored)).as_deref(),
        }
    }
}

/// The plain bytes of an LZMA-alone stream (the build's own bytes, at most [`MAX_INFLATED`]).
fn unlzma(packed: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    lzma_rs::lzma_decompress(&mut &packed[..], &mut out).ok()?;
    (out.len() <= MAX_INFLATED).then_some(out)
}

/// `plain` as one gzip member (RFC 1952): no name, no time, deflated by miniz_oxide at its
/// default level, then CRC-32 and length.
#[allow(
    clippy::cast_possible_truncation,
    reason = "ISIZE is the length modulo 2^32 (RFC 1952)"
)]
fn gzip_member(plain: &[u8]) -> Vec<u8> {
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    gz.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(plain, 6));
    gz.extend_from_slice(&crc32(plain).to_le_bytes());
    gz.extend_from_slice(&(plain.len() as u32).to_le_bytes());
    gz
}

/// CRC-32 (IEEE, reflected, as gzip's trailer has it), bit by bit: once per file per process,
/// and no table on a router's flash.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & 0u32.wrapping_sub(crc & 1));
        }
    }
    !crc
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
    if asset.packed != Packed::Plain {
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

    /// The plain bytes of one gzip member (RFC 1952), as a browser reads the ones made here:
    /// its header read past, its deflate body inflated, its length and CRC checked.
    fn gunzip(gz: &[u8]) -> Option<Vec<u8>> {
        const FHCRC: u8 = 1 << 1;
        const FEXTRA: u8 = 1 << 2;
        const FNAME: u8 = 1 << 3;
        const FCOMMENT: u8 = 1 << 4;
        let (header, _) = gz.split_first_chunk::<10>()?;
        if header[..3] != [0x1f, 0x8b, 8] {
            return None;
        }
        let flags = header[3];
        let mut at = 10;
        if flags & FEXTRA != 0 {
            let len = u16::from_le_bytes([*gz.get(at)?, *gz.get(at + 1)?]);
            at += 2 + usize::from(len);
        }
        for flag in [FNAME, FCOMMENT] {
            if flags & flag != 0 {
                at += gz.get(at..)?.iter().position(|&b| b == 0)? + 1;
            }
        }
        if flags & FHCRC != 0 {
            at += 2;
        }
        let body = gz.get(at..gz.len().checked_sub(8)?)?;
        let (_, size) = gz.split_last_chunk::<4>()?;
        let out = miniz_oxide::inflate::decompress_to_vec_with_limit(body, MAX_INFLATED).ok()?;
        // ISIZE is the length modulo 2^32 (RFC 1952); the inflated file is below 16 MiB anyway.
        let crc = gz.get(gz.len() - 8..gz.len() - 4)?;
        (usize::try_from(u32::from_le_bytes(*size)).ok() == Some(out.len())
            && crc == crc32(&out).to_le_bytes())
        .then_some(out)
    }

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
    fn gzip_members_inflate_with_their_header_fields_and_length_checked() {
        // `printf 'perfpeer\n' | gzip -9 -n` with a name added (FNAME) by hand: header, name,
        // deflate body, CRC, length.
        let plain = b"perfpeer\n";
        let body = [
            0x2b, 0x48, 0x2d, 0x4a, 0x2b, 0x48, 0x4d, 0x2d, 0xe2, 0x02, 0x00,
        ];
        let trailer = [0xbe, 0x48, 0x11, 0x6d, 9, 0, 0, 0];
        let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 3];
        gz.extend_from_slice(&body);
        gz.extend_from_slice(&trailer);
        assert_eq!(gunzip(&gz).as_deref(), Some(&plain[..]));
        let mut named = vec![0x1f, 0x8b, 8, 1 << 3, 0, 0, 0, 0, 2, 3];
        named.extend_from_slice(b"x.txt\0");
        named.extend_from_slice(&body);
        named.extend_from_slice(&trailer);
        assert_eq!(gunzip(&named).as_deref(), Some(&plain[..]));
        // A wrong length, a truncated member, not gzip: none inflates.
        let mut wrong = gz.clone();
        let last = wrong.len() - 4;
        wrong[last] = 10;
        assert_eq!(gunzip(&wrong), None);
        assert_eq!(gunzip(&gz[..gz.len() - 9]), None);
        assert_eq!(gunzip(b"plain text, not gzip"), None);
        assert_eq!(gunzip(&[]), None);
    }

    /// The check values of CRC-32 (`123456789` → 0xCBF43926), and a member of ours read back
    /// by our own inflater, header, CRC and length and all.
    #[test]
    fn gzip_members_made_here_read_back() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(crc32(b""), 0);
        let plain: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        let gz = gzip_member(&plain);
        assert!(gz.len() < plain.len() / 10, "{}", gz.len());
        assert_eq!(gunzip(&gz).as_deref(), Some(&plain[..]));
        assert_eq!(
            &gz[gz.len() - 8..gz.len() - 4],
            &crc32(&plain).to_le_bytes()
        );
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
