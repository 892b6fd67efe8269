//! [`redis_error_kind`]: the kind of a Redis error reply, the same rule for every transport.

use super::ErrorKind;

/// The kind of a Redis error reply, from its text (the same rule for every transport):
/// `NOPERM ...`, Redis 7.0's script form `ERR The user executing the script can't ...` and
/// Valkey's `ERR ACL failure in script: ...` are [`ErrorKind::NoPermission`]; `OOM ...` is [`ErrorKind::OutOfMemory`]; `WRONGTYPE ...`
/// (also what redlatch's scripts answer for a key that holds application data) is
/// [`ErrorKind::KeyConflict`]; `WRONGPASS ...` (credentials refused on connecting) and
/// `NOAUTH ...` (none given to a server that requires them) are [`ErrorKind::Connection`], and so are the replies of a deployment in the middle of a
/// failover or a slot move, which name no fault of the request and pass when it is sent again
/// (`CLUSTERDOWN`, `TRYAGAIN`, a `MOVED` or `ASK` redirect the client gave up following,
/// `MASTERDOWN`, `LOADING`); anything else is [`ErrorKind::Redis`]. Client libraries may put
/// their own prefix first (redis-rs writes `NoPerm: ...`), so the code is matched
/// case-insensitively on the first word.
pub fn redis_error_kind(reply: &str) -> ErrorKind {
    if is_auth_required(reply) {
        return ErrorKind::Connection;
    }
    let text = reply.trim_start();
    let first: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect::<String>()
        .to_ascii_uppercase();
    match first.as_str() {
        "NOPERM" => ErrorKind::NoPermission,
        "OOM" => ErrorKind::OutOfMemory,
        "WRONGTYPE" => ErrorKind::KeyConflict,
        // Credentials refused, or none given to a server that wants them, when (re)connecting:
        // reaching the server failed.
        "WRONGPASS" | "NOAUTH" => ErrorKind::Connection,
        // The deployment is moving (a failover, a slot migration, a restart loading its data):
        // reaching the node that serves the key failed for now.
        "CLUSTERDOWN" | "TRYAGAIN" | "MOVED" | "ASK" | "MASTERDOWN" | "LOADING" => ErrorKind::Connection,
        _ if text.contains("The user executing the script can't")
            || text.contains("ACL failure in script") =>
        {
            ErrorKind::NoPermission
        }
        _ => ErrorKind::Redis,
    }
}

/// How Redis answers a connection that did not authenticate to a server that wants it to:
/// `NOAUTH Authentication required.`, or for a command longer than an unauthenticated client
/// may send (Redis 7: more than 10 arguments or a bulk string over 16 KiB) `ERR Protocol
/// error: unauthenticated multibulk length` (or `bulk length`), after which it closes the
/// connection.
const UNAUTHENTICATED: &str = "Protocol error: unauthenticated";

/// `true` for a reply saying the connection has not authenticated and the server requires it
/// (`NOAUTH`, or Redis' protocol error for an unauthenticated client's long command).
pub(crate) fn is_auth_required(reply: &str) -> bool {
    let text = reply.trim_start();
    text.get(..6).is_some_and(|w| w.eq_ignore_ascii_case("NOAUTH")) || text.contains(UNAUTHENTICATED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_error_replies_are_classified_by_code() {
        let cases = [
            ("NOPERM this user has no permissions to access one of the keys", ErrorKind::NoPermission),
            ("NoPerm: this user has no permissions", ErrorKind::NoPermission),
            (
                "ERR ACL failure in script: User noget has no permissions to run the 'get' command script: 1f, on @user_script:17.",
                ErrorKind::NoPermission,
            ),
            (
                "ERR The user executing the script can't publish to the channel mentioned in the command script: 1f, on @user_script:1.",
                ErrorKind::NoPermission,
            ),
            ("OOM command not allowed when used memory > 'maxmemory'.", ErrorKind::OutOfMemory),
            ("WRONGTYPE Operation against a key holding the wrong kind of value", ErrorKind::KeyConflict),
            ("WRONGPASS invalid username-password pair or user is disabled.", ErrorKind::Connection),
            ("NOAUTH Authentication required.", ErrorKind::Connection),
            ("ERR Protocol error: unauthenticated multibulk length", ErrorKind::Connection),
            ("CLUSTERDOWN The cluster is down", ErrorKind::Connection),
            ("MOVED 3300 127.0.0.1:44397", ErrorKind::Connection),
            ("TRYAGAIN Multiple keys request during rehashing of slot", ErrorKind::Connection),
            ("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", ErrorKind::Connection),
            ("LOADING Redis is loading the dataset in memory", ErrorKind::Connection),
            ("ERR unknown command 'EVALSHA'", ErrorKind::Redis),
            ("BUSY Redis is busy running a script", ErrorKind::Redis),
            ("", ErrorKind::Redis),
        ];
        for (reply, kind) in cases {
            assert_eq!(redis_error_kind(reply), kind, "{reply}");
        }
    }
}
