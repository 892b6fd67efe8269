//! TLS (`rediss://`) through redis-rs's rustls support: [`TlsOptions`] (CA, client
//! certificate for mutual TLS, server name, the insecure switch) and the messages a failed
//! handshake gets.
//!
//! Why rustls: no OpenSSL is needed to build or run, and its verification errors are typed,
//! so a wrong CA, a wrong host name and an expired certificate each get a message that says
//! which (they fail closed: never a fallback to an unverified connection). Roots default to
//! the system's (rustls-native-certs, which honours `SSL_CERT_FILE`); a CA option replaces them.

use crate::error::{Error, Result};
use std::path::PathBuf;

/// PEM bytes given inline or read from a file when the client is built.
#[derive(Clone)]
enum Pem {
    File(PathBuf),
    Bytes(Vec<u8>),
}

impl Pem {
    fn load(&self, what: &str) -> Result<Vec<u8>> {
        match self {
            Pem::Bytes(b) => Ok(b.clone()),
            Pem::File(path) => std::fs::read(path)
                .map_err(|e| Error::invalid(format!("cannot read the {what} file {}: {e}", path.display()))),
        }
    }
}

/// TLS settings for `rediss://` URLs (and `rediss+cluster://`, `rediss+sentinel://`).
///
/// Default: verify the server against the system's root certificates and the URL's host
/// name. Every failure is a `Connection` error naming the cause; there is no silent
/// downgrade. Debug output never shows key material.
#[derive(Clone, Default)]
pub struct TlsOptions {
    ca: Option<Pem>,
    client_cert: Option<Pem>,
    client_key: Option<Pem>,
    server_name: Option<String>,
    insecure: bool,
}

impl std::fmt::Debug for TlsOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsOptions")
            .field("ca", &self.ca.is_some())
            .field("client_cert", &self.client_cert.is_some())
            .field("server_name", &self.server_name)
            .field("insecure", &self.insecure)
            .finish_non_exhaustive()
    }
}

impl TlsOptions {
    /// The defaults (system roots, host name from the URL).
    pub fn new() -> Self {
        Self::default()
    }

    /// Trust only the CA certificate(s) in this PEM file instead of the system roots. Read
    /// when the client is built (`InvalidArgument` if unreadable or not PEM).
    pub fn ca_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca = Some(Pem::File(path.into()));
        self
    }

    /// As [`ca_file`](Self::ca_file), from PEM text.
    pub fn ca_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca = Some(Pem::Bytes(pem.into()));
        self
    }

    /// Mutual TLS: present this certificate chain and private key (PEM files, read when the
    /// client is built).
    pub fn client_cert_files(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.client_cert = Some(Pem::File(cert.into()));
        self.client_key = Some(Pem::File(key.into()));
        self
    }

    /// As [`client_cert_files`](Self::client_cert_files), from PEM text.
    pub fn client_cert_pem(mut self, cert: impl Into<Vec<u8>>, key: impl Into<Vec<u8>>) -> Self {
        self.client_cert = Some(Pem::Bytes(cert.into()));
        self.client_key = Some(Pem::Bytes(key.into()));
        self
    }

    /// Verify the server's certificate against `name` (and send it as SNI) instead of the
    /// URL's host, e.g. when connecting by IP address or through a tunnel. Single-node and
    /// quorum clients only (Cluster and Sentinel nodes are reached by the addresses they
    /// announce).
    pub fn server_name(mut self, name: impl Into<String>) -> Self {
        self.server_name = Some(name.into());
        self
    }

    /// **Insecure**: accept any server certificate, for any name, signed by anyone. Traffic
    /// is encrypted but anyone in the path can read and alter it. Never the default; meant
    /// for throw-away test servers only.
    pub fn insecure_skip_verify(mut self, insecure: bool) -> Self {
        self.insecure = insecure;
        self
    }

    /// `true` when no option differs from the default.
    pub(crate) fn is_default(&self) -> bool {
        self.ca.is_none() && self.client_cert.is_none() && self.server_name.is_none() && !self.insecure
    }

    pub(crate) fn server_name_override(&self) -> Option<&str> {
        self.server_name.as_deref()
    }

    pub(crate) fn insecure(&self) -> bool {
        self.insecure
    }

    /// The certificates for redis-rs, files read now.
    ///
    /// # Errors
    /// `InvalidArgument` for an unreadable file, a CA or client certificate PEM without a
    /// certificate (or with one that does not parse), a client key PEM without a key, a
    /// client key that is not the client certificate's.
    pub(crate) fn certificates(&self) -> Result<redis::TlsCertificates> {
        let client_tls = match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => {
                let client_cert = certificates_in(cert.load("client certificate")?, "client certificate")?;
                let client_key = private_key_in(key.load("client key")?)?;
                key_of(&client_cert, &client_key)?;
                Some(redis::ClientTlsConfig {
                    client_cert,
                    client_key,
                })
            }
            _ => None,
        };
        let root_cert = match &self.ca {
            Some(ca) => Some(certificates_in(ca.load("CA")?, "CA")?),
            None => None,
        };
        Ok(redis::TlsCertificates {
            client_tls,
            root_cert,
        })
    }
}

