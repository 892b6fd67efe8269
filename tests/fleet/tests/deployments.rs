//! The harness's deployments start as described: TLS, Cluster, Sentinel, Valkey, the ACL user.

use std::process::Command;

use redlatch_fleet::{
    acl, redis_cli_path, valkey_server_path, ClientAuth, RedisCluster, RedisServer, SentinelGroup,
    SentinelOptions, ServerOptions, TestPki, TlsServer,
};

fn tls_ping(server: &RedisServer, pki: &TestPki) -> String {
    let out = Command::new(redis_cli_path().unwrap())
        .args([
            "-h",
            "127.0.0.1",
            "-p",
            &server.tls_port().unwrap().to_string(),
            "--tls",
        ])
        .arg("--cacert")
        .arg(&pki.ca)
        .arg("--cert")
        .arg(&pki.client_cert)
        .arg("--key")
        .arg(&pki.client_key)
        .arg("PING")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn tls_server_answers_on_its_tls_port() {
    let pki = TestPki::generate().unwrap();
    let server = RedisServer::start_with_options(&ServerOptions {
        tls: Some(TlsServer {
            cert: pki.server_cert.clone(),
            key: pki.server_key.clone(),
            ca: pki.ca.clone(),
            client_auth: ClientAuth::Required,
        }),
        ..ServerOptions::default()
    })
    .unwrap();
    assert_eq!(tls_ping(&server, &pki), "PONG");
    assert!(server.tls_url().unwrap().starts_with("rediss://127.0.0.1:"));
    assert_ne!(server.tls_port(), Some(server.port()));
}

#[test]
fn cluster_forms_migrates_and_fails_over() {
    let cluster = RedisCluster::start().unwrap();
    assert_eq!(cluster.nodes().len(), 6);
    let slot = cluster.slot_of("{k}").unwrap();
    assert_eq!(slot, cluster.slot_of("k").unwrap());
    let owner = cluster.master_of(slot).unwrap().port();
    owner_set(&cluster, "{k}:a");
    let to = cluster.other_master(slot).unwrap();
    let to_port = to.port();
    cluster.migrate_slot(slot, to).unwrap();
    assert_eq!(cluster.master_of(slot).unwrap().port(), to_port);
    assert_ne!(to_port, owner);
    let moved = cluster.master_of(slot).unwrap();
    assert_eq!(
        moved.cli(&["GET", "{k}:a"]).unwrap(),
        "v",
        "the key moved with its slot"
    );
    let new_master = cluster.failover(slot).unwrap().port();
    assert_ne!(new_master, to_port);
    assert_eq!(cluster.master_of(slot).unwrap().port(), new_master);
}

fn owner_set(cluster: &RedisCluster, key: &str) {
    let slot = cluster.slot_of(key).unwrap();
    assert_eq!(
        cluster.master_of(slot).unwrap().cli(&["SET", key, "v"]).unwrap(),
        "OK"
    );
}

#[test]
fn sentinel_group_fails_over() {
    let group = SentinelGroup::start(SentinelOptions {
        data_password: Some("datapw".into()),
        sentinel_password: Some("sentinelpw".into()),
        replica_via_proxy: true,
    })
    .unwrap();
    assert_eq!(group.master().unwrap(), 0);
    assert!(group.url().starts_with("redis+sentinel://:datapw@127.0.0.1:"));
    assert_eq!(group.failover().unwrap(), 1);
    assert_eq!(group.master().unwrap(), 1);
}

#[test]
fn acl_user_has_the_documented_commands_only() {
    let server = RedisServer::start_with_options(&ServerOptions {
        acl_user: Some(false),
        ..ServerOptions::default()
    })
    .unwrap();
    server.create_acl_user("lock:*").unwrap();
    let user = ["--user", acl::USER, "--pass", acl::PASSWORD, "--no-auth-warning"];
    let run = |args: &[&str]| {
        let mut all = user.to_vec();
        all.extend(args);
        server.cli(&all).unwrap()
    };
    assert_eq!(run(&["SET", "lock:a", "t", "NX", "PX", "1000"]), "OK");
    assert!(run(&["SET", "other", "t"]).starts_with("NOPERM"));
    assert!(run(&["FLUSHALL"]).starts_with("NOPERM"));
    assert!(server.user_url().contains(acl::USER));
    assert_eq!(server.url(), server.admin_url());
}

#[test]
fn valkey_starts_when_installed() {
    let Ok(exe) = valkey_server_path() else {
        assert!(
            std::env::var("REDLATCH_REQUIRE_VALKEY").is_err(),
            "REDLATCH_REQUIRE_VALKEY is set but no valkey-server was found"
        );
        eprintln!("skipped: no valkey-server (tests/setup.sh valkey installs one)");
        return;
    };
    let server = RedisServer::start_with_options(&ServerOptions {
        exe: Some(exe),
        ..ServerOptions::default()
    })
    .unwrap();
    assert!(server.is_valkey());
    assert_eq!(server.cli(&["PING"]).unwrap(), "PONG");
}

/// A restarted server has the ACL user from its first accepted connection: clients that
/// reconnect at once (the core's waiters do) must never meet WRONGPASS, which the core takes
/// as a permanent refusal. The user used to be created by a command after the restart.
#[test]
fn a_restarted_server_has_the_acl_user_before_it_accepts_connections() {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    let server = RedisServer::start_with_options(&ServerOptions {
        acl_user: Some(true),
        ..ServerOptions::default()
    })
    .unwrap();
    let port = server.port();
    let stop = Arc::new(AtomicBool::new(false));
    // Logs in as the ACL user over and over, as a reconnecting client would.
    let hammer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (mut accepted, mut refused) = (0, Vec::new());
            let auth = format!("AUTH {} {}\r\n", acl::USER, acl::PASSWORD);
            while !stop.load(Ordering::Relaxed) {
                let Ok(mut conn) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                    continue;
                };
                let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
                let mut reply = [0u8; 128];
                let n = match conn
                    .write_all(auth.as_bytes())
                    .and_then(|()| conn.read(&mut reply))
                {
                    Ok(n) => n,
                    Err(_) => continue,
                };
                let reply = String::from_utf8_lossy(&reply[..n]).into_owned();
                if reply.starts_with("+OK") {
                    accepted += 1;
                } else if !reply.is_empty() {
                    refused.push(reply);
                }
            }
            (accepted, refused)
        })
    };
    for _ in 0..5 {
        server.restart().unwrap();
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let (accepted, refused) = hammer.join().unwrap();
    assert!(refused.is_empty(), "logins refused around restarts: {refused:?}");
    assert!(accepted > 0, "the hammer never logged in");
}
