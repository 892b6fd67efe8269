//! What the local engine's tasks ask JavaScript to do, and how it gets there.
//!
//! Tasks never call JavaScript: they queue an [`Out`], and the call from JavaScript that ran
//! them (an entry: executor.rs) returns the queue as its value, which `lib/engine.mjs`
//! delivers. So a callback can never re-enter a task mid-poll, and no addon call makes a
//! second crossing back into JavaScript (`napi_call_function` per socket write and per
//! result cost about as much as the rest of a round trip; README "Design").
//!
//! The returned value is one flat array of records, each a kind number and its fields:
//! - `0, id, error, value`: settle call `id` (`error` the JSON of errors.mjs, or null);
//! - `1, socket, spec`: open a socket (`net.connect` / `tls.connect`);
//! - `2, socket, latin1`: write these bytes (a Latin-1 string);
//! - `3, socket`: close the socket;
//! - `4, ms`: call `localTimer()` after `ms` (replacing the timer set before).

use super::conn::SocketShared;
use crate::calls::{self, Outcome};
use napi::bindgen_prelude::{Array, ToNapiValue};
use napi::Env;
use napi_derive::napi;
use std::cell::RefCell;
use std::sync::Arc;

/// How JavaScript should open socket `id` (`net.connect` / `tls.connect` options).
#[napi(object)]
#[derive(Debug, Clone, Default)]
pub struct SocketSpec {
    /// TCP host (absent for a Unix socket).
    pub host: Option<String>,
    /// TCP port.
    pub port: Option<u32>,
    /// Unix socket path.
    pub path: Option<String>,
    /// TLS (`rediss://`).
    pub tls: bool,
    /// TLS without certificate verification (`rediss://...#insecure`).
    pub insecure: bool,
}

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
    /// Run `localTimer()` after this many ms (replacing the timer set before).
    Timer(f64),
}

/// What JavaScript must deliver after an entry: `None` (undefined) when there is nothing.
pub type Outs<'env> = Option<Array<'env>>;

thread_local! {
    static QUEUE: RefCell<Vec<Out>> = const { RefCell::new(Vec::new()) };
}

/// Queues `out` for the value of this thread's current entry.
pub(crate) fn push(out: Out) {
    QUEUE.with(|q| q.borrow_mut().push(out));
}

/// `true` when something is queued.
pub(crate) fn pending() -> bool {
    QUEUE.with(|q| !q.borrow().is_empty())
}

/// The queue as the flat array described in the module docs.
pub(crate) fn take(env: &Env) -> napi::Result<Outs<'_>> {
    let outs = QUEUE.with(|q| std::mem::take(&mut *q.borrow_mut()));
    if outs.is_empty() {
        return Ok(None);
    }
    let mut records = Records {
        array: env.create_array(0)?,
        len: 0,
    };
    for out in outs {
        match out {
            Out::Settle(id, outcome) => {
                let (error, value) = calls::split(outcome);
                records.push(0u32)?;
                records.push(id)?;
                records.push(error)?;
                records.push(value)?;
            }
            Out::Connect(id, spec) => {
                records.push(1u32)?;
                records.push(id)?;
                records.push(spec)?;
            }
            Out::Write(socket) => {
                // None when an earlier record of this drain already took the bytes.
                if let Some(bytes) = socket.take_outgoing() {
                    records.push(2u32)?;
                    records.push(socket.id)?;
                    records.push(latin1(bytes))?;
                }
            }
            Out::Destroy(id) => {
                records.push(3u32)?;
                records.push(id)?;
            }
            Out::Timer(ms) => {
                records.push(4u32)?;
                records.push(ms)?;
            }
        }
    }
    Ok((records.len > 0).then_some(records.array))
}

struct Records<'env> {
    array: Array<'env>,
    len: u32,
}

impl Records<'_> {
    fn push<T: ToNapiValue>(&mut self, value: T) -> napi::Result<()> {
        self.array.set(self.len, value)?;
        self.len += 1;
        Ok(())
    }
}

/// `bytes` as the string whose Latin-1 encoding they are, for `socket.write(text, 'latin1')`:
/// a short one-byte string costs V8 less than a Buffer (no backing store, no finalizer),
/// and Node writes it without copying it into one. Commands are ASCII but for the bytes of
/// non-ASCII lock names.
fn latin1(bytes: Vec<u8>) -> String {
    if bytes.is_ascii() {
        // ASCII is valid UTF-8 as it is.
        return String::from_utf8(bytes).unwrap_or_default();
    }
    bytes.iter().map(|&b| char::from(b)).collect()
}
