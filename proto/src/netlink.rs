//! Netlink and generic netlink, sans I/O: the request a peer writes (a message header, the
//! generic netlink header, attributes) and the replies it reads (one datagram holds several
//! messages: answers, `NLMSG_DONE`, `NLMSG_ERROR`), with attribute iteration that checks every
//! length before use. Netlink is in the host's byte order. The nl80211 meaning of the
//! attributes is in [`crate::nl80211`]; the socket is the peer's (`native-peer`'s `sys`).

use thiserror::Error;

/// A message that is an error or an acknowledgement (`errno` 0).
pub const NLMSG_ERROR: u16 = 2;
/// The end of a dump.
pub const NLMSG_DONE: u16 = 3;
/// The generic netlink controller (family names → ids).
pub const GENL_ID_CTRL: u16 = 0x10;
/// A request.
pub const NLM_F_REQUEST: u16 = 1;
/// One of several messages of a reply.
pub const NLM_F_MULTI: u16 = 2;
/// Ask for an acknowledgement.
pub const NLM_F_ACK: u16 = 4;
/// Ask for every object (root | match).
pub const NLM_F_DUMP: u16 = 0x300;

/// The netlink message header's length.
const HEADER_LEN: usize = 16;
/// The generic netlink header's length (cmd, version, reserved u16).
const GENL_LEN: usize = 4;
/// The controller's "get family" command and its attributes.
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
/// An attribute type's flag bits (nested, network byte order).
const NLA_TYPE_MASK: u16 = 0x3fff;

/// What is wrong with bytes read from a netlink socket.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NetlinkError {
    /// A length field points outside the bytes, or is below its header.
    #[error("netlink message cut short or its length is wrong")]
    Truncated,
    /// An attribute's value is not the size its meaning needs.
    #[error("netlink attribute {kind} has {len} bytes, not the size of its type")]
    BadSize {
        /// The attribute's type.
        kind: u16,
        /// Its value's length.
        len: usize,
    },
    /// A string attribute that is not UTF-8.
    #[error("netlink attribute {0} is not text")]
    NotText(u16),
}

/// Rounds up to netlink's 4-byte alignment.
fn align(n: usize) -> usize {
    (n + 3) & !3
}

/// One generic netlink request being built: headers, then attributes, each padded to 4 bytes.
#[derive(Debug, Clone)]
pub struct GenlMessage {
    buf: Vec<u8>,
}

impl GenlMessage {
    /// A message to `family` with `flags` (with [`NLM_F_REQUEST`] or not), sequence number
    /// `seq`, generic netlink command `cmd` and `version`.
    pub fn new(family: u16, flags: u16, seq: u32, cmd: u8, version: u8) -> GenlMessage {
        let mut buf = Vec::with_capacity(64);
        buf.extend_from_slice(&0u32.to_ne_bytes()); // length, filled in by into_bytes
        buf.extend_from_slice(&family.to_ne_bytes());
        buf.extend_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(&seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes()); // port id: the kernel fills it in
        buf.extend_from_slice(&[cmd, version, 0, 0]);
        GenlMessage { buf }
    }

    /// Appends an attribute of `kind` holding `value`.
    pub fn attr(&mut self, kind: u16, value: &[u8]) -> &mut Self {
        let len = u16::try_from(4 + value.len()).unwrap_or(u16::MAX);
        self.buf.extend_from_slice(&len.to_ne_bytes());
        self.buf.extend_from_slice(&kind.to_ne_bytes());
        self.buf.extend_from_slice(value);
        self.buf.resize(align(self.buf.len()), 0);
        self
    }

    /// Appends a u8 attribute.
    pub fn attr_u8(&mut self, kind: u16, value: u8) -> &mut Self {
        self.attr(kind, &[value])
    }

    /// Appends a u16 attribute.
    pub fn attr_u16(&mut self, kind: u16, value: u16) -> &mut Self {
        self.attr(kind, &value.to_ne_bytes())
    }

    /// Appends a u32 attribute.
    pub fn attr_u32(&mut self, kind: u16, value: u32) -> &mut Self {
        self.attr(kind, &value.to_ne_bytes())
    }