/// `pem` back if it holds at least one PEM certificate and nothing unreadable: an empty file
/// or one with other content would otherwise be taken, and every connection would then fail
/// with "not signed by a trusted CA" although a CA was given (found by a user trial).
fn certificates_in(pem: Vec<u8>, what: &str) -> Result<Vec<u8>> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let mut found = 0;
    for cert in CertificateDer::pem_slice_iter(&pem) {
        cert.map_err(|e| Error::invalid(format!("the {what} PEM does not parse: {e}")))?;
        found += 1;
    }
    if found == 0 {
        return Err(Error::invalid(format!(
            "the {what} PEM holds no certificate (expected -----BEGIN CERTIFICATE-----)"
        )));
    }
    Ok(pem)
}

/// `pem` back if it holds a private key (PKCS#8, PKCS#1 or SEC1). The key is not shown.
fn private_key_in(pem: Vec<u8>) -> Result<Vec<u8>> {
    use rustls::pki_types::{pem::PemObject, PrivateKeyDer};
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|_| Error::invalid("the client key PEM holds no private key"))?;
    Ok(pem)
}

/// Checks that the client key (PEM) is the private key of the client certificate (PEM, the
/// first one): a mismatch was taken when the client was made and refused by redis-rs at the
/// first call, in its own words (a Python trial of stop 48). The key is not shown.
/// Other faults of the material (a certificate rustls cannot parse, a key type it lacks) are
/// left to redis-rs' own checks, which [`refused_material`] names.
fn key_of(cert_pem: &[u8], key_pem: &[u8]) -> Result<()> {
    use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
    use rustls::{Error as R, InconsistentKeys};
    let (Ok(chain), Ok(key)) = (
        CertificateDer::pem_slice_iter(cert_pem).collect::<std::result::Result<Vec<_>, _>>(),
        PrivateKeyDer::from_pem_slice(key_pem),
    ) else {
        return Ok(());
    };
    let provider = rustls::crypto::ring::default_provider();
    match rustls::sign::CertifiedKey::from_der(chain, key, &provider) {
        Err(R::InconsistentKeys(InconsistentKeys::KeyMismatch)) => Err(Error::invalid(
            "the client key is not the private key of the client certificate (check that the two files belong together)",
        )),
        _ => Ok(()),
    }
}

/// The error of redis-rs refusing the TLS material (`build_with_tls`), saying which part and
/// why, instead of the URL it was given with (a user trial: a CA that is no certificate was a
/// "bad Redis URL"; a client certificate in X.509 v1 an "invalid peer certificate").
pub(crate) fn refused_material(e: &redis::RedisError) -> Error {
    let text = e.to_string();
    let why = refusal_reason(&text).unwrap_or("the TLS certificates or key could not be used");
    Error::invalid(format!("{why} ({text})"))
}

