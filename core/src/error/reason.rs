//! [`Reason`]: why a hold is not (or no longer) this owner's.

use std::fmt;

/// Why a hold is not (or no longer) this owner's, carried by [`ErrorKind::NotOwned`](super::ErrorKind::NotOwned) and
/// [`ErrorKind::LockLost`](super::ErrorKind::LockLost) errors (and reported with a lost hold). The word
/// ([`Reason::as_str`]) and the number ([`Reason::code`]) are the same in every binding.
///
/// How the core decides (bindings only map it):
/// - `Expired`: the hold's validity (its lease minus the clock-drift allowance, measured on
///   this client's monotonic clock) ran out before Redis confirmed it still ours;
/// - `Taken`: Redis holds the key for another owner (or token), within the validity;
/// - `Deleted`: the key is gone within the validity (`DEL`, force unlock, eviction, a restart
///   without persistence);
/// - `NeverHeld`: nothing to act on: never acquired through this handle, or already released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Reason {
    /// The lease ran out. Code 1, `"expired"`.
    Expired,
    /// Another owner holds the lock now. Code 2, `"taken"`.
    Taken,
    /// The key was deleted while the hold was valid. Code 3, `"deleted"`.
    Deleted,
    /// No hold to act on (never acquired, or already released). Code 4, `"never_held"`.
    NeverHeld,
}

impl Reason {
    /// Every reason, in code order.
    pub const ALL: [Reason; 4] = [Reason::Expired, Reason::Taken, Reason::Deleted, Reason::NeverHeld];

    /// The stable word: `"expired"`, `"taken"`, `"deleted"` or `"never_held"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Reason::Expired => "expired",
            Reason::Taken => "taken",
            Reason::Deleted => "deleted",
            Reason::NeverHeld => "never_held",
        }
    }

    /// The stable number (1..=4; 0 means "no reason" in C).
    pub const fn code(self) -> i32 {
        match self {
            Reason::Expired => 1,
            Reason::Taken => 2,
            Reason::Deleted => 3,
            Reason::NeverHeld => 4,
        }
    }

    /// Looks a reason up by its number.
    pub fn from_code(code: i32) -> Option<Reason> {
        Self::ALL.into_iter().find(|r| r.code() == code)
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_stable_words_and_codes() {
        let words: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(words, ["expired", "taken", "deleted", "never_held"]);
        for r in Reason::ALL {
            assert_eq!(Reason::from_code(r.code()), Some(r));
        }
        assert_eq!(Reason::from_code(0), None);
    }
}
