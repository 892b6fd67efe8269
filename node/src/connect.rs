//! `connect(urls, options, local, id)`: a client over one node or a quorum, with the core on
//! the JavaScript thread (`local`, the default of `Client.connect`: local/) or on tokio with
//! redis-rs connections.

use crate::calls::{Driver, Value};
use crate::client::NativeClient;
use crate::error::{invalid, IntoNapi};
use crate::local::LocalTransport;
use crate::local::Outs;
use crate::options::{opt_millis, ClientOptions};
use napi::Env;
use napi_derive::napi;
use redlatch::protocol::quorum;
use redlatch::{Config, Error, ErrorKind, NodeOutcome, Transport};
use std::sync::Arc;
use std::time::Duration;

/// The core's settings from `options` (integer ms; checked).
fn config(options: &ClientOptions) -> napi::Result<Config> {
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

/// Connects to `urls` (one URL = single node, several = quorum) and settles call `id` with
/// the client. A single node must answer `PING`; in quorum mode a majority must. `local`:
/// the core runs on the JavaScript thread over Node sockets (else on tokio over redis-rs).
/// Throws or rejects with `ERR_INVALID_ARGUMENT` for bad URLs or options, `ERR_CONNECTION` /
/// `ERR_QUORUM` when too few nodes answer.
#[napi(ts_return_type = "unknown[] | null")]
pub fn connect(
    env: &Env,
    urls: Vec<String>,
    options: Option<ClientOptions>,
    local: bool,
    id: u32,
) -> napi::Result<Outs<'_>> {
    let options = options.unwrap_or_default();
    if urls.is_empty() {
        return Err(invalid("at least one Redis URL is required"));
    }
    let config = config(&options)?;
    let driver = Driver::current(local)?;
    let handle = driver.clone();
    driver.call(env, id, async move {
        let client = if handle.is_local() {
            connect_local(&urls, config, &handle).await?
        } else {
            connect_tokio(&urls, config).await?
        };
        Ok(Value::Client(NativeClient::new(client, handle)))
    })
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