/// What a TLS refusal of redis-rs / rustls means for the files given, when it is one this knows
/// (at client build or at connect: rustls checks the client certificate when connecting).
pub(crate) fn refusal_reason(text: &str) -> Option<&'static str> {
    if text.contains("UnsupportedCertVersion") {
        Some("the client certificate is X.509 version 1, which the TLS library (rustls) does not accept: issue it as version 3 (e.g. `openssl x509 -req ... -extfile` with `basicConstraints=CA:FALSE`)")
    } else if text.contains("trust anchors") {
        Some("the CA PEM holds a block that is not a usable X.509 certificate")
    } else {
        None
    }
}

/// Installs rustls's ring provider as the process default once (redis-rs's insecure mode
/// asks for the default provider; an application that installed its own keeps it).
pub(crate) fn install_crypto_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The rustls error inside a redis-rs error, if the failure was a TLS one. redis-rs keeps
/// the I/O error behind an `Arc<dyn Error>`, and `io::Error::source` skips its payload, so
/// each layer is opened by downcasting rather than by walking `source()`.
fn rustls_error(e: &redis::RedisError) -> Option<&rustls::Error> {
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(s) = source {
        let inner: &(dyn std::error::Error + 'static) = match s.downcast_ref::<Shared>() {
            Some(shared) => shared.as_ref(),
            None => s,
        };
        if let Some(r) = inner.downcast_ref::<rustls::Error>() {
            return Some(r);
        }
        if let Some(io) = inner.downcast_ref::<std::io::Error>() {
            if let Some(r) = io.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                return Some(r);
            }
        }
        source = inner.source();
    }
    None
}

/// The I/O error kind inside a redis-rs error, if any.
fn io_kind(e: &redis::RedisError) -> Option<std::io::ErrorKind> {
    type Shared = std::sync::Arc<dyn std::error::Error + Send + Sync>;
    let s = std::error::Error::source(e)?;
    let inner: &(dyn std::error::Error + 'static) = match s.downcast_ref::<Shared>() {
        Some(shared) => shared.as_ref(),
        None => s,
    };
    inner.downcast_ref::<std::io::Error>().map(std::io::Error::kind)
}

/// Why a TLS connection got no answer within the network timeout (redis-rs' connection
/// timeout covers the TCP connect and the handshake).
const NO_HANDSHAKE: &str = "no answer to the TLS handshake within the network timeout: is this a plain-text port (use redis:// there), does the server require a client certificate (mutual TLS) that was not given or not trusted, or is it not answering at all (paused, overloaded)?";

/// A message for a plain (`redis://`) connection that the server closed while it was being
/// made, as a TLS port does with bytes that are not a TLS handshake, or `None` for other
/// failures.
pub(crate) fn describe_plain_failure(e: &redis::RedisError) -> Option<String> {
    use std::io::ErrorKind as K;
    match io_kind(e) {
        Some(K::ConnectionReset | K::UnexpectedEof | K::BrokenPipe) => Some(closed_as_made(&e, false)),
        _ => None,
    }
}

/// TLS 1.3 servers check a client certificate after the client's side of the handshake is
/// done: a refusal then shows as the connection closing.
const CLOSED_IN_HANDSHAKE: &str = "the server closed the connection during the handshake: it may require a client certificate (mutual TLS) or refuse the one given";

/// What a connection that the server closed while it was being made says (`detail`: the
/// socket's own error): on a plain connection, that the port may be a TLS one; on a TLS
/// connection, that the server may require a client certificate.
pub(crate) fn closed_as_made(detail: &dyn std::fmt::Display, tls: bool) -> String {
    if tls {
        format!("TLS: {CLOSED_IN_HANDSHAKE}")
    } else {
        format!("the server closed the connection as it was made ({detail}): is this a TLS port (use rediss:// there)?")
    }
}

/// What a call on a TLS connection still being made when the call's time ran out says.
pub(crate) fn no_handshake() -> String {
    format!("TLS: {NO_HANDSHAKE}")
}