    /// Appends a u64 attribute.
    pub fn attr_u64(&mut self, kind: u16, value: u64) -> &mut Self {
        self.attr(kind, &value.to_ne_bytes())
    }

    /// Appends a NUL-terminated string attribute.
    pub fn attr_str(&mut self, kind: u16, value: &str) -> &mut Self {
        let mut bytes = Vec::with_capacity(value.len() + 1);
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0);
        self.attr(kind, &bytes)
    }

    /// The message's bytes, its length filled in.
    pub fn into_bytes(mut self) -> Vec<u8> {
        let len = u32::try_from(self.buf.len()).unwrap_or(u32::MAX);
        self.buf[..4].copy_from_slice(&len.to_ne_bytes());
        self.buf
    }
}

/// The request for a generic netlink family's id by name (`nl80211`, `MAC80211_HWSIM`).
pub fn get_family(name: &str, seq: u32) -> Vec<u8> {
    let mut msg = GenlMessage::new(GENL_ID_CTRL, NLM_F_REQUEST, seq, CTRL_CMD_GETFAMILY, 1);
    msg.attr_str(CTRL_ATTR_FAMILY_NAME, name);
    msg.into_bytes()
}

/// A family's id from the attributes of the controller's answer.
pub fn family_id(attrs: Attrs<'_>) -> Option<u16> {
    attrs
        .filter_map(Result::ok)
        .find(|a| a.kind == CTRL_ATTR_FAMILY_ID)
        .and_then(|a| a.u16().ok())
}

/// One message of a reply.
#[derive(Debug, Clone, Copy)]
pub enum Reply<'a> {
    /// A generic netlink message: its type (the family), flags, sequence, command and
    /// attributes. (On a `NETLINK_ROUTE` socket, an rtnetlink message: its type is an `RTM_`
    /// one and only `body` means anything; see [`crate::rtnetlink`].)
    Genl {
        /// The message type: the family's id.
        kind: u16,
        /// Its flags ([`NLM_F_MULTI`] in a dump).
        flags: u16,
        /// The request's sequence number.
        seq: u32,
        /// The generic netlink command.
        cmd: u8,
        /// Its attributes.
        attrs: Attrs<'a>,
        /// Everything after the netlink header (the generic header, then the attributes).
        body: &'a [u8],
    },
    /// The end of a dump.
    Done {
        /// The request's sequence number.
        seq: u32,
    },
    /// An error (a positive errno) or, with 0, an acknowledgement.
    Error {
        /// The failed request's sequence number.
        seq: u32,
        /// The error number, positive; 0 for an acknowledgement.
        errno: i32,
    },
    /// Another control message (`NLMSG_NOOP`, `NLMSG_OVERRUN`).
    Other {
        /// Its type.
        kind: u16,
    },
}

/// The messages of one datagram read from a netlink socket.
pub fn replies(datagram: &[u8]) -> Replies<'_> {
    Replies { rest: datagram }
}

/// Iterator over the messages of a datagram; stops after the first malformed one.
#[derive(Debug, Clone)]
pub struct Replies<'a> {
    rest: &'a [u8],
}

pub(crate) fn ne_u16(b: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([b[at], b[at + 1]])
}

pub(crate) fn ne_u32(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl<'a> Iterator for Replies<'a> {
    type Item = Result<Reply<'a>, NetlinkError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let b = self.rest;
        let len = if b.len() >= HEADER_LEN {
            ne_u32(b, 0) as usize
        } else {
            0
        };
        if len < HEADER_LEN || len > b.len() {
            self.rest = &[];
            return Some(Err(NetlinkError::Truncated));
        }
        self.rest = &b[align(len).min(b.len())..];
        let (kind, flags, seq) = (ne_u16(b, 4), ne_u16(b, 6), ne_u32(b, 8));
        let body = &b[HEADER_LEN..len];
        Some(match kind {
            NLMSG_DONE => Ok(Reply::Done { seq }),
            NLMSG_ERROR if body.len() >= 4 => {
                let code = i32::from_ne_bytes([body[0], body[1], body[2], body[3]]);
                Ok(Reply::Error {
                    seq,
                    errno: code.saturating_neg(),
                })
            }
            NLMSG_ERROR => Err(NetlinkError::Truncated),
            k if k < GENL_ID_CTRL => Ok(Reply::Other { kind: k }),
            _ if body.len() < GENL_LEN => Err(NetlinkError::Truncated),
            _ => Ok(Reply::Genl {
                kind,
                flags,
                seq,
                cmd: body[0],
                attrs: Attrs::new(&body[GENL_LEN..]),
                body,
            }),
        })
    }
}

