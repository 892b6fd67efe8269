//! Reading RESP replies (<https://redis.io/docs/latest/develop/reference/protocol-spec/>) out of
//! a connection's input, as redis-rs' `Value`s: for connections whose bytes the core does not
//! read through redis-rs (the Node addon's sockets on the JavaScript thread, the asyncio
//! event loop's connections: `loop_io`).
//!
//! - [`read`]: the shapes the core's commands get back (simple strings, integers, bulk
//!   strings, arrays of them, RESP3 nulls and booleans), decoded in one pass over the bytes,
//!   with no copy of the input and no intermediate tree: redis-rs' generic parser (`combine`
//!   over a buffered reader) cost about a fifth of a `data` event's time on the Node addon's local
//!   engine (node/README.md "Design"). Values are what redis-rs' parser makes of the same bytes (`+OK` is
//!   `Value::Okay`), so `RedisTransport::run_on` reads them as it reads its own.
//! - [`frame`]: where any reply ends (RESP2 and RESP3: simple types end at their CRLF, bulk
//!   types carry their length, aggregates their element count, maps and attributes two per
//!   entry, an attribute followed by the reply it annotates), for the replies [`read`] leaves
//!   to redis-rs' `parse_redis_value` (which parses complete replies only): error replies
//!   (their codes are redis-rs' to classify: `NOSCRIPT`, `WRONGTYPE`, ...), pushes, maps,
//!   sets, doubles and the rest, and anything that is not the protocol.

use redis::{RedisResult, Value};

/// The next reply at the start of a connection's input ([`next`]).
#[derive(Debug)]
pub enum Next {
    /// A whole reply (as redis-rs' `parse_redis_value` makes it), and its length in bytes.
    Reply(RedisResult<Value>, usize),
    /// More bytes are needed.
    Partial,
    /// Not the Redis protocol: nothing after it can be trusted.
    Invalid,
}

/// The reply that starts `buf`: read directly when it has one of the core's shapes, else
/// framed and parsed by redis-rs (module docs).
pub fn next(buf: &[u8]) -> Next {
    match read(buf) {
        Read::Reply(value, n) => Next::Reply(Ok(value), n),
        Read::Partial => Next::Partial,
        Read::Other => match frame(buf) {
            Frame::Complete(n) => Next::Reply(redis::parse_redis_value(&buf[..n]), n),
            Frame::Partial => Next::Partial,
            Frame::Invalid => Next::Invalid,
        },
    }
}

/// What [`read`] found at the start of a buffer.
#[derive(Debug, PartialEq)]
pub enum Read {
    /// One whole reply, and its length in bytes.
    Reply(Value, usize),
    /// More bytes are needed.
    Partial,
    /// A reply of another shape, or not the protocol: for [`frame`] and redis-rs.
    Other,
}

/// Why [`read`] stopped early.
enum Stop {
    Partial,
    Other,
}

/// Nesting depth [`read`] decodes itself (redis-rs' parser refuses beyond 100).
const MAX_DEPTH: usize = 32;

/// Decodes the reply that starts `buf` if it has one of the shapes [`read`] knows (module docs).
pub fn read(buf: &[u8]) -> Read {
    let mut pos = 0;
    match value(buf, &mut pos, 0) {
        Ok(v) => Read::Reply(v, pos),
        Err(Stop::Partial) => Read::Partial,
        Err(Stop::Other) => Read::Other,
    }
}

