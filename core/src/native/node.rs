//! [`NodeSpec`]: how to reach one Redis node, parsed from its URL and the TLS options once,
//! with a label that never carries credentials.
//!
//! A TLS server name different from the URL's host is done by connecting with that name (so
//! rustls sends it as SNI and verifies the certificate against it) through a DNS resolver
//! that maps the name back to the URL's real address.

use super::redact;
use super::tls::TlsOptions;
use crate::error::{Error, Result};
use redis::io::AsyncDNSResolver;
use redis::{ConnectionAddr, IntoConnectionInfo};
use std::net::SocketAddr;
use std::sync::Arc;

/// One node's connection info (TLS parameters included) and its label.
#[derive(Clone)]
pub(crate) struct NodeSpec {
    pub(crate) info: redis::ConnectionInfo,
    /// `host:port` of the URL (never credentials).
    pub(crate) label: String,
    /// Set when a TLS server name replaces the URL's host.
    pub(crate) resolver: Option<Arc<ServerNameResolver>>,
}

impl std::fmt::Debug for NodeSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeSpec").field("node", &self.label).finish()
    }
}

/// Maps the TLS server name to the URL's real host.
pub(crate) struct ServerNameResolver {
    name: String,
    host: String,
}

impl AsyncDNSResolver for ServerNameResolver {
    fn resolve<'a, 'b: 'a>(
        &'a self,
        host: &'b str,
        port: u16,
    ) -> redis::RedisFuture<'a, Box<dyn Iterator<Item = SocketAddr> + Send + 'a>> {
        let target = if host == self.name {
            self.host.clone()
        } else {
            host.to_owned()
        };
        Box::pin(async move {
            let addrs: Vec<SocketAddr> = tokio::net::lookup_host((target.as_str(), port)).await?.collect();
            Ok(Box::new(addrs.into_iter()) as Box<dyn Iterator<Item = SocketAddr> + Send>)
        })
    }
}

/// `host:port` as errors name a node, an IPv6 address in brackets (`[::1]:6379`).
fn label_of(addr: &ConnectionAddr) -> String {
    match addr {
        ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } if host.contains(':') => {
            format!("[{host}]:{port}")
        }
        other => other.to_string(),
    }
}

/// Parses `url` (`redis://`, `rediss://`, `unix://`) with `tls` applied.
///
/// # Errors
/// `InvalidArgument` for a malformed URL, TLS options on a non-TLS URL, `#insecure` in the
/// URL (the insecure switch is an explicit option), or unreadable certificate files.
pub(crate) fn node_spec(url: &str, tls: &TlsOptions) -> Result<NodeSpec> {
    if url.trim_end().ends_with("#insecure") {
        return Err(Error::invalid(
            "`#insecure` in a Redis URL is not accepted; turn certificate checks off explicitly with the TLS insecure option",
        ));
    }
    let bad = |e: redis::RedisError| {
        Error::invalid(format!(
            "bad Redis URL ({}): expected redis://[[user]:password@]host[:port][/db] (a numeric port), rediss:// for TLS, unix:///path, redis+cluster://host:port,... or redis+sentinel://host:port,.../master",
            redact::url_error(&e.to_string(), url)
        ))
    };
    let url = &*super::url_query::normalized(url)?;
    let info = url.into_connection_info().map_err(bad)?;
    let login = info.redis_settings();
    if login.username().is_some() && login.password().is_none() {
        // redis-rs sends no AUTH then, so the connection would be the default user's (a user
        // trial of stop 42 found it silently so).
        return Err(Error::invalid(
            "a Redis URL with a user name needs its password too (redis://user:password@host:port; an ACL user with nopass takes any password): without one no AUTH is sent and the connection is the default user's",
        ));
    }
    let label = label_of(info.addr());
    // redlatch's own connections skip CLIENT SETINFO: one command fewer for the ACL recipe.
    let info = {
        let settings = info.redis_settings().clone().set_skip_set_lib_name();
        info.set_redis_settings(settings)
    };
    let (host, port) = match info.addr() {
        ConnectionAddr::TcpTls { host, port, .. } => (host.clone(), *port),
        _ if !tls.is_default() => {
            return Err(Error::invalid(format!(
                "TLS options were given for {label}, whose URL is not rediss://"
            )))
        }
        _ => {
            return Ok(NodeSpec {
                info,
                label,
                resolver: None,
            })
        }
    };
    super::tls::install_crypto_provider();
    let client = redis::Client::build_with_tls(info, tls.certificates()?)
        .map_err(|e| super::tls::refused_material(&e))?;
    let info = client.get_connection_info().clone();
    let ConnectionAddr::TcpTls { tls_params, .. } = info.addr().clone() else {
        return Err(Error::invalid("TLS client without a TLS address"));
    };
    let (name, resolver) = match tls.server_name_override() {
        Some(name) => (
            name.to_owned(),
            Some(Arc::new(ServerNameResolver {
                name: name.to_owned(),
                host,
            })),
        ),
        None => (host, None),
    };
    let info = info.set_addr(ConnectionAddr::TcpTls {
        host: name,
        port,
        insecure: tls.insecure(),
        tls_params,
    });
    Ok(NodeSpec {
        info,
        label,
        resolver,
    })
}

