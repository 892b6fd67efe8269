//! Keeping secrets out of messages: URL passwords, and lock tokens that a server's error
//! reply can echo back.
//!
//! Why server replies need it: Redis answers an unknown command (a sentinel or a proxy sent
//! `EVALSHA`) with `ERR unknown command 'EVALSHA', with args beginning with: ...`, which lists
//! the script's keys and arguments, the lease token among them. Every error text that came
//! from a server passes through [`server_error`] before it becomes a redlatch error.

/// Replaces the password of `url` in `text` with `***`, should a message echo the URL.
pub(crate) fn url_error(text: &str, url: &str) -> String {
    match url.split_once("://").and_then(|(_, rest)| rest.rsplit_once('@')) {
        Some((userinfo, _)) => match userinfo.split_once(':') {
            Some((_, pass)) if !pass.is_empty() => text.replace(pass, "***"),
            _ => text.to_owned(),
        },
        None => text.to_owned(),
    }
}

/// Arguments at least this long are treated as secrets (tokens are 32 hex digits, owner ids
/// 36 characters or more; leases, flags and command names are shorter).
const SECRET_LEN: usize = 16;

/// `text` (a server's error reply) without the arguments Redis echoes and without any of
/// `args` long enough to be a token.
pub(crate) fn server_error(text: &str, args: &[String]) -> String {
    let mut out = match text.find(", with args beginning with:") {
        Some(i) => format!("{} (arguments not shown)", &text[..i]),
        None => text.to_owned(),
    };
    for a in args.iter().filter(|a| a.len() >= SECRET_LEN) {
        out = out.replace(a.as_str(), "<redacted>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_passwords_are_redacted() {
        assert_eq!(
            url_error("cannot reach redis://u:s3cret@h", "redis://u:s3cret@h"),
            "cannot reach redis://u:***@h"
        );
        assert_eq!(url_error("x", "redis://h:1"), "x");
        assert_eq!(url_error("p@ss:w", "redis://:p@ss:w@h"), "***");
    }

    #[test]
    fn echoed_arguments_and_tokens_are_removed() {
        let token = "0123456789abcdef0123456789abcdef".to_owned();
        let echoed =
            format!("ERR unknown command 'EVALSHA', with args beginning with: 'abc' '2' 'k' '{token}' ");
        let safe = server_error(&echoed, std::slice::from_ref(&token));
        assert_eq!(safe, "ERR unknown command 'EVALSHA' (arguments not shown)");
        let other = format!("ERR something about {token}");
        assert_eq!(
            server_error(&other, &[token, "5000".into()]),
            "ERR something about <redacted>"
        );
    }
}
