//! Minimal raw RESP over `std::net::TcpStream`, for readiness and identity checks.
//!
//! Why not the `redis` crate: the harness must tell "not answering" from "answering" with a
//! hard read timeout (a paused server accepts TCP connections in the kernel backlog but never
//! replies), and must not depend on the client library under test.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::Duration;

/// Sends one inline command to 127.0.0.1:`port` and returns the reply's payload: the text
/// of a `+simple` string or of a `$bulk` string, or an `InvalidData` error for `-ERR` and
/// anything else. `timeout` bounds the connect, the write and each read separately.
/// Logged in with `AUTH password` first when one is given.
pub(crate) fn inline_command_as(
    port: u16,
    password: Option<&str>,
    command: &str,
    timeout: Duration,
) -> io::Result<String> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.set_nodelay(true)?;
    let mut replies_to_skip = 0;
    if let Some(p) = password {
        stream.write_all(format!("AUTH {p}\r\n").as_bytes())?;
        replies_to_skip = 1;
    }
    stream.write_all(format!("{command}\r\n").as_bytes())?;

    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if replies_to_skip > 0 {
            if let Some(end) = buf.windows(2).position(|w| w == b"\r\n") {
                if buf.first() != Some(&b'+') {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "AUTH refused"));
                }
                buf.drain(..end + 2);
                replies_to_skip = 0;
                continue;
            }
        } else if let Some(reply) = parse_reply(&buf)? {
            return Ok(reply);
        }
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "connection closed before a complete reply",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Parses one complete reply from `buf`; `Ok(None)` if more bytes are needed.
fn parse_reply(buf: &[u8]) -> io::Result<Option<String>> {
    let Some(line_end) = buf.windows(2).position(|w| w == b"\r\n") else {
        return Ok(None);
    };
    let line = String::from_utf8_lossy(&buf[1..line_end]).into_owned();
    let bad = |msg: String| io::Error::new(io::ErrorKind::InvalidData, msg);
    match buf.first() {
        Some(b'+') => Ok(Some(line)),
        Some(b'$') => {
            let len: usize = line
                .parse()
                .map_err(|_| bad(format!("bad bulk length {line:?}")))?;
            let start = line_end + 2;
            if buf.len() < start + len + 2 {
                return Ok(None);
            }
            Ok(Some(
                String::from_utf8_lossy(&buf[start..start + len]).into_owned(),
            ))
        }
        Some(b'-') => Err(bad(format!("redis error reply: {line}"))),
        _ => Err(bad(format!(
            "unexpected reply {:?}",
            String::from_utf8_lossy(&buf[..line_end])
        ))),
    }
}

/// Returns true if a Redis server on 127.0.0.1:`port` answers an inline `PING` with `+PONG`
/// within `timeout` (applied to the connect and to each read and write separately, so the
/// whole call takes at most about 3 × `timeout`).
///
/// False for a refused connection, a timeout (e.g. the server is `SIGSTOP`ped: the kernel
/// still accepts the connection, but nothing replies), or any other reply.
pub fn ping_port(port: u16, timeout: Duration) -> bool {
    ping_port_as(port, None, timeout)
}

/// As [`ping_port`], logged in with `password` when one is given.
pub(crate) fn ping_port_as(port: u16, password: Option<&str>, timeout: Duration) -> bool {
    matches!(inline_command_as(port, password, "PING", timeout), Ok(reply) if reply == "PONG")
}

/// The `process_id` field of `INFO server` on 127.0.0.1:`port`, to verify that the server
/// answering on a port is the process we started (and not someone else's that won a race).
pub(crate) fn server_pid(port: u16, password: Option<&str>, timeout: Duration) -> io::Result<u32> {
    let info = inline_command_as(port, password, "INFO server", timeout)?;
    info.lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "no process_id in INFO"))
}

#[cfg(test)]
mod tests {
    use super::parse_reply;

    #[test]
    fn parses_simple_bulk_and_partial_replies() {
        assert_eq!(parse_reply(b"+PONG\r\n").unwrap().as_deref(), Some("PONG"));
        assert_eq!(parse_reply(b"+PO").unwrap(), None);
        assert_eq!(
            parse_reply(b"$5\r\nab\r\nc\r\n").unwrap().as_deref(),
            Some("ab\r\nc")
        );
        assert_eq!(parse_reply(b"$5\r\nab").unwrap(), None);
        assert!(parse_reply(b"-ERR nope\r\n").is_err());
    }
}