impl NodeSpec {
    /// The name a TLS certificate must be valid for (the URL's host or the server name).
    pub(crate) fn tls_name(&self) -> Option<&str> {
        match self.info.addr() {
            ConnectionAddr::TcpTls { host, .. } => Some(host),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_have_no_credentials() {
        let spec = node_spec("redis://user:hunter2@127.0.0.1:6390/0", &TlsOptions::new()).unwrap();
        assert_eq!(spec.label, "127.0.0.1:6390");
        assert!(!format!("{spec:?}").contains("hunter2"));
    }

    #[test]
    fn ipv6_labels_are_bracketed_and_a_user_needs_a_password() {
        // A user trial of stop 42: "::1:46115", and a user name alone connected as default.
        let spec = node_spec("redis://[::1]:6390", &TlsOptions::new()).unwrap();
        assert_eq!(spec.label, "[::1]:6390");
        let e = node_spec("redis://alice@127.0.0.1:6390", &TlsOptions::new()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
        assert!(e.message().contains("needs its password too"), "{e}");
        assert!(node_spec("redis://alice:pw@127.0.0.1:6390", &TlsOptions::new()).is_ok());
        assert!(node_spec("redis://:pw@127.0.0.1:6390", &TlsOptions::new()).is_ok());
    }

    #[test]
    fn tls_options_need_a_tls_url_and_insecure_is_an_option() {
        let tls = TlsOptions::new().ca_pem("x");
        let e = node_spec("redis://127.0.0.1:1", &tls).unwrap_err();
        assert!(e.message().contains("not rediss://"), "{e}");
        let e = node_spec("rediss://127.0.0.1:1/#insecure", &TlsOptions::new()).unwrap_err();
        assert!(e.message().contains("insecure option"), "{e}");
        let e = node_spec("http://nope", &TlsOptions::new()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument);
    }

    #[test]
    fn server_name_replaces_the_verified_host_only() {
        let tls = TlsOptions::new().server_name("redis.test");
        let spec = node_spec("rediss://127.0.0.1:6380", &tls).unwrap();
        assert_eq!(spec.tls_name(), Some("redis.test"));
        assert_eq!(spec.label, "127.0.0.1:6380");
        assert!(spec.resolver.is_some());
    }

    #[test]
    fn unreadable_ca_files_are_invalid_arguments() {
        let tls = TlsOptions::new().ca_file("/nonexistent/ca.pem");
        let e = node_spec("rediss://127.0.0.1:6380", &tls).unwrap_err();
        assert!(e.message().contains("/nonexistent/ca.pem"), "{e}");
    }
}
