//! `client.connect(id, out)`: connects a `NativeClient` to one node or a quorum, with the
//! core on the JavaScript thread (the local driver, `Client.connect`'s default: local/) or
//! on tokio with redis-rs connections.

use crate::calls::{Driver, Value};
use crate::client::NativeClient;
use crate::error::{invalid, IntoNapi};
use crate::local::LocalTransport;
use crate::local::Scratch;
use crate::options::{opt_millis, ClientOptions};
use napi_derive::napi;
use redlatch::protocol::quorum;
use redlatch::{Config, Error, ErrorKind, NodeOutcome, Transport};
use std::sync::Arc;
use std::time::Duration;

/// The core's settings from `options` (integer ms; checked).
pub(crate) fn config(options: &ClientOptions) -> napi::Result<Config> {
    let mut config = Config::default();
    if let Some(d) = opt_millis("watchdogTimeoutMs", options.watchdog_timeout_ms, false)? {
        if d < Duration::from_millis(3) {
            return Err(invalid("watchdogTimeoutMs must be at least 3 ms"));
        }
        config.watchdog_timeout = d;
    }
    if let Some(d) = opt_millis("networkTimeoutMs", options.network_timeout_ms, false)? {
        config.network_timeout = d;
    }
    config.node_timeout = opt_millis("nodeTimeoutMs", options.node_timeout_ms, false)?;
    if let Some(d) = opt_millis("pollIntervalMs", options.poll_interval_ms, false)? {
        config.poll_interval = d;
    }
    config.validate().js()?;
    Ok(config)
}

#[napi]
impl NativeClient {
    /// Connects and settles call `id` (once). A single node must answer `PING`; in quorum
    /// mode a majority must. Rejects with `ERR_INVALID_ARGUMENT` for bad URLs,
    /// `ERR_CONNECTION` / `ERR_QUORUM` when too few nodes answer.
    #[napi]
    pub fn connect(&self, id: u32, out: Scratch<'_>) -> napi::Result<Option<String>> {
        let Some((urls, config)) = crate::client::locked(&self.plan).take() else {
            return Err(invalid("connect() was already called"));
        };
        let shared = self.shared.clone();
        let driver = shared.driver.clone();
        let handle = driver.clone();
        Ok(driver.call(out, id, async move {
            let client = match &*handle {
                Driver::Local(..) => connect_local(&urls, config, &handle).await?,
                Driver::Tokio(..) => connect_tokio(&urls, config).await?,
            };
            if shared.opened(client) {
                Ok(Value::Unit)
            } else {
                Err(Error::new(ErrorKind::Connection, "the client is closed"))
            }
        }))
    }
}

async fn connect_tokio(urls: &[String], config: Config) -> redlatch::Result<redlatch::Client> {
    let mut builder = if urls.len() == 1 {
        redlatch::Client::builder(&urls[0])
    } else {
        redlatch::Client::quorum_builder(urls)
    };
    builder = builder
        .watchdog_timeout(config.watchdog_timeout)
        .network_timeout(config.network_timeout)
        .poll_interval(config.poll_interval);
    if let Some(d) = config.node_timeout {
        builder = builder.node_timeout(d);
    }
    builder.connect().await
}

async fn connect_local(
    urls: &[String],
    config: Config,
    driver: &Driver,
) -> redlatch::Result<redlatch::Client> {
    let runtime = match driver {
        Driver::Local(_, runtime) => runtime.clone(),
        Driver::Tokio(..) => return Err(Error::new(ErrorKind::Panic, "not the local driver")),
    };
    let transports = urls
        .iter()
        .map(|u| LocalTransport::new(u, config.network_timeout, runtime.clone()).map(Arc::new))
        .collect::<redlatch::Result<Vec<_>>>()?;
    let timeout = config.network_timeout;
    let runtime = &runtime;
    let pings = futures::future::join_all(transports.iter().map(|t| async move {
        let ping = Box::pin(t.ping());
        match futures::future::select(ping, redlatch::Runtime::sleep(&**runtime, timeout)).await {
            futures::future::Either::Left((r, _)) => r,
            futures::future::Either::Right(_) => Err(Error::connection(format!(
                "no answer within {} ms",
                timeout.as_millis()
            ))),
        }
    }))
    .await;
    enough_nodes(&transports, pings)?;
    let transports: Vec<Arc<dyn Transport>> =
        transports.into_iter().map(|t| t as Arc<dyn Transport>).collect();
    redlatch::Client::from_transports(transports, driver.runtime(), config)
}

/// `Ok` when a majority of nodes answered; else the error `Client::connect` gives for it
/// (each failure named by its node).
fn enough_nodes(
    transports: &[Arc<LocalTransport>],
    pings: Vec<redlatch::Result<()>>,
) -> redlatch::Result<()> {
    let answered = pings.iter().filter(|p| p.is_ok()).count();
    if answered >= quorum::majority(transports.len()) {
        return Ok(());
    }
    let named = |t: &LocalTransport, e: &Error| {
        let why = e.message();
        if why.starts_with(t.label()) {
            why.to_owned()
        } else {
            format!("{}: {why}", t.label())
        }
    };
    if transports.len() == 1 {
        let e = pings
            .into_iter()
            .find_map(|p| p.err())
            .unwrap_or_else(|| Error::connection("unreachable"));
        return Err(Error::new(e.kind(), named(&transports[0], &e)));
    }
    let detail: Vec<String> = transports
        .iter()
        .zip(&pings)
        .filter_map(|(t, p)| p.as_ref().err().map(|e| named(t, e)))
        .collect();
    let nodes = transports
        .iter()
        .zip(&pings)
        .map(|(t, p)| NodeOutcome {
            node: t.label().to_owned(),
            result: p.as_ref().map(|_| ()).map_err(|e| e.message().to_owned()),
        })
        .collect();
    Err(Error::new(
        ErrorKind::Quorum,
        format!(
            "only {answered} of {} nodes answered: {}",
            transports.len(),
            detail.join("; ")
        ),
    )
    .with_nodes(nodes))
}
