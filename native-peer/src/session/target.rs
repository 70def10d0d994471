//! Parsing and resolving a peer address as users type it: `host`, `host:port`, `1.2.3.4:port`,
//! `[v6]:port` or a bare IPv6 address; the default port is the control port 5210.

use std::net::{IpAddr, SocketAddr};

use super::SessionError;

/// Default control port of a perfpeer peer.
pub(crate) const DEFAULT_CONTROL_PORT: u16 = 5210;

pub(crate) use crate::resolve::Family;
use crate::resolve::ResolveError;

/// Splits `target` into host and port (default: the perfpeer control port).
pub(crate) fn split_host_port(target: &str) -> Result<(String, u16), String> {
    split_host_port_or(target, DEFAULT_CONTROL_PORT)
}

/// Splits `target` into host and port, with `default_port` when it names none.
pub(crate) fn split_host_port_or(target: &str, default_port: u16) -> Result<(String, u16), String> {
    let target = target.trim();
    if target.is_empty() {
        return Err("empty peer address".into());
    }
    if let Some(rest) = target.strip_prefix('[') {
        let (host, after) = rest.split_once(']').ok_or("missing ']' in IPv6 address")?;
        let port = match after.strip_prefix(':') {
            Some(p) => parse_port(p)?,
            None if after.is_empty() => default_port,
            None => return Err(format!("unexpected '{after}' after ']'")),
        };
        return Ok((host.to_string(), port));
    }
    if target.parse::<IpAddr>().is_ok() {
        return Ok((target.to_string(), default_port));
    }
    match target.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') => Ok((host.to_string(), parse_port(port)?)),
        Some(_) => Err(format!(
            "'{target}': write IPv6 addresses with a port as [addr]:port"
        )),
        None => Ok((target.to_string(), default_port)),
    }
}

fn parse_port(p: &str) -> Result<u16, String> {
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("'{p}' is not a port number (1-65535)")),
        Ok(port) => Ok(port),
    }
}

/// Resolves `target` to one socket address of the wanted family.
pub(crate) async fn resolve(
    target: &str,
    family: Option<Family>,
) -> Result<SocketAddr, SessionError> {
    let unreachable = |reason: String| SessionError::Unreachable {
        target: target.to_string(),
        reason,
    };
    let (host, port) = split_host_port(target).map_err(unreachable)?;
    resolve_host(&host, port, family).await.map_err(unreachable)
}

/// Resolves `host` (a name or an address) with `port` to one address of the wanted family.
pub(crate) async fn resolve_host(
    host: &str,
    port: u16,
    family: Option<Family>,
) -> Result<SocketAddr, String> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let addrs = crate::resolve::lookup(host, family)
        .await
        .map_err(|e| match e {
            ResolveError::NotFound(_) | ResolveError::BadName(_) => e.to_string(),
            other => format!("cannot resolve '{host}': {other}"),
        })?;
    let ip = addrs
        .first()
        .ok_or_else(|| format!("'{host}' has no address of the requested family"))?;
    Ok(SocketAddr::new(*ip, port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_port_forms() {
        assert_eq!(split_host_port("pc"), Ok(("pc".into(), 5210)));
        assert_eq!(split_host_port("pc:6000"), Ok(("pc".into(), 6000)));
        assert_eq!(split_host_port("10.0.0.2:7"), Ok(("10.0.0.2".into(), 7)));
        assert_eq!(split_host_port("::1"), Ok(("::1".into(), 5210)));
        assert_eq!(split_host_port("[::1]:5300"), Ok(("::1".into(), 5300)));
        assert_eq!(split_host_port("[fe80::1]"), Ok(("fe80::1".into(), 5210)));
        assert!(split_host_port("pc:0").is_err());
        assert!(split_host_port("pc:http").is_err());
        assert!(split_host_port("[::1").is_err());
        assert!(split_host_port("").is_err());
    }
}
