//! The query part of a single node's URL. redis-rs reads `?protocol=` on `redis://` URLs and
//! the database from the path only, ignoring every other parameter silently: with redis-py's
//! `redis://host:6379?db=3`, redis-py locked in database 3 and redlatch in database 0, so
//! their locks on "the same" key did not exclude each other (a user trial). Here `?db=N` is
//! moved into the path (refused when the path names another database), any other parameter
//! is refused, and so is a database number no server can have (`SELECT` takes a C `int`).

use crate::error::{Error, Result};
use std::borrow::Cow;

/// The parameters redis-rs reads: `protocol` (`resp3`) on every URL, and on `unix://` URLs
/// the database and credentials too.
const TCP_PARAMS: &[&str] = &["protocol", "db"];
const UNIX_PARAMS: &[&str] = &["protocol", "db", "user", "pass"];

/// `url` with a `?db=N` parameter moved into the path (TCP URLs); see the module docs.
///
/// # Errors
/// `InvalidArgument` for a parameter redis-rs would ignore, `?db=` naming another database
/// than the path, or a database number outside a C `int`.
pub(crate) fn normalized(url: &str) -> Result<Cow<'_, str>> {
    // The path of a Unix socket URL is the socket, never a database.
    let unix = url.starts_with("unix://") || url.starts_with("redis+unix://");
    let Some((base, query)) = url.split_once('?') else {
        if !unix {
            check_db(path_db(url))?;
        }
        return Ok(Cow::Borrowed(url));
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let allowed = if unix { UNIX_PARAMS } else { TCP_PARAMS };
    let mut kept = Vec::new();
    let mut db = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if !allowed.contains(&key) {
            return Err(Error::invalid(format!(
                "a Redis URL parameter redlatch does not read: `{key}` (it reads {})",
                allowed.join(", ")
            )));
        }
        if key == "db" && !unix {
            // Given twice, redis-py reads the first and redis-rs would read the last.
            if db.replace(value).is_some() {
                return Err(Error::invalid("a Redis URL gives ?db= more than once"));
            }
        } else {
            kept.push(pair);
        }
    }
    if unix {
        return Ok(Cow::Borrowed(url));
    }
    let mut out = match db {
        None => base.to_owned(),
        Some(db) => {
            let in_path = path_db(base);
            if in_path.is_some_and(|p| p != db) {
                return Err(Error::invalid(
                    "a Redis URL names one database in its path and another in ?db=",
                ));
            }
            let authority_end = authority_end(base);
            format!("{}/{db}", &base[..authority_end])
        }
    };
    check_db(path_db(&out))?;
    if !kept.is_empty() {
        out.push('?');
        out.push_str(&kept.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    Ok(Cow::Owned(out))
}

/// Where the authority of `url` (scheme, credentials, host and port) ends: at the path.
fn authority_end(url: &str) -> usize {
    let start = url.find("://").map_or(0, |i| i + 3);
    url[start..].find('/').map_or(url.len(), |i| start + i)
}

/// The database in the path of `url` (without query), if any.
fn path_db(url: &str) -> Option<&str> {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let path = url[authority_end(url)..].trim_matches('/');
    (!path.is_empty()).then_some(path)
}

fn check_db(db: Option<&str>) -> Result<()> {
    match db.map(str::parse::<i64>) {
        Some(Ok(n)) if i32::try_from(n).is_err() => Err(Error::invalid(format!(
            "no database of the URL's number {n} can exist (SELECT takes 0 to {})",
            i32::MAX
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_py_db_parameter_moves_into_the_path() {
        let n = |u| normalized(u).map(Cow::into_owned);
        assert_eq!(n("redis://h:1?db=3").unwrap(), "redis://h:1/3");
        assert_eq!(
            n("redis://u:p@h:1/?db=3&protocol=resp3").unwrap(),
            "redis://u:p@h:1/3?protocol=resp3"
        );
        assert_eq!(n("redis://h:1/3?db=3").unwrap(), "redis://h:1/3");
        assert_eq!(n("redis://h:1/2").unwrap(), "redis://h:1/2");
        assert_eq!(
            n("unix:///tmp/r.sock?db=2&pass=x").unwrap(),
            "unix:///tmp/r.sock?db=2&pass=x"
        );
        // A Unix socket URL's path is the socket (a user trial: "names one database in its
        // path and another in ?db=").
        assert_eq!(
            n("redis+unix:///tmp/r.sock?db=6").unwrap(),
            "redis+unix:///tmp/r.sock?db=6"
        );
    }

    #[test]
    fn unread_parameters_and_impossible_databases_are_refused() {
        for url in [
            "redis://h:1?x=y",
            "redis://h:1/3?db=5",
            "redis://h:1/2147483648",
            "redis://h:1?db=99999999999",
            "rediss://h:1?ssl_cert_reqs=none",
            "redis://h:1?db=3&db=4",
        ] {
            let e = normalized(url).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{url}");
        }
        assert!(normalized("redis://h:1?password=hunter2")
            .unwrap_err()
            .message()
            .contains("`password`"));
        assert!(!format!("{}", normalized("redis://h:1?password=hunter2").unwrap_err()).contains("hunter2"));
    }
}
