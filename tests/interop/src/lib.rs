//! The Java side of redlatch's interop tests, driven from Rust.
//!
//! [`JavaPeer`] runs the small Redisson 4.7.0 program in `tests/interop/java` (built once by
//! `tests/setup.sh java`, which this crate calls when the build is missing or stale) as a child
//! process and talks to it over stdin/stdout, one command per line (the verbs are documented
//! in `Commands.java`). One peer serves a whole test binary ([`JavaPeer::shared`]): JVM
//! start-up costs a second or two, connecting a Redisson client to a test's own server a few
//! hundred ms. Answers carry the command's id, so a blocking command (a lock wait) can be left
//! running while others go on. The peer exits when its stdin closes, i.e. when the test binary
//! ends however it ends, so no JVM outlives a test run.

mod peer;

pub use peer::{JavaClient, JavaPeer, PeerError, Pending, CALL_TIMEOUT};