/// The attributes in a stretch of bytes (a message's, or a nested attribute's value).
#[derive(Debug, Clone, Copy)]
pub struct Attrs<'a> {
    rest: &'a [u8],
}

impl<'a> Attrs<'a> {
    /// The attributes laid out in `bytes`.
    pub fn new(bytes: &'a [u8]) -> Attrs<'a> {
        Attrs { rest: bytes }
    }
}

impl<'a> Iterator for Attrs<'a> {
    type Item = Result<Attr<'a>, NetlinkError>;

    fn next(&mut self) -> Option<Self::Item> {
        let b = self.rest;
        if b.len() < 4 {
            // Trailing padding of fewer than 4 bytes ends the list.
            self.rest = &[];
            return None;
        }
        let len = usize::from(ne_u16(b, 0));
        if len < 4 || len > b.len() {
            self.rest = &[];
            return Some(Err(NetlinkError::Truncated));
        }
        self.rest = &b[align(len).min(b.len())..];
        Some(Ok(Attr {
            kind: ne_u16(b, 2) & NLA_TYPE_MASK,
            value: &b[4..len],
        }))
    }
}

/// One attribute: its type (flag bits masked off) and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr<'a> {
    /// The attribute's type.
    pub kind: u16,
    /// Its value.
    pub value: &'a [u8],
}

impl<'a> Attr<'a> {
    /// A value of exactly `N` bytes (an address).
    pub fn exact<const N: usize>(&self) -> Result<[u8; N], NetlinkError> {
        self.value.try_into().map_err(|_| NetlinkError::BadSize {
            kind: self.kind,
            len: self.value.len(),
        })
    }

    /// A u8 value.
    pub fn u8(&self) -> Result<u8, NetlinkError> {
        Ok(self.exact::<1>()?[0])
    }

    /// An s8 value (dBm figures).
    pub fn i8(&self) -> Result<i8, NetlinkError> {
        Ok(i8::from_ne_bytes(self.exact::<1>()?))
    }

    /// A u16 value.
    pub fn u16(&self) -> Result<u16, NetlinkError> {
        Ok(u16::from_ne_bytes(self.exact::<2>()?))
    }

    /// A u32 value.
    pub fn u32(&self) -> Result<u32, NetlinkError> {
        Ok(u32::from_ne_bytes(self.exact::<4>()?))
    }

    /// A u64 value.
    pub fn u64(&self) -> Result<u64, NetlinkError> {
        Ok(u64::from_ne_bytes(self.exact::<8>()?))
    }

