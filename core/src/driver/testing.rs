//! Support for the driver's own unit tests: an [`Engine`] over real `redis-server` processes
//! of the fleet harness (ports chosen at run time, stopped by pid), raw connections to inspect
//! and tamper with keys, and [`Faulty`], a real node's transport that can fail its next
//! requests with a connection error before sending them (the fault the retry rules are about;
//! every request it does send is answered by the real server).

use super::acquire::LockSpec;
use super::transport::{BoxFut, Subscription, Transport};
use super::{Config, Engine};
use crate::error::{Error, Result};
use crate::kind::LockKind;
use crate::native::{RedisTransport, TokioRuntime};
use crate::protocol::reply::Reply;
use crate::protocol::request::Request;
use redlatch_fleet::{HoldingProxy, RedisServer};
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A fresh server (its own port and directory).
pub(crate) fn server() -> RedisServer {
    RedisServer::start().expect("start redis-server")
}

/// Short timeouts, so fault tests end quickly: network timeout 500 ms, poll 20 ms.
pub(crate) fn config() -> Config {
    Config {
        network_timeout: Duration::from_millis(500),
        poll_interval: Duration::from_millis(20),
        ..Config::default()
    }
}

/// A real node's transport, logged in as the client under test would be.
pub(crate) fn transport(server: &RedisServer, config: &Config) -> Arc<RedisTransport> {
    Arc::new(RedisTransport::new(&server.url(), config.network_timeout).expect("transport"))
}

/// An engine over one real node reached through a [`HoldingProxy`] (requests flow; replies can
/// be held back, so a request applies while its reply is lost to the timeout), its connection
/// made (`PING`) before it returns.
pub(crate) async fn proxied_engine(server: &RedisServer) -> (HoldingProxy, Arc<Engine>) {
    let config = config();
    let proxy = HoldingProxy::start(server.port()).expect("proxy");
    let url = server
        .url()
        .replace(&format!(":{}", server.port()), &format!(":{}", proxy.port()));
    let transport = Arc::new(RedisTransport::new(&url, config.network_timeout).expect("transport"));
    transport.ping().await.expect("ping");
    (proxy, engine_over(vec![transport], config))
}

/// An engine over `servers` (one = single node, several = quorum), on the calling tokio
/// runtime, each connection made (`PING`) before it returns.
pub(crate) async fn engine(servers: &[&RedisServer], config: Config) -> Arc<Engine> {
    let mut transports: Vec<Arc<dyn Transport>> = Vec::new();
    for s in servers {
        let t = transport(s, &config);
        t.ping().await.expect("ping");
        transports.push(t);
    }
    engine_over(transports, config)
}

/// An engine over caller-made transports.
pub(crate) fn engine_over(transports: Vec<Arc<dyn Transport>>, config: Config) -> Arc<Engine> {
    Engine::new(transports, Arc::new(TokioRuntime::current()), config).expect("engine")
}

/// A connection as the default user, for inspecting keys.
pub(crate) async fn raw(server: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(server.admin_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// Runs one command on `conn`.
pub(crate) async fn cmd<T: redis::FromRedisValue>(
    conn: &mut redis::aio::MultiplexedConnection,
    args: &[&str],
) -> T {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query_async(conn).await.unwrap()
}

/// `f`, failing the test if it takes over 30 s (a hang, not a timing claim).
pub(crate) async fn within<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("hung: no result within 30 s")
}

/// A lease lock (no fence) with `lease` (`None` = watchdog mode).
pub(crate) fn lease_spec(name: &str, lease: Option<Duration>) -> LockSpec {
    LockSpec {
        name: name.to_owned(),
        kind: LockKind::Lease,
        owner: None,
        lease,
        fence: None,
    }
}

/// A reentrant lock held by owner number `owner` of `engine`'s client.
pub(crate) fn rlock_spec(engine: &Engine, name: &str, owner: u64, lease: Option<Duration>) -> LockSpec {
    LockSpec {
        name: name.to_owned(),
        kind: LockKind::Reentrant,
        owner: Some(format!("{}:{owner}", engine.client_id)),
        lease,
        fence: None,
    }
}

/// A real node's transport whose next [`fail_next`](Self::fail_next) requests fail with a
/// connection error without being sent; it counts the requests it was asked to send.
pub(crate) struct Faulty {
    inner: Arc<RedisTransport>,
    fail: AtomicUsize,
    evals: AtomicUsize,
    /// The last request asked for had a plain form (`SET NX PX` instead of the script).
    pub(crate) last_plain: std::sync::Mutex<Option<bool>>,
}

impl Faulty {
    pub(crate) fn new(inner: Arc<RedisTransport>) -> Arc<Self> {
        Arc::new(Faulty {
            inner,
            fail: AtomicUsize::new(0),
            evals: AtomicUsize::new(0),
            last_plain: Default::default(),
        })
    }

    /// The next `n` requests fail with a connection error.
    pub(crate) fn fail_next(&self, n: usize) {
        self.fail.store(n, Ordering::SeqCst);
    }

    /// Requests asked for so far (failed ones included).
    pub(crate) fn evals(&self) -> usize {
        self.evals.load(Ordering::SeqCst)
    }
}

impl Transport for Faulty {
    fn eval<'a>(&'a self, request: &'a Request) -> BoxFut<'a, Result<Reply>> {
        self.evals.fetch_add(1, Ordering::SeqCst);
        *self.last_plain.lock().unwrap() = Some(request.plain.is_some());
        let failing = self
            .fail
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Box::pin(async { Err(Error::connection("broken pipe (injected)")) });
        }
        self.inner.eval(request)
    }

    fn subscribe<'a>(&'a self, channel: &'a str) -> BoxFut<'a, Result<Option<Box<dyn Subscription>>>> {
        self.inner.subscribe(channel)
    }

    fn label(&self) -> &str {
        self.inner.label()
    }
}
