//! The DNS messages perfpeer's own resolver sends and reads (RFC 1035): one question for an A or
//! AAAA record, and the answer to it. Sans-I/O: bytes in, bytes out; the socket is in
//! `resolve::lookup`. Anything malformed is an error, never a panic; a reply is checked
//! against the question it claims to answer.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The record types asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RecordType {
    /// IPv4 address.
    A,
    /// IPv6 address.
    Aaaa,
}

impl RecordType {
    fn code(self) -> u16 {
        match self {
            RecordType::A => 1,
            RecordType::Aaaa => 28,
        }
    }
}

const CNAME: u16 = 5;
const CLASS_IN: u16 = 1;
/// Longest name in presentation form without the final dot.
const MAX_NAME: usize = 253;
/// Compression pointers followed in one name at most (a loop otherwise never ends).
const MAX_POINTERS: usize = 32;

/// What a reply says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reply {
    /// The addresses of the name (after any CNAMEs in the answer), maybe none: the name exists
    /// without a record of this type.
    Addresses(Vec<IpAddr>),
    /// NXDOMAIN: the name does not exist.
    NoSuchName,
}

/// Why a name cannot be asked for, or a reply cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DnsError {
    /// The name is not a valid host name.
    #[error("'{0}' is not a valid host name")]
    BadName(String),
    /// The bytes are not a DNS message, or not one answering our question (another id, another
    /// question): a resolver ignores it and goes on waiting.
    #[error("not an answer to this question")]
    NotOurs,
    /// The reply is ours but cannot be read.
    #[error("malformed DNS reply")]
    Malformed,
    /// The server answered with an error code other than NXDOMAIN (SERVFAIL, REFUSED, …).
    #[error("DNS server answered {}", rcode_name(*.0))]
    Server(u8),
    /// The answer did not fit in a datagram and the server set TC.
    #[error("DNS reply truncated")]
    Truncated,
}

fn rcode_name(rcode: u8) -> String {
    match rcode {
        1 => "FORMERR".into(),
        2 => "SERVFAIL".into(),
        4 => "NOTIMP".into(),
        5 => "REFUSED".into(),
        n => format!("error {n}"),
    }
}

/// Checks a host name (without or with one trailing dot) and returns it without the dot.
pub(crate) fn check_name(name: &str) -> Result<&str, DnsError> {
    let bare = name.strip_suffix('.').unwrap_or(name);
    let ok = !bare.is_empty()
        && bare.len() <= MAX_NAME
        && bare.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    if ok {
        Ok(bare)
    } else {
        Err(DnsError::BadName(name.to_string()))
    }
}

/// A query for `name`'s records of type `rtype` with message id `id`, recursion desired.
pub(crate) fn query(id: u16, name: &str, rtype: RecordType) -> Result<Vec<u8>, DnsError> {
    let name = check_name(name)?;
    let mut msg = Vec::with_capacity(18 + name.len());
    msg.extend_from_slice(&id.to_be_bytes());
    msg.extend_from_slice(&[0x01, 0x00]); // RD
    msg.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, 0]); // one question
    for label in name.split('.') {
        msg.push(u8::try_from(label.len()).map_err(|_| DnsError::BadName(name.into()))?);
        msg.extend_from_slice(label.as_bytes());
    }
    msg.push(0);
    msg.extend_from_slice(&rtype.code().to_be_bytes());
    msg.extend_from_slice(&CLASS_IN.to_be_bytes());
    Ok(msg)
}

/// A cursor over a message, reading big-endian fields.
struct Reader<'a> {
    msg: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DnsError> {
        let end = self.pos.checked_add(n).ok_or(DnsError::Malformed)?;
        let bytes = self.msg.get(self.pos..end).ok_or(DnsError::Malformed)?;
        self.pos = end;
        Ok(bytes)
    }

    fn u16(&mut self) -> Result<u16, DnsError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    /// Reads a (maybe compressed) name at the cursor, lower-cased, dot-separated.
    fn name(&mut self) -> Result<String, DnsError> {
        let (name, next) = read_name(self.msg, self.pos)?;
        self.pos = next;
        Ok(name)
    }
}