fn value(buf: &[u8], pos: &mut usize, depth: usize) -> Result<Value, Stop> {
    let Some(&kind) = buf.get(*pos) else {
        return Err(Stop::Partial);
    };
    *pos += 1;
    let line = line(buf, pos)?;
    match kind {
        b'+' if line == b"OK" => Ok(Value::Okay),
        b'+' => std::str::from_utf8(line)
            .map(|s| Value::SimpleString(s.to_owned()))
            .map_err(|_| Stop::Other),
        b':' => std::str::from_utf8(line)
            .ok()
            .and_then(|s| s.parse().ok())
            .map(Value::Int)
            .ok_or(Stop::Other),
        b'$' => {
            let Some(len) = length(line).ok_or(Stop::Other)? else {
                return Ok(Value::Nil);
            };
            let start = *pos;
            let end = usize::try_from(len)
                .ok()
                .and_then(|l| start.checked_add(l))
                .ok_or(Stop::Other)?;
            let Some(tail) = buf.get(end..end.saturating_add(2)) else {
                return Err(Stop::Partial);
            };
            if tail != b"\r\n" {
                return Err(Stop::Other);
            }
            *pos = end + 2;
            Ok(Value::BulkString(buf[start..end].to_vec()))
        }
        b'*' => {
            let Some(count) = length(line).ok_or(Stop::Other)? else {
                return Ok(Value::Nil);
            };
            if depth >= MAX_DEPTH {
                return Err(Stop::Other);
            }
            // Each element takes 3 bytes at least: a count larger than the input is not
            // allocated for before the bytes are there.
            let room = (buf.len() - *pos) / 3;
            let count = usize::try_from(count).map_err(|_| Stop::Other)?;
            let mut items = Vec::with_capacity(count.min(room));
            for _ in 0..count {
                items.push(value(buf, pos, depth + 1)?);
            }
            Ok(Value::Array(items))
        }
        b'_' if line.is_empty() => Ok(Value::Nil),
        b'#' if line == b"t" => Ok(Value::Boolean(true)),
        b'#' if line == b"f" => Ok(Value::Boolean(false)),
        _ => Err(Stop::Other),
    }
}

/// The line at `pos` without its CRLF; moves `pos` past it. A CR not followed by LF is left
/// to redis-rs (it reads up to the first CRLF).
fn line<'a>(buf: &'a [u8], pos: &mut usize) -> Result<&'a [u8], Stop> {
    let rest = &buf[*pos..];
    let Some(cr) = rest.iter().position(|&b| b == b'\r') else {
        return Err(Stop::Partial);
    };
    match rest.get(cr + 1) {
        None => Err(Stop::Partial),
        Some(b'\n') => {
            *pos += cr + 2;
            Ok(&rest[..cr])
        }
        Some(_) => Err(Stop::Other),
    }
}

/// The outcome of looking for one reply at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A whole reply of this many bytes.
    Complete(usize),
    /// More bytes are needed.
    Partial,
    /// Not the Redis protocol (an unknown type byte or a bad length).
    Invalid,
}

/// The length of the reply that starts `buf` (module docs).
pub fn frame(buf: &[u8]) -> Frame {
    let mut pos = 0;
    // Replies still to read, counting the one at `pos`.
    let mut remaining: u64 = 1;
    while remaining > 0 {
        let Some(&kind) = buf.get(pos) else {
            return Frame::Partial;
        };
        let Some(eol) = find_crlf(&buf[pos + 1..]) else {
            return Frame::Partial;
        };
        let line = &buf[pos + 1..pos + 1 + eol];
        pos += eol + 3;
        remaining -= 1;
        match kind {
            b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => {}
            b'$' | b'!' | b'=' => {
                let Some(len) = length(line) else {
                    return Frame::Invalid;
                };
                if let Some(len) = len {
                    // The payload and its CRLF.
                    let Some(end) = usize::try_from(len).ok().and_then(|l| pos.checked_add(l + 2)) else {
                        return Frame::Invalid;
                    };
                    if buf.len() < end {
                        return Frame::Partial;
                    }
                    pos = end;
                }
            }
            b'*' | b'~' | b'>' | b'%' | b'|' => {
                let Some(count) = length(line) else {
                    return Frame::Invalid;
                };
                let count = count.unwrap_or(0);
                let items = match kind {
                    b'%' => count.saturating_mul(2),
                    b'|' => count.saturating_mul(2).saturating_add(1),
                    _ => count,
                };
                remaining = remaining.saturating_add(items);
            }
            _ => return Frame::Invalid,
        }
    }
    Frame::Complete(pos)
}

fn find_crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// A length line: `Some(None)` for the null marker `-1`, `None` when it is not a length.
fn length(line: &[u8]) -> Option<Option<u64>> {
    if line == b"-1" {
        return Some(None);
    }
    if line.is_empty() || line.len() > 19 || !line.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(line).ok()?.parse().ok().map(Some)
}

#[cfg(test)]
#[path = "resp_tests.rs"]
mod tests;
