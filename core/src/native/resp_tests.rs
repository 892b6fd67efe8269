//! Tests of resp.rs: replies of every shape read as redis-rs reads them, cut anywhere.
use super::{frame, next, read, Frame, Next, Read};
use redis::Value;

/// Replies of every shape, each with what it must decode to where [`read`] decodes it.
fn replies() -> Vec<(Vec<u8>, bool)> {
    let mut big = b"$1048580\r\n".to_vec();
    // A big bulk string with CRLFs and type bytes inside: read by its length only.
    big.extend((0..1_048_580u32).map(|i| b"\r\n*$-+:"[(i % 7) as usize]));
    big.extend_from_slice(b"\r\n");
    let direct = |r: &[u8]| (r.to_vec(), true);
    let redis_rs = |r: &[u8]| (r.to_vec(), false);
    vec![
        direct(b"+OK\r\n"),
        direct(b"+PONG\r\n"),
        direct(b"+\r\n"),
        direct(b":0\r\n"),
        direct(b":-42\r\n"),
        direct(b":9223372036854775807\r\n"),
        direct(b"$-1\r\n"),
        direct(b"$0\r\n\r\n"),
        direct(b"$5\r\nhe\r\no\r\n"),
        direct(b"$3\r\n\xff\x00\xfe\r\n"),
        direct(b"*-1\r\n"),
        direct(b"*0\r\n"),
        direct(b"*2\r\n:1\r\n:1234\r\n"),
        direct(b"*3\r\n:1\r\n$-1\r\n$2\r\nab\r\n"),
        direct(b"*2\r\n*2\r\n:0\r\n*1\r\n+x\r\n$-1\r\n"),
        direct(b"_\r\n"),
        direct(b"#t\r\n"),
        direct(b"#f\r\n"),
        (big, true),
        // Errors: their codes decide how the core maps them (NOSCRIPT -> EVAL).
        redis_rs(b"-ERR unknown command 'FOO'\r\n"),
        redis_rs(b"-NOSCRIPT No matching script. Please use EVAL.\r\n"),
        redis_rs(b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
        redis_rs(b"-NOPERM this user has no permissions\r\n"),
        redis_rs(b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"),
        redis_rs(b"*2\r\n:1\r\n-ERR inside\r\n"),
        redis_rs(b"*1\r\n*1\r\n-WRONGTYPE deep\r\n"),
        redis_rs(b"!21\r\nSYNTAX invalid syntax\r\n"),
        // The rarer shapes.
        redis_rs(b"%1\r\n+k\r\n:1\r\n"),
        redis_rs(b"~2\r\n:1\r\n:2\r\n"),
        redis_rs(b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n"),
        redis_rs(b",3.5\r\n"),
        redis_rs(b"(12345678901234567890\r\n"),
        redis_rs(b"=8\r\ntxt:abcd\r\n"),
        redis_rs(b"|1\r\n+a\r\n+b\r\n:7\r\n"),
        // Shapes redis-rs refuses (a parse error, as before): left to it.
        redis_rs(b":12x\r\n"),
        redis_rs(b":\r\n"),
        redis_rs(b"+\xff\r\n"),
        redis_rs(b"#x\r\n"),
    ]
}

fn show(reply: &[u8]) -> String {
    String::from_utf8_lossy(&reply[..reply.len().min(40)]).into_owned()
}

#[test]
fn replies_decode_as_redis_rs_decodes_them() {
    for (reply, direct) in replies() {
        let whole = redis::parse_redis_value(&reply);
        match next(&reply) {
            Next::Reply(got, n) => {
                assert_eq!(n, reply.len(), "{}", show(&reply));
                assert_eq!(format!("{got:?}"), format!("{whole:?}"), "{}", show(&reply));
            }
            other => panic!("{}: {other:?}", show(&reply)),
        }
        // The core's shapes skip redis-rs' parser; the others go to it.
        match read(&reply) {
            Read::Reply(value, n) => {
                assert!(direct, "read decoded {}", show(&reply));
                assert_eq!(n, reply.len());
                assert_eq!(Ok(value), whole.map_err(|e| e.to_string()));
            }
            Read::Other => assert!(!direct, "read left {} to redis-rs", show(&reply)),
            Read::Partial => panic!("{}: partial", show(&reply)),
        }
    }
}

#[test]
fn a_reply_cut_anywhere_is_partial() {
    for (reply, _) in replies() {
        // Every cut of the small ones; of the big one, the ends and a spread between.
        let cuts: Vec<usize> = if reply.len() < 200 {
            (0..reply.len()).collect()
        } else {
            (0..40)
                .chain((40..reply.len()).step_by(4099))
                .chain(reply.len() - 40..reply.len())
                .collect()
        };
        for cut in cuts {
            assert!(
                matches!(next(&reply[..cut]), Next::Partial),
                "{} cut at {cut}: {:?}",
                show(&reply),
                next(&reply[..cut])
            );
        }
    }
}

/// Feeds `input` in chunks cut at `cuts` as a connection does (conn.rs `received`: whole
/// replies out of what arrived, the rest kept) and returns the replies read.
fn feed(input: &[u8], cuts: &[usize]) -> Vec<String> {
    let mut kept = Vec::new();
    let mut out = Vec::new();
    let mut from = 0;
    for &to in cuts.iter().chain(std::iter::once(&input.len())) {
        kept.extend_from_slice(&input[from..to]);
        from = to;
        let mut at = 0;
        loop {
            match next(&kept[at..]) {
                Next::Reply(reply, n) => {
                    out.push(format!("{reply:?}"));
                    at += n;
                }
                Next::Partial => break,
                Next::Invalid => panic!("invalid at {at}"),
            }
        }
        kept.drain(..at);
    }
    assert!(kept.is_empty(), "{} bytes left over", kept.len());
    out
}

#[test]
fn a_stream_split_at_any_byte_gives_the_same_replies() {
    let stream: Vec<u8> = [
        &b"+OK\r\n"[..],
        b"*2\r\n:1\r\n:7\r\n",
        b"-NOSCRIPT No matching script.\r\n",
        b"$5\r\nhe\r\no\r\n",
        b"*2\r\n*1\r\n:3\r\n-ERR x\r\n",
        b"$-1\r\n",
        b">3\r\n$7\r\nmessage\r\n$1\r\nc\r\n$1\r\np\r\n",
        b":-1\r\n",
    ]
    .concat();
    let whole = feed(&stream, &[]);
    assert_eq!(whole.len(), 8);
    assert_eq!(whole[0], "Ok(ok)");
    for cut in 1..stream.len() {
        assert_eq!(feed(&stream, &[cut]), whole, "cut at {cut}");
    }
    // Byte by byte.
    let every: Vec<usize> = (1..stream.len()).collect();
    assert_eq!(feed(&stream, &every), whole);
}

#[test]
fn a_count_larger_than_the_input_waits_without_allocating_it() {
    assert!(matches!(read(b"*4000000000000000000\r\n:1\r\n"), Read::Partial));
    assert!(matches!(read(b"$4000000000000000000\r\nab"), Read::Partial));
}

#[test]
fn deep_nesting_is_left_to_redis_rs() {
    let mut deep = b"*1\r\n".repeat(200);
    deep.extend_from_slice(b":1\r\n");
    assert!(matches!(read(&deep), Read::Other));
    // redis-rs refuses it (past its depth limit): a parse error, not a hang or a crash.
    assert!(matches!(next(&deep), Next::Reply(Err(_), n) if n == deep.len()));
}

#[test]
fn values_are_redis_rs_values() {
    assert!(matches!(read(b"+OK\r\n"), Read::Reply(Value::Okay, 5)));
    assert!(matches!(read(b"$-1\r\n"), Read::Reply(Value::Nil, 5)));
    assert_eq!(
        read(b"*2\r\n:1\r\n$2\r\nab\r\n"),
        Read::Reply(
            Value::Array(vec![Value::Int(1), Value::BulkString(b"ab".to_vec())]),
            16
        )
    );
}

#[test]
fn a_bulk_string_longer_than_its_length_is_a_parse_error() {
    // Framed by its length (as before this reader): redis-rs then refuses the bytes.
    let junk = b"$2\r\nabcd\r\n";
    assert!(matches!(read(junk), Read::Other));
    assert!(matches!(next(junk), Next::Reply(Err(_), 8)));
}

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