/// The name starting at `start` and the offset just after it in the message.
fn read_name(msg: &[u8], start: usize) -> Result<(String, usize), DnsError> {
    let mut name = String::new();
    let mut pos = start;
    let mut after = None;
    let mut pointers = 0;
    loop {
        let len = *msg.get(pos).ok_or(DnsError::Malformed)?;
        match len {
            0 => {
                let next = after.unwrap_or(pos + 1);
                return Ok((name, next));
            }
            l if l & 0xC0 == 0xC0 => {
                let low = *msg.get(pos + 1).ok_or(DnsError::Malformed)?;
                pointers += 1;
                if pointers > MAX_POINTERS {
                    return Err(DnsError::Malformed);
                }
                after.get_or_insert(pos + 2);
                pos = usize::from(u16::from_be_bytes([l & 0x3F, low]));
            }
            l if l & 0xC0 != 0 => return Err(DnsError::Malformed),
            l => {
                let label = msg
                    .get(pos + 1..pos + 1 + usize::from(l))
                    .ok_or(DnsError::Malformed)?;
                if !name.is_empty() {
                    name.push('.');
                }
                name.extend(label.iter().map(|&b| char::from(b.to_ascii_lowercase())));
                if name.len() > MAX_NAME + 1 {
                    return Err(DnsError::Malformed);
                }
                pos += 1 + usize::from(l);
            }
        }
    }
}

