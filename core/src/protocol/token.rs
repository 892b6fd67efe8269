//! Tokens and owner ids.
//!
//! A lease-lock token is 128 bits from the OS CSPRNG (`getrandom`; Web Crypto on wasm32),
//! rendered as 32 lower-case hex digits: text-safe in every language and as strong as the
//! 20-byte tokens redis-py and node-redlock use for their purpose. It is never derived from
//! time, pid or a counter (shared/reference/faults.md S1). If no secure source exists the
//! call fails; there is no fallback.
//!
//! An owner id (`O` in shared/WIRE.md) is `<client-uuid>:<integer>`, Redisson's layout.

use crate::error::{Error, Result};

/// Number of random bytes in a token (128 bits).
pub const TOKEN_BYTES: usize = 16;

/// A fresh random token: 32 lower-case hex digits.
///
/// # Errors
/// [`ErrorKind::Panic`](crate::ErrorKind::Panic) (internal failure) when the OS random source
/// is unavailable; there is deliberately no weaker fallback.
pub fn new_token() -> Result<String> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::new(crate::ErrorKind::Panic, format!("OS random source failed: {e}")))?;
    Ok(hex(&bytes))
}

/// `N` fresh random tokens, as [`new_token`] makes them, from one draw of the OS random
/// source: an acquire takes its token (or request id) and its hold's first release id at
/// once, since the system call, not the bytes, is what a draw costs.
///
/// # Errors
/// As [`new_token`].
pub fn new_tokens<const N: usize>() -> Result<[String; N]> {
    let mut bytes = [[0u8; TOKEN_BYTES]; N];
    getrandom::fill(bytes.as_flattened_mut())
        .map_err(|e| Error::new(crate::ErrorKind::Panic, format!("OS random source failed: {e}")))?;
    Ok(bytes.map(|b| hex(&b)))
}

/// A fresh client id: a random UUIDv4, lower-case and dashed, as Redisson's `ServiceManager.getId()`.
///
/// # Errors
/// [`ErrorKind::Panic`](crate::ErrorKind::Panic) (internal failure) when the OS random source
/// is unavailable (on wasm32: no Web Crypto); never a trap or a weaker fallback.
pub fn new_client_id() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::new(crate::ErrorKind::Panic, format!("OS random source failed: {e}")))?;
    Ok(uuid::Builder::from_random_bytes(bytes).into_uuid().to_string())
}

/// The owner id `O` = `<client-uuid>:<owner>` (Redisson `getLockName(threadId)`).
pub fn owner_id(client_id: &str, owner: u64) -> String {
    format!("{client_id}:{owner}")
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[(b >> 4) as usize] as char);
        out.push(DIGITS[(b & 0xf) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn tokens_are_128_bit_lower_hex_and_unique() {
        let mut seen = HashSet::new();
        for _ in 0..10_000 {
            let t = new_token().unwrap();
            assert_eq!(t.len(), 32);
            assert!(t
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)));
            assert!(seen.insert(t));
        }
    }

    #[test]
    fn tokens_drawn_together_differ() {
        let [a, b] = new_tokens::<2>().unwrap();
        assert_eq!((a.len(), b.len()), (32, 32));
        assert_ne!(a, b);
    }

    #[test]
    fn owner_ids_follow_redisson() {
        let id = new_client_id().unwrap();
        assert_eq!(uuid::Uuid::parse_str(&id).unwrap().get_version_num(), 4);
        assert_eq!(id.len(), 36);
        assert_eq!(id, id.to_lowercase());
        assert_eq!(owner_id("abc", 7), "abc:7");
    }
}