/// Whether `e` is a TLS failure no retry cures with the same settings: the server's
/// certificate refused by this client, or the handshake refused by the server (a client
/// certificate required or not trusted), or a peer that does not speak TLS. Such a failure is
/// permanent (waits end at once), as a refused password is: a deployments trial of stop 45
/// saw a Python acquire with a wrong CA wait out its whole wait, where Node's connect failed
/// at once. A closed connection or a silent handshake may be a paused server: not these.
pub(crate) fn refused_for_good(e: &redis::RedisError) -> bool {
    use rustls::Error as R;
    matches!(
        rustls_error(e),
        Some(
            R::InvalidCertificate(_)
                | R::AlertReceived(_)
                | R::InvalidMessage(_)
                | R::InappropriateMessage { .. }
                | R::InappropriateHandshakeMessage { .. }
        )
    )
}

/// A TLS refusal named in the text of a Cluster connect error, which redis-rs gives as text
/// only ("Failed to create initial connections - Io: invalid peer certificate:
/// UnknownIssuer"): in the words a single node's failure gets ([`describe_failure`]), and
/// permanent as there ([`refused_for_good`]). A deployments trial of stop 45 got redis-rs'
/// text on Cluster only.
pub(crate) fn refusal_in_text(text: &str) -> Option<Error> {
    let why = if text.contains("invalid peer certificate: UnknownIssuer")
        || text.contains("invalid peer certificate: BadSignature")
    {
        "the server's certificate is not signed by a trusted CA (give the CA with the TLS CA option; system roots are used otherwise)"
    } else if text.contains("invalid peer certificate: NotValidForName") {
        "the server's certificate is not valid for the address it was reached by (Cluster nodes are verified by the addresses they announce)"
    } else if text.contains("invalid peer certificate: Expired") {
        "the server's certificate has expired"
    } else if text.contains("received fatal alert") {
        "the server refused the handshake: it may require a client certificate (mutual TLS) or not trust the one given"
    } else {
        return None;
    };
    Some(Error::connection(format!("TLS: {why}")).permanently())
}

/// A message naming why a TLS connection to `host` failed, or `None` if `e` is not a TLS
/// failure.
pub(crate) fn describe_failure(e: &redis::RedisError, host: &str) -> Option<String> {
    use rustls::{AlertDescription as A, CertificateError as C, Error as R};
    let Some(tls_error) = rustls_error(e) else {
        use std::io::ErrorKind as K;
        let why = match io_kind(e) {
            Some(K::BrokenPipe | K::ConnectionReset | K::UnexpectedEof) => CLOSED_IN_HANDSHAKE,
            // Also what a refused client certificate can look like: redis-rs can miss the
            // close that follows it (its request raced the close; see connection.rs), and
            // then its first command waits out the timeout.
            _ if e.is_timeout() => NO_HANDSHAKE,
            _ => return None,
        };
        return Some(format!("TLS: {why}"));
    };
    let why = match tls_error {
        R::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            "the server's certificate is not signed by a trusted CA (give the CA with the TLS CA option; system roots are used otherwise)".to_owned()
        }
        R::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => format!(
            "the server's certificate is not valid for the name {host:?} (check the URL's host or the TLS server name option)"
        ),
        R::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            "the server's certificate has expired".to_owned()
        }
        R::InvalidCertificate(C::NotValidYet | C::NotValidYetContext { .. }) => {
            "the server's certificate is not valid yet (check the clocks)".to_owned()
        }
        R::InvalidCertificate(C::InvalidPurpose | C::InvalidPurposeContext { .. }) => {
            "the server's certificate is not meant for TLS servers (extended key usage)".to_owned()
        }
        R::InvalidCertificate(other) => format!("the server's certificate was refused ({other:?})"),
        R::AlertReceived(alert @ (A::CertificateRequired | A::HandshakeFailure | A::BadCertificate | A::UnknownCA | A::CertificateUnknown | A::AccessDenied)) => format!(
            "the server refused the handshake ({alert:?}): it may require a client certificate (mutual TLS) or not trust the one given"
        ),
        R::InvalidMessage(_) | R::InappropriateMessage { .. } | R::InappropriateHandshakeMessage { .. } => {
            "the server did not answer with TLS (is this a plain-text port? use redis:// there)".to_owned()
        }
        other => format!("TLS handshake failed ({other})"),
    };
    Some(format!("TLS: {why}"))
}