/// Reads `reply` as the answer to the query `id` for `name`'s `rtype` records.
pub(crate) fn parse_reply(
    reply: &[u8],
    id: u16,
    name: &str,
    rtype: RecordType,
) -> Result<Reply, DnsError> {
    let asked = check_name(name)?.to_ascii_lowercase();
    let mut r = Reader { msg: reply, pos: 0 };
    let header = r.take(12).map_err(|_| DnsError::NotOurs)?;
    let flags = u16::from_be_bytes([header[2], header[3]]);
    let qdcount = u16::from_be_bytes([header[4], header[5]]);
    let ancount = u16::from_be_bytes([header[6], header[7]]);
    let is_response = flags & 0x8000 != 0;
    if u16::from_be_bytes([header[0], header[1]]) != id || !is_response || qdcount != 1 {
        return Err(DnsError::NotOurs);
    }
    let qname = r.name().map_err(|_| DnsError::NotOurs)?;
    let qtype = r.u16().map_err(|_| DnsError::NotOurs)?;
    let qclass = r.u16().map_err(|_| DnsError::NotOurs)?;
    if qname != asked || qtype != rtype.code() || qclass != CLASS_IN {
        return Err(DnsError::NotOurs);
    }
    if flags & 0x0200 != 0 {
        return Err(DnsError::Truncated);
    }
    match u8::try_from(flags & 0x000F).unwrap_or(0) {
        0 => {}
        3 => return Ok(Reply::NoSuchName),
        rcode => return Err(DnsError::Server(rcode)),
    }
    // The answer section: the name's records, and CNAMEs leading from it to others.
    let mut names = vec![asked];
    let mut addrs = Vec::new();
    for _ in 0..ancount {
        let owner = r.name()?;
        let typ = r.u16()?;
        let class = r.u16()?;
        r.take(4)?; // TTL: a one-shot lookup keeps nothing
        let rdlen = usize::from(r.u16()?);
        let rdata_at = r.pos;
        let rdata = r.take(rdlen)?;
        if class != CLASS_IN || !names.contains(&owner) {
            continue;
        }
        match typ {
            CNAME => {
                let (target, _) = read_name(reply, rdata_at)?;
                if !names.contains(&target) {
                    names.push(target);
                }
            }
            t if t == rtype.code() => match rtype {
                RecordType::A => {
                    let b: [u8; 4] = rdata.try_into().map_err(|_| DnsError::Malformed)?;
                    addrs.push(IpAddr::V4(Ipv4Addr::from(b)));
                }
                RecordType::Aaaa => {
                    let b: [u8; 16] = rdata.try_into().map_err(|_| DnsError::Malformed)?;
                    addrs.push(IpAddr::V6(Ipv6Addr::from(b)));
                }
            },
            _ => {}
        }
    }
    Ok(Reply::Addresses(addrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reply to `q` with the given rcode and answer records appended.
    fn reply(q: &[u8], rcode: u8, answers: &[&[u8]]) -> Vec<u8> {
        let mut m = q.to_vec();
        m[2] = 0x81;
        m[3] = 0x80 | rcode;
        m[7] = u8::try_from(answers.len()).unwrap();
        for a in answers {
            m.extend_from_slice(a);
        }
        m
    }

    /// An answer record whose owner is the question's name (pointer to offset 12).
    fn rr(typ: u16, rdata: &[u8]) -> Vec<u8> {
        let mut r = vec![0xC0, 12];
        r.extend_from_slice(&typ.to_be_bytes());
        r.extend_from_slice(&[0, 1, 0, 0, 0, 60]);
        r.extend_from_slice(&u16::try_from(rdata.len()).unwrap().to_be_bytes());
        r.extend_from_slice(rdata);
        r
    }

    #[test]
    fn query_bytes() {
        let q = query(0xBEEF, "pc.lan", RecordType::A).unwrap();
        assert_eq!(
            q,
            [
                0xBE, 0xEF, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, b'p', b'c', 3, b'l', b'a', b'n', 0, 0,
                1, 0, 1
            ]
        );
        let q6 = query(1, "pc.", RecordType::Aaaa).unwrap();
        assert_eq!(&q6[q6.len() - 4..], &[0, 28, 0, 1]);
    }

    #[test]
    fn bad_names_are_refused() {
        for bad in [
            "",
            ".",
            "a..b",
            "a b",
            "x/y",
            &"a".repeat(64),
            &"a.".repeat(130),
        ] {
            assert!(
                matches!(query(1, bad, RecordType::A), Err(DnsError::BadName(_))),
                "{bad:?}"
            );
        }
        assert!(query(1, &"a".repeat(63), RecordType::A).is_ok());
    }

    #[test]
    fn a_and_aaaa_answers() {
        let q = query(7, "Pc.Lan", RecordType::A).unwrap();
        let m = reply(&q, 0, &[&rr(1, &[10, 0, 0, 2]), &rr(1, &[10, 0, 0, 3])]);
        assert_eq!(
            parse_reply(&m, 7, "pc.lan", RecordType::A).unwrap(),
            Reply::Addresses(vec![
                "10.0.0.2".parse().unwrap(),
                "10.0.0.3".parse().unwrap()
            ])
        );
        let q = query(8, "pc.lan", RecordType::Aaaa).unwrap();
        let v6: Ipv6Addr = "fd00::2".parse().unwrap();
        let m = reply(&q, 0, &[&rr(28, &v6.octets())]);
        assert_eq!(
            parse_reply(&m, 8, "pc.lan", RecordType::Aaaa).unwrap(),
            Reply::Addresses(vec![IpAddr::V6(v6)])
        );
    }

    #[test]
    fn cname_chain_is_followed_and_strangers_ignored() {
        let q = query(9, "www.lan", RecordType::A).unwrap();
        // www.lan CNAME pc.lan; pc.lan A 10.0.0.9; other.lan A 6.6.6.6 (not ours).
        let cname = rr(CNAME, &[2, b'p', b'c', 3, b'l', b'a', b'n', 0]);
        let target_at = u8::try_from(q.len() + 12).unwrap(); // where "pc.lan" lands
        let mut a = vec![0xC0, target_at];
        a.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 10, 0, 0, 9]);
        let mut stranger = vec![5, b'o', b't', b'h', b'e', b'r', 0];
        stranger.extend_from_slice(&[0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 6, 6, 6, 6]);
        let m = reply(&q, 0, &[&cname, &a, &stranger]);
        assert_eq!(
            parse_reply(&m, 9, "www.lan", RecordType::A).unwrap(),
            Reply::Addresses(vec!["10.0.0.9".parse().unwrap()])
        );
    }

    #[test]
    fn rcodes_and_flags() {
        let q = query(3, "x.lan", RecordType::A).unwrap();
        assert_eq!(
            parse_reply(&reply(&q, 3, &[]), 3, "x.lan", RecordType::A),
            Ok(Reply::NoSuchName)
        );
        assert_eq!(
            parse_reply(&reply(&q, 2, &[]), 3, "x.lan", RecordType::A),
            Err(DnsError::Server(2))
        );
        let mut tc = reply(&q, 0, &[]);
        tc[2] |= 0x02;
        assert_eq!(
            parse_reply(&tc, 3, "x.lan", RecordType::A),
            Err(DnsError::Truncated)
        );
        // No records: the name exists without an A record.
        assert_eq!(
            parse_reply(&reply(&q, 0, &[]), 3, "x.lan", RecordType::A),
            Ok(Reply::Addresses(vec![]))
        );
    }

    #[test]
    fn replies_to_other_questions_are_not_ours() {
        let q = query(3, "x.lan", RecordType::A).unwrap();
        let m = reply(&q, 0, &[&rr(1, &[1, 2, 3, 4])]);
        assert_eq!(
            parse_reply(&m, 4, "x.lan", RecordType::A),
            Err(DnsError::NotOurs)
        );
        assert_eq!(
            parse_reply(&m, 3, "y.lan", RecordType::A),
            Err(DnsError::NotOurs)
        );
        assert_eq!(
            parse_reply(&m, 3, "x.lan", RecordType::Aaaa),
            Err(DnsError::NotOurs)
        );
        assert_eq!(
            parse_reply(&q, 3, "x.lan", RecordType::A),
            Err(DnsError::NotOurs),
            "a query is not a reply"
        );
    }

    #[test]
    fn malformed_replies_are_errors() {
        let q = query(3, "x.lan", RecordType::A).unwrap();
        let good = reply(&q, 0, &[&rr(1, &[1, 2, 3, 4])]);
        for cut in 0..good.len() {
            assert!(parse_reply(&good[..cut], 3, "x.lan", RecordType::A).is_err());
        }
        // An A record of 3 bytes.
        let short = reply(&q, 0, &[&rr(1, &[1, 2, 3])]);
        assert_eq!(
            parse_reply(&short, 3, "x.lan", RecordType::A),
            Err(DnsError::Malformed)
        );
        // An answer owner that points at itself.
        let mut looped = reply(&q, 0, &[]);
        let at = u8::try_from(looped.len()).unwrap();
        looped[7] = 1;
        looped.extend_from_slice(&[0xC0, at, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, 1, 1, 1, 1]);
        assert_eq!(
            parse_reply(&looped, 3, "x.lan", RecordType::A),
            Err(DnsError::Malformed)
        );
    }

    #[test]
    fn seeded_garbage_never_panics() {
        let q = query(3, "x.lan", RecordType::A).unwrap();
        let base = reply(&q, 0, &[&rr(1, &[1, 2, 3, 4]), &rr(CNAME, &[0xC0, 12])]);
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        for _ in 0..20_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let mut m = base.clone();
            let i = usize::try_from(state % m.len() as u64).unwrap();
            m[i] = m[i].wrapping_add(u8::try_from(state >> 56).unwrap() | 1);
            let _ = parse_reply(&m, 3, "x.lan", RecordType::A);
        }
    }
}
