//! A throw-away certificate authority made with the `openssl` command at test time: the
//! certificates TLS tests need (valid, expired, from another CA, client) and nothing else.
//!
//! Why openssl and not a Rust crate: it is what operators use to make such files, Debian
//! ships it, and the library under test must not also be the one that made its inputs.
//! ECDSA P-256 keys keep generation fast.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::launch::make_temp_dir;

/// The DNS names and address every server certificate of a [`TestPki`] is valid for.
pub const SERVER_NAMES: &str = "DNS:redis.test,DNS:localhost,IP:127.0.0.1";

/// Files of a test PKI, in a private temporary directory removed on drop.
#[derive(Debug)]
pub struct TestPki {
    dir: PathBuf,
    /// The CA certificate (PEM) that signed every certificate below except `other_ca`'s.
    pub ca: PathBuf,
    /// A server certificate valid for [`SERVER_NAMES`] and its key.
    pub server_cert: PathBuf,
    /// Key of `server_cert`.
    pub server_key: PathBuf,
    /// A server certificate for the same names that expired yesterday, and its key.
    pub expired_cert: PathBuf,
    /// Key of `expired_cert`.
    pub expired_key: PathBuf,
    /// A client certificate (CN `redlatch-client`) and its key, for mutual TLS.
    pub client_cert: PathBuf,
    /// Key of `client_cert`.
    pub client_key: PathBuf,
    /// Another CA, which signed none of these: trusting it must fail.
    pub other_ca: PathBuf,
}

fn openssl(dir: &Path, args: &[&str]) -> io::Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot run openssl ({e}); apt-get install openssl"),
            )
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "openssl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

const EC: [&str; 4] = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"];

fn self_signed_ca(dir: &Path, name: &str) -> io::Result<()> {
    let (key, cert, subj) = (
        format!("{name}.key"),
        format!("{name}.pem"),
        format!("/CN={name}"),
    );
    let mut args = vec!["req", "-x509", "-nodes", "-days", "2", "-subj", &subj];
    args.extend(EC);
    args.extend(["-keyout", &key, "-out", &cert]);
    openssl(dir, &args)
}

/// A certificate for `name` signed by `ca`, valid `days` from now (negative: already expired).
fn leaf(dir: &Path, ca: &str, name: &str, cn: &str, usage: &str, days: i32) -> io::Result<()> {
    let ext = format!("{name}.ext");
    let names = if usage == "serverAuth" {
        format!("subjectAltName={SERVER_NAMES}\n")
    } else {
        String::new()
    };
    fs::write(dir.join(&ext), format!("{names}extendedKeyUsage={usage}\n"))?;
    let (key, csr, cert, subj) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.pem"),
        format!("/CN={cn}"),
    );
    let mut args = vec!["req", "-nodes", "-subj", &subj];
    args.extend(EC);
    args.extend(["-keyout", &key, "-out", &csr]);
    openssl(dir, &args)?;
    let (ca_cert, ca_key, days) = (format!("{ca}.pem"), format!("{ca}.key"), days.to_string());
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_cert,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            &days,
            "-extfile",
            &ext,
            "-out",
            &cert,
        ],
    )
}

impl TestPki {
    /// Makes the CA and every certificate (about a second of openssl work).
    ///
    /// # Errors
    /// openssl missing or failing (the message has its stderr).
    pub fn generate() -> io::Result<Self> {
        let dir = make_temp_dir()?;
        let made = (|| {
            self_signed_ca(&dir, "ca")?;
            self_signed_ca(&dir, "other-ca")?;
            leaf(&dir, "ca", "server", "redis.test", "serverAuth", 2)?;
            leaf(&dir, "ca", "expired", "redis.test", "serverAuth", -1)?;
            leaf(&dir, "ca", "client", "redlatch-client", "clientAuth", 2)
        })();
        if let Err(e) = made {
            let _ = fs::remove_dir_all(&dir);
            return Err(e);
        }
        let file = |n: &str| dir.join(n);
        Ok(TestPki {
            ca: file("ca.pem"),
            server_cert: file("server.pem"),
            server_key: file("server.key"),
            expired_cert: file("expired.pem"),
            expired_key: file("expired.key"),
            client_cert: file("client.pem"),
            client_key: file("client.key"),
            other_ca: file("other-ca.pem"),
            dir,
        })
    }

    /// The directory holding every file.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for TestPki {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.dir);
    }
}
