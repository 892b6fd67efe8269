//! Opening an event loop's connection on the runtime: a TCP (no delay) or Unix socket,
//! logged in as the URL says ([`handshake_commands`]), within the network timeout, then
//! handed over as a non-blocking std socket for the loop to watch.

use redis::{Cmd, ConnectionAddr, ConnectionInfo, ProtocolVersion, RedisConnectionInfo, Value};
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A connected, logged-in, non-blocking socket.
pub(crate) enum Stream {
    Tcp(std::net::TcpStream),
    Unix(std::os::unix::net::UnixStream),
}

impl Stream {
    pub(crate) fn shutdown(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            Stream::Unix(s) => s.shutdown(std::net::Shutdown::Both),
        }
    }
}

impl AsRawFd for Stream {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
        }
    }
}

impl io::Read for &Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&*s).read(buf),
            Stream::Unix(s) => (&*s).read(buf),
        }
    }
}

impl io::Write for &Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => (&*s).write(buf),
            Stream::Unix(s) => (&*s).write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// `true` for the addresses event-loop I/O serves (not TLS: module docs of `loop_io`).
pub(crate) fn supports(addr: &ConnectionAddr) -> bool {
    matches!(addr, ConnectionAddr::Tcp(..) | ConnectionAddr::Unix(..))
}

/// What a new connection sends before any command (`RedisTransport::handshake_commands`).
pub(crate) fn handshake_commands(settings: &RedisConnectionInfo) -> Vec<Cmd> {
    let mut commands = Vec::new();
    if settings.protocol() == ProtocolVersion::RESP3 {
        let mut hello = redis::cmd("HELLO");
        hello.arg(3);
        if let Some(password) = settings.password() {
            hello
                .arg("AUTH")
                .arg(settings.username().unwrap_or("default"))
                .arg(password);
        }
        commands.push(hello);
    } else if let Some(password) = settings.password() {
        let mut auth = redis::cmd("AUTH");
        if let Some(user) = settings.username() {
            auth.arg(user);
        }
        auth.arg(password);
        commands.push(auth);
    }
    if settings.db() != 0 {
        let mut select = redis::cmd("SELECT");
        select.arg(settings.db());
        commands.push(select);
    }
    commands
}

/// A logged-in socket to `info`'s node, within `timeout`.
pub(crate) async fn open(info: &ConnectionInfo, timeout: Duration) -> redis::RedisResult<Stream> {
    let opening = async {
        match info.addr() {
            ConnectionAddr::Tcp(host, port) => {
                let mut s = tokio::net::TcpStream::connect((host.as_str(), *port)).await?;
                s.set_nodelay(true)?;
                log_in(&mut s, info.redis_settings()).await?;
                Ok(Stream::Tcp(s.into_std()?))
            }
            ConnectionAddr::Unix(path) => {
                let mut s = tokio::net::UnixStream::connect(path).await?;
                log_in(&mut s, info.redis_settings()).await?;
                Ok(Stream::Unix(s.into_std()?))
            }
            _ => Err(io::Error::other("not served by event-loop I/O").into()),
        }
    };
    tokio::time::timeout(timeout, opening)
        .await
        .unwrap_or_else(|_| Err(io::Error::from(io::ErrorKind::TimedOut).into()))
}

/// Sends the handshake and reads its replies (a refusal is the server's error).
async fn log_in<S>(stream: &mut S, settings: &RedisConnectionInfo) -> redis::RedisResult<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let commands = handshake_commands(settings);
    if commands.is_empty() {
        return Ok(());
    }
    let mut out = Vec::new();
    for cmd in &commands {
        cmd.write_packed_command(&mut out);
    }
    stream.write_all(&out).await?;
    let (mut input, mut answered) = (Vec::new(), 0);
    let mut buf = [0u8; 4096];
    while answered < commands.len() {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::UnexpectedEof).into());
        }
        input.extend_from_slice(&buf[..n]);
        loop {
            match crate::native::resp::next(&input) {
                crate::native::resp::Next::Reply(reply, used) => {
                    input.drain(..used);
                    if !matches!(reply, Ok(Value::Push { .. })) {
                        reply?.extract_error()?;
                        answered += 1;
                    }
                }
                crate::native::resp::Next::Partial => break,
                crate::native::resp::Next::Invalid => {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "not the Redis protocol").into())
                }
            }
        }
    }
    Ok(())
}
