//! Every `tracing` event of the test process, at TRACE level, captured as text: tests check
//! that warnings are logged and that no secret ever is.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn sink() -> &'static Sink {
    static SINK: OnceLock<Sink> = OnceLock::new();
    SINK.get_or_init(|| {
        let sink = Sink::default();
        let writer = sink.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("one log capture per test binary");
        sink
    })
}

/// Starts capturing (idempotent); call before the code under test runs.
pub fn capture() {
    sink();
}

/// Everything logged so far.
pub fn text() -> String {
    String::from_utf8_lossy(&sink().0.lock().unwrap()).into_owned()
}