    /// A string value, up to its NUL.
    pub fn str(&self) -> Result<&'a str, NetlinkError> {
        let end = self
            .value
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(self.value.len());
        std::str::from_utf8(&self.value[..end]).map_err(|_| NetlinkError::NotText(self.kind))
    }

    /// The attributes nested in this one's value.
    pub fn nested(&self) -> Attrs<'a> {
        Attrs::new(self.value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_request_is_laid_out_as_the_kernel_reads_it() {
        let bytes = get_family("nl80211", 7);
        // 16 header + 4 genl + attribute (4 + "nl80211\0" = 12) = 32.
        assert_eq!(bytes.len(), 32);
        assert_eq!(ne_u32(&bytes, 0), 32);
        assert_eq!(ne_u16(&bytes, 4), GENL_ID_CTRL);
        assert_eq!(ne_u16(&bytes, 6), NLM_F_REQUEST);
        assert_eq!(ne_u32(&bytes, 8), 7);
        assert_eq!(&bytes[16..20], &[CTRL_CMD_GETFAMILY, 1, 0, 0]);
        assert_eq!(ne_u16(&bytes, 20), 12);
        assert_eq!(ne_u16(&bytes, 22), CTRL_ATTR_FAMILY_NAME);
        assert_eq!(&bytes[24..32], b"nl80211\0");
    }

    #[test]
    fn attributes_are_padded_and_read_back() {
        let mut msg = GenlMessage::new(0x22, NLM_F_REQUEST | NLM_F_DUMP, 1, 17, 0);
        msg.attr_u8(1, 0xfe)
            .attr_u16(2, 0x1234)
            .attr_u32(3, 9)
            .attr_u64(4, u64::MAX - 1)
            .attr_str(5, "wlan0");
        let bytes = msg.into_bytes();
        assert_eq!(bytes.len() % 4, 0);
        let all: Vec<Reply<'_>> = replies(&bytes).map(Result::unwrap).collect();
        let [
            Reply::Genl {
                kind,
                flags,
                seq,
                cmd,
                attrs,
                ..
            },
        ] = all[..]
        else {
            panic!("one generic message: {all:?}");
        };
        assert_eq!((kind, flags, seq, cmd), (0x22, 0x301, 1, 17));
        let attrs: Vec<Attr<'_>> = attrs.map(Result::unwrap).collect();
        assert_eq!(attrs.len(), 5);
        assert_eq!(attrs[0].u8(), Ok(0xfe));
        assert_eq!(attrs[0].i8(), Ok(-2));
        assert_eq!(attrs[1].u16(), Ok(0x1234));
        assert_eq!(attrs[2].u32(), Ok(9));
        assert_eq!(attrs[3].u64(), Ok(u64::MAX - 1));
        assert_eq!(attrs[4].str(), Ok("wlan0"));
        assert_eq!(
            attrs[2].u16(),
            Err(NetlinkError::BadSize { kind: 3, len: 4 })
        );
    }

    #[test]
    fn done_error_and_ack_are_told_apart_in_one_datagram() {
        let mut datagram = Vec::new();
        for (kind, code) in [(NLMSG_ERROR, -19i32), (NLMSG_ERROR, 0), (NLMSG_DONE, 0)] {
            datagram.extend_from_slice(&20u32.to_ne_bytes());
            datagram.extend_from_slice(&kind.to_ne_bytes());
            datagram.extend_from_slice(&0u16.to_ne_bytes());
            datagram.extend_from_slice(&5u32.to_ne_bytes());
            datagram.extend_from_slice(&0u32.to_ne_bytes());
            datagram.extend_from_slice(&code.to_ne_bytes());
        }
        let all: Vec<_> = replies(&datagram).map(Result::unwrap).collect();
        assert!(matches!(all[0], Reply::Error { seq: 5, errno: 19 }));
        assert!(matches!(all[1], Reply::Error { seq: 5, errno: 0 }));
        assert!(matches!(all[2], Reply::Done { seq: 5 }));
    }

    #[test]
    fn lengths_that_lie_end_the_walk_with_an_error() {
        let bytes = get_family("x", 1);
        // A message length past the datagram.
        let mut long = bytes.clone();
        long[..4].copy_from_slice(&1000u32.to_ne_bytes());
        let all: Vec<_> = replies(&long).collect();
        assert!(matches!(all[..], [Err(NetlinkError::Truncated)]), "{all:?}");
        // A message length below the header.
        let mut short = bytes.clone();
        short[..4].copy_from_slice(&3u32.to_ne_bytes());
        assert_eq!(replies(&short).count(), 1);
        // An attribute length past its message.
        let all: Vec<_> = Attrs::new(&[200, 0, 1, 0, 0]).collect();
        assert_eq!(all, vec![Err(NetlinkError::Truncated)]);
        // Bytes after the last whole attribute (padding) end the list quietly.
        assert_eq!(Attrs::new(&[8, 0, 1, 0, 1, 2, 3, 4, 0, 0]).count(), 1);
    }

    #[test]
    fn a_family_id_is_read_from_the_controllers_answer() {
        let mut msg = GenlMessage::new(GENL_ID_CTRL, 0, 1, 1, 2);
        msg.attr_str(CTRL_ATTR_FAMILY_NAME, "nl80211")
            .attr_u16(CTRL_ATTR_FAMILY_ID, 0x22);
        let bytes = msg.into_bytes();
        let Some(Ok(Reply::Genl { attrs, .. })) = replies(&bytes).next() else {
            panic!("a generic message");
        };
        assert_eq!(family_id(attrs), Some(0x22));
    }
}
