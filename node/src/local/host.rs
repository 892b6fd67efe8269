//! What the local engine's tasks ask JavaScript to do, and how it gets there.
//!
//! Tasks never call JavaScript: they queue an [`Out`], and the call from JavaScript that ran
//! them (an entry: executor.rs) hands the queue over when it returns, for `lib/engine.mjs` to
//! deliver. So a callback can never re-enter a task mid-poll, and no addon call crosses back
//! into JavaScript: numbers go into a `Float64Array` JavaScript passes to every entry
//! (`out`), text (socket bytes as Latin-1, error JSON) into the one string the entry returns.
//! Building a JavaScript array or object per result cost about as much as the rest of a round
//! trip (README "Design").
//!
//! `out[0]` is the number of slots used after it; records follow, each a kind and its fields
//! (text fields are an offset and a length in UTF-16 units into the returned string):
//! - `0, call, kind, a, b, c`: settle call `call` (kinds: ../calls.rs `kind`; an error's
//!   JSON is the text at `a`, length `b`);
//! - `1, socket, port, flags, at, len`: open a socket to the host (or Unix path: flag 4) in
//!   the text; flag 1 = TLS (verified: Node's CA store);
//! - `2, socket, at, len`: write the text's bytes (Latin-1);
//! - `3, socket`: close the socket;
//! - `4, ms`: call `localTimer()` after `ms` (replacing the timer set before);
//! - `5, socket, ms`: close the socket after `ms` (if it is still open; conn.rs `Owner`).
//!
//! Records that do not fit stay queued for a drain JavaScript is asked for (`kick`).

use super::conn::SocketShared;
use crate::calls::{self, Outcome};
use std::cell::RefCell;
use std::sync::Arc;

/// How JavaScript should open a socket (`net.connect` / `tls.connect` options).
#[derive(Debug, Clone, Default)]
pub(crate) struct SocketSpec {
    /// TCP host (absent for a Unix socket).
    pub(crate) host: Option<String>,
    /// TCP port.
    pub(crate) port: Option<u32>,
    /// Unix socket path.
    pub(crate) path: Option<String>,
    /// TLS (`rediss://`).
    pub(crate) tls: bool,
}

/// The `Float64Array` JavaScript passes to every entry for its records (module docs).
pub type Scratch<'a> = &'a mut [f64];

/// What a task asks JavaScript to do.
pub(crate) enum Out {
    /// Settle the Promise of call `id`.
    Settle(u32, Outcome),
    /// Open socket `id`.
    Connect(u32, SocketSpec),
    /// Send what this socket has buffered.
    Write(Arc<SocketShared>),
    /// Close socket `id`.
    Destroy(u32),
    /// Close socket `id` after this many ms, unless it closed before.
    Linger(u32, f64),
    /// Run `localTimer()` after this many ms (replacing the timer set before).
    Timer(f64),
}

thread_local! {
    static QUEUE: RefCell<Vec<Out>> = const { RefCell::new(Vec::new()) };
}

/// Queues `out` for the end of this thread's current entry.
pub(crate) fn push(out: Out) {
    QUEUE.with(|q| q.borrow_mut().push(out));
}

/// `true` when something is queued.
pub(crate) fn pending() -> bool {
    QUEUE.with(|q| !q.borrow().is_empty())
}

/// Writes the queue into `out` as records and returns their text (module docs); `false` in
/// the second field when some did not fit and stay queued.
pub(crate) fn take(out: Scratch<'_>) -> (Option<String>, bool) {
    let outs = QUEUE.with(|q| std::mem::take(&mut *q.borrow_mut()));
    let mut records = Records {
        out,
        used: 0,
        text: String::new(),
        text_len: 0,
    };
    let mut rest = outs.into_iter();
    let mut all = true;
    for item in rest.by_ref() {
        if !records.room() {
            push(item);
            all = false;
            break;
        }
        records.add(item);
    }
    for item in rest {
        push(item);
    }
    if let Some(first) = records.out.first_mut() {
        *first = records.used as f64;
    }
    ((!records.text.is_empty()).then_some(records.text), all)
}

struct Records<'a> {
    out: &'a mut [f64],
    used: usize,
    text: String,
    /// Length of `text` in UTF-16 units (JavaScript's string indices).
    text_len: usize,
}

/// Slots of the longest record.
const WIDEST: usize = 6;

impl Records<'_> {
    fn room(&self) -> bool {
        self.used + 1 + WIDEST <= self.out.len()
    }

    fn put(&mut self, fields: &[f64]) {
        let at = self.used + 1;
        self.out[at..at + fields.len()].copy_from_slice(fields);
        self.used += fields.len();
    }

    /// Appends `bytes` as the text whose Latin-1 encoding they are (for `socket.write(text,
    /// 'latin1')`: a short one-byte string costs V8 less than a Buffer, and Node writes it
    /// without copying it into one); returns its offset and length.
    fn latin1(&mut self, bytes: Vec<u8>) -> (f64, f64) {
        let at = self.text_len;
        let len = bytes.len();
        if bytes.is_ascii() && self.text.is_empty() {
            // ASCII is valid UTF-8 as it is: the common single write moves, no copy.
            self.text = String::from_utf8(bytes).unwrap_or_default();
        } else if bytes.is_ascii() {
            self.text
                .push_str(std::str::from_utf8(&bytes).unwrap_or_default());
        } else {
            self.text.extend(bytes.iter().map(|&b| char::from(b)));
        }
        self.text_len += len;
        (at as f64, len as f64)
    }

    /// Appends `s`; returns its offset and length.
    fn utf16(&mut self, s: &str) -> (f64, f64) {
        let at = self.text_len;
        let len = s.encode_utf16().count();
        self.text.push_str(s);
        self.text_len += len;
        (at as f64, len as f64)
    }

    fn add(&mut self, item: Out) {
        match item {
            Out::Settle(id, outcome) => {
                let ([kind, a, b, c], error) = calls::encode(outcome);
                let (a, b) = match &error {
                    Some(json) => self.utf16(json),
                    None => (a, b),
                };
                self.put(&[0.0, f64::from(id), kind, a, b, c]);
            }
            Out::Connect(id, spec) => {
                let flags = u8::from(spec.tls) | (u8::from(spec.path.is_some()) << 2);
                let target = spec.path.as_deref().or(spec.host.as_deref()).unwrap_or_default();
                let (at, len) = self.utf16(target);
                let port = spec.port.map_or(0.0, f64::from);
                self.put(&[1.0, f64::from(id), port, f64::from(flags), at, len]);
            }
            Out::Write(socket) => {
                // None when an earlier record of this drain already took the bytes.
                if let Some(bytes) = socket.take_outgoing() {
                    let (at, len) = self.latin1(bytes);
                    self.put(&[2.0, f64::from(socket.id), at, len]);
                }
            }
            Out::Destroy(id) => self.put(&[3.0, f64::from(id)]),
            Out::Linger(id, ms) => self.put(&[5.0, f64::from(id), ms]),
            Out::Timer(ms) => self.put(&[4.0, ms]),
        }
    }
}
