//! Where one RESP reply ends in a byte buffer, so a connection can cut its input into whole
//! replies for redis-rs' `parse_redis_value` (which parses complete replies only). Covers
//! RESP2 and RESP3 (https://redis.io/docs/latest/develop/reference/protocol-spec/): simple
//! types end at their CRLF, bulk types carry their length, aggregates their element count
//! (maps and attributes two per entry; an attribute is followed by the reply it annotates).

/// The outcome of looking for one reply at the start of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A whole reply of this many bytes.
    Complete(usize),
    /// More bytes are needed.
    Partial,
    /// Not the Redis protocol (an unknown type byte or a bad length).
    Invalid,
}

/// The length of the reply that starts `buf` (module docs).
pub(crate) fn frame(buf: &[u8]) -> Frame {
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
mod tests {
    use super::{frame, Frame};

    #[test]
    fn whole_replies() {
        for reply in [
            &b"+OK\r\n"[..],
            b"-ERR no\r\n",
            b":42\r\n",
            b"$-1\r\n",
            b"$0\r\n\r\n",
            b"$5\r\nhe\r\no\r\n",
            b"*-1\r\n",
            b"*0\r\n",
            b"*2\r\n$1\r\na\r\n:1\r\n",
            b"*2\r\n*1\r\n+x\r\n$-1\r\n",
            b"%1\r\n+k\r\n:1\r\n",
            b"|1\r\n+a\r\n+b\r\n:7\r\n",
            b">2\r\n+message\r\n$1\r\n0\r\n",
            b"_\r\n",
        ] {
            assert_eq!(
                frame(reply),
                Frame::Complete(reply.len()),
                "{:?}",
                String::from_utf8_lossy(reply)
            );
            for cut in 0..reply.len() {
                assert_eq!(frame(&reply[..cut]), Frame::Partial, "{cut} bytes");
            }
        }
    }

    #[test]
    fn only_the_first_reply() {
        assert_eq!(frame(b":1\r\n:2\r\n"), Frame::Complete(4));
    }

    #[test]
    fn not_the_protocol() {
        assert_eq!(frame(b"HTTP/1.1 400\r\n"), Frame::Invalid);
        assert_eq!(frame(b"$x\r\n"), Frame::Invalid);
        assert_eq!(frame(b"*-2\r\n"), Frame::Invalid);
        assert_eq!(frame(b"$99999999999999999999\r\n"), Frame::Invalid);
    }
}
