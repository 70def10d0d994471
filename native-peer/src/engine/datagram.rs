//! What the datagram workers (`udp.rs`) need from a socket: send and receive one datagram on a
//! connected socket, with timeouts. UDP sockets and connected DCCP sockets both provide it, so
//! DCCP reuses UDP's header, sequence numbers, pacing and loss/jitter statistics.

use std::io;
use std::net::UdpSocket;
use std::time::Duration;

use crate::dccp::DccpSocket;

/// A connected datagram socket.
pub(crate) trait Datagrams {
    /// Sends one datagram.
    fn send(&self, buf: &[u8]) -> io::Result<usize>;
    /// Receives one datagram.
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize>;
    /// SO_RCVTIMEO.
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()>;
    /// SO_SNDTIMEO.
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()>;
}

impl Datagrams for UdpSocket {
    fn send(&self, buf: &[u8]) -> io::Result<usize> {
        UdpSocket::send(self, buf)
    }
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        UdpSocket::recv(self, buf)
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        UdpSocket::set_read_timeout(self, t)
    }
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        UdpSocket::set_write_timeout(self, t)
    }
}

impl Datagrams for DccpSocket {
    fn send(&self, buf: &[u8]) -> io::Result<usize> {
        DccpSocket::send(self, buf)
    }
    fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        DccpSocket::recv(self, buf)
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        DccpSocket::set_read_timeout(self, t)
    }
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        DccpSocket::set_write_timeout(self, t)
    }
}
