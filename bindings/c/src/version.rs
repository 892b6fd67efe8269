//! The library version, for checking at run time that the library matches the header's
//! `REDLATCH_VERSION_*` macros (a unit test checks the committed header against Cargo).

use std::ffi::{c_char, CStr};

use crate::panic::boundary_value;

const VERSION: &CStr = match CStr::from_bytes_with_nul(concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes()) {
    Ok(v) => v,
    Err(_) => panic!("the package version has a NUL byte"),
};

/// The library version, e.g. `"0.1.0"` (static string; equal to `REDLATCH_VERSION_STRING` of
/// the header it was built with).
#[no_mangle]
pub extern "C" fn redlatch_version() -> *const c_char {
    boundary_value(VERSION.as_ptr(), || VERSION.as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn define(header: &str, name: &str) -> String {
        let prefix = format!("#define {name} ");
        header
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("{name} missing from include/redlatch.h"))
            .trim()
            .to_owned()
    }

    #[test]
    fn header_version_macros_match_cargo() {
        let header = include_str!("../../../include/redlatch.h");
        assert_eq!(
            define(header, "REDLATCH_VERSION_MAJOR"),
            env!("CARGO_PKG_VERSION_MAJOR")
        );
        assert_eq!(
            define(header, "REDLATCH_VERSION_MINOR"),
            env!("CARGO_PKG_VERSION_MINOR")
        );
        assert_eq!(
            define(header, "REDLATCH_VERSION_PATCH"),
            env!("CARGO_PKG_VERSION_PATCH")
        );
        let string = format!("\"{}\"", env!("CARGO_PKG_VERSION"));
        assert_eq!(define(header, "REDLATCH_VERSION_STRING"), string);
        // SAFETY: redlatch_version returns a static NUL-terminated string.
        let runtime = unsafe { CStr::from_ptr(redlatch_version()) };
        assert_eq!(runtime.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}
