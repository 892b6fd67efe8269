//! The URL forms that name a deployment rather than one node:
//! - `redis+cluster://[[user]:password@]host:port[,host:port...]` (`rediss+cluster://` for
//!   TLS): seed nodes of a Redis Cluster;
//! - `redis+sentinel://[[user]:password@]host:port[,host:port...]/master[/db]`
//!   (`rediss+sentinel://`): the sentinels and the master name they monitor. The credentials
//!   are the data nodes'; the sentinels' own are a separate option.
//!
//! Hosts are separated by commas, as in Lettuce's and redis-py's multi-host URLs; a missing
//! port is 6379 (Cluster) or 26379 (Sentinel).

use super::sentinel::SentinelSpec;
use crate::error::{Error, Result};
use redis::IntoConnectionInfo;

/// What a URL names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Deployment {
    /// One node (`redis://`, `rediss://`, `unix://`).
    Node(String),
    /// Cluster seed URLs, each `redis[s]://[auth@]host:port`.
    Cluster(Vec<String>),
    Sentinel(SentinelSpec),
}

struct Parts<'a> {
    tls: bool,
    userinfo: Option<&'a str>,
    hosts: Vec<&'a str>,
    path: &'a str,
}

fn split<'a>(rest: &'a str, tls: bool, what: &str) -> Result<Parts<'a>> {
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let (userinfo, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    let hosts: Vec<&str> = hosts.split(',').map(str::trim).collect();
    if hosts == [""] {
        return Err(Error::invalid(format!(
            "a {what} URL needs at least one host:port"
        )));
    }
    // `h1:1,,h2:2`: a host left out by mistake, not a shorter list (a user trial).
    if hosts.contains(&"") {
        return Err(Error::invalid(format!(
            "a {what} URL's host list has an empty entry (two commas in a row, or one at an end)"
        )));
    }
    Ok(Parts {
        tls,
        userinfo,
        hosts,
        path,
    })
}

fn with_port(host: &str, default: u16) -> String {
    let has_port = match host.rfind(']') {
        Some(end) => host[end..].contains(':'),
        None => host.contains(':'),
    };
    if has_port {
        host.to_owned()
    } else {
        format!("{host}:{default}")
    }
}

/// Parses `url` into the deployment it names.
///
/// # Errors
/// `InvalidArgument` for a malformed multi-host URL (no host, no master name, a bad port or
/// database number). Single-node URLs are checked later, when the node is set up.
pub(crate) fn parse(url: &str) -> Result<Deployment> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Ok(Deployment::Node(url.to_owned()));
    };
    match scheme.to_ascii_lowercase().as_str() {
        "redis+cluster" | "rediss+cluster" => {
            let p = split(rest, scheme.starts_with("rediss"), "redis+cluster://")?;
            if !matches!(p.path, "" | "0") {
                return Err(Error::invalid("a Redis Cluster has only database 0"));
            }
            let base = if p.tls { "rediss" } else { "redis" };
            let auth = p.userinfo.map(|u| format!("{u}@")).unwrap_or_default();
            let seeds = p
                .hosts
                .iter()
                .map(|h| format!("{base}://{auth}{}", with_port(h, 6379)))
                .collect();
            Ok(Deployment::Cluster(seeds))
        }
        "redis+sentinel" | "rediss+sentinel" => {
            parse_sentinel(split(rest, scheme.starts_with("rediss"), "redis+sentinel://")?)
        }
        _ => Ok(Deployment::Node(url.to_owned())),
    }
}

fn parse_sentinel(p: Parts<'_>) -> Result<Deployment> {
    let mut path = p.path.split('/').filter(|s| !s.is_empty());
    let master = path.next().ok_or_else(|| {
        Error::invalid("a redis+sentinel:// URL needs the master name: redis+sentinel://host:26379/mymaster")
    })?;
    let db: i64 = match path.next() {
        Some(d) => d
            .parse()
            .map_err(|_| Error::invalid(format!("bad database number {d:?} in a redis+sentinel:// URL")))?,
        None => 0,
    };
    let mut sentinels = Vec::new();
    for h in &p.hosts {
        let hp = with_port(h, 26379);
        let (host, port) = hp.rsplit_once(':').unwrap_or((&hp, "26379"));
        let port = port
            .parse()
            .map_err(|_| Error::invalid(format!("bad port in sentinel address {h:?}")))?;
        sentinels.push((host.trim_matches(['[', ']']).to_owned(), port));
    }
    // The user info is decoded the way redis-rs decodes a node URL's.
    let (username, password) = match p.userinfo {
        Some(u) => {
            let info = format!("redis://{u}@127.0.0.1:1")
                .into_connection_info()
                .map_err(|_| Error::invalid("bad credentials in a redis+sentinel:// URL"))?;
            let s = info.redis_settings();
            (s.username().map(str::to_owned), s.password().map(str::to_owned))
        }
        None => (None, None),
    };
    Ok(Deployment::Sentinel(SentinelSpec {
        sentinels,
        master: master.to_owned(),
        db,
        username,
        password,
        tls: p.tls,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_urls_list_seed_nodes() {
        let d = parse("redis+cluster://:pw@h1:7000,h2:7001,h3").unwrap();
        assert_eq!(
            d,
            Deployment::Cluster(vec![
                "redis://:pw@h1:7000".into(),
                "redis://:pw@h2:7001".into(),
                "redis://:pw@h3:6379".into()
            ])
        );
        assert!(
            matches!(parse("rediss+cluster://h:1").unwrap(), Deployment::Cluster(s) if s[0] == "rediss://h:1")
        );
        assert!(parse("redis+cluster://").is_err());
        assert!(parse("redis+cluster://h:1/2").is_err());
    }

    #[test]
    fn sentinel_urls_name_the_master_and_data_credentials() {
        let Deployment::Sentinel(s) = parse("redis+sentinel://u:p%40ss@s1:26380,s2/mymaster/3").unwrap()
        else {
            panic!("not sentinel")
        };
        assert_eq!(s.sentinels, [("s1".to_owned(), 26380), ("s2".to_owned(), 26379)]);
        assert_eq!((s.master.as_str(), s.db, s.tls), ("mymaster", 3, false));
        assert_eq!(
            (s.username.as_deref(), s.password.as_deref()),
            (Some("u"), Some("p@ss"))
        );
        assert!(!format!("{s:?}").contains("p@ss"));
        let e = parse("redis+sentinel://s1:26379").unwrap_err();
        assert!(e.message().contains("master name"), "{e}");
        assert!(parse("redis+sentinel://s1:x/m").is_err());
        for list in ["s1:1,,s2:2", "s1:1,", ",s1:1"] {
            let e = parse(&format!("redis+sentinel://{list}/m")).unwrap_err();
            assert!(e.message().contains("empty entry"), "{list}: {e}");
        }
        assert!(parse("redis+cluster://h1:1,,h2:2").is_err());
    }

    #[test]
    fn other_urls_are_single_nodes() {
        assert_eq!(
            parse("redis://h:1/2").unwrap(),
            Deployment::Node("redis://h:1/2".into())
        );
        assert_eq!(
            parse("unix:///tmp/r.sock").unwrap(),
            Deployment::Node("unix:///tmp/r.sock".into())
        );
    }
}
