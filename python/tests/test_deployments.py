"""Deployments (issue #14): TLS, Cluster, Sentinel, eviction warnings, secrets kept out of
messages. The servers come from ``redlatch-fleet --deployments`` (``make py-test``); run
alone, these tests are skipped."""

from __future__ import annotations

import os
import re
import urllib.parse
import warnings
from typing import List

import pytest

import redlatch


def env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set (run under redlatch-fleet --deployments)")
    return value


def tls_options() -> dict:  # type: ignore[type-arg]
    return {
        "tls_ca_file": env("REDLATCH_TEST_TLS_CA"),
        "tls_cert_file": env("REDLATCH_TEST_TLS_CERT"),
        "tls_key_file": env("REDLATCH_TEST_TLS_KEY"),
    }


def test_mutual_tls_with_a_ca_file(name: str) -> None:
    client = redlatch.Client(env("REDLATCH_TEST_TLS_URL"), **tls_options())
    with client.lock(name, lease=5.0) as held:
        assert held.owned()
    # Inline PEM is the same.
    with open(env("REDLATCH_TEST_TLS_CA"), "rb") as ca:
        pem = redlatch.Client(
            env("REDLATCH_TEST_TLS_URL"),
            tls_ca_pem=ca.read(),
            tls_cert_file=env("REDLATCH_TEST_TLS_CERT"),
            tls_key_file=env("REDLATCH_TEST_TLS_KEY"),
        )
    assert pem.lock(name, lease=1.0).acquire(timeout=5.0)


def test_tls_failures_fail_closed_and_say_which(name: str) -> None:
    url = env("REDLATCH_TEST_TLS_URL")
    opts = tls_options()
    opts["tls_ca_file"] = env("REDLATCH_TEST_TLS_OTHER_CA")
    with pytest.raises(redlatch.RedisConnectionError, match="not signed by a trusted CA"):
        redlatch.Client(url, **opts).lock(name, lease=1.0).acquire(timeout=1.0)
    wrong_name = dict(tls_options(), tls_server_name="elsewhere.test")
    with pytest.raises(redlatch.RedisConnectionError, match="not valid for the name"):
        redlatch.Client(url, **wrong_name).lock(name, lease=1.0).acquire(timeout=1.0)
    no_cert = {"tls_ca_file": env("REDLATCH_TEST_TLS_CA")}
    with pytest.raises(redlatch.RedisConnectionError, match="client certificate"):
        redlatch.Client(url, **no_cert).lock(name, lease=1.0).acquire(timeout=1.0)
    # Bad input is refused at construction, before any connection.
    with pytest.raises(ValueError, match="cannot read the CA file"):
        redlatch.Client(url, tls_ca_file="/nonexistent/ca.pem")
    with pytest.raises(ValueError, match="needs its key"):
        redlatch.Client(url, tls_cert_file=env("REDLATCH_TEST_TLS_CERT"))
    with pytest.raises(ValueError, match="not rediss://"):
        redlatch.Client("redis://127.0.0.1:1", tls_ca_file=env("REDLATCH_TEST_TLS_CA"))


def cluster_urls() -> List[str]:
    return env("REDLATCH_TEST_CLUSTER_URLS").split(",")


def test_cluster_client_and_url(name: str) -> None:
    client = redlatch.Client.cluster(cluster_urls())
    assert client.node_count == 1
    # Said what it is (a user trial of stop 41 read "nodes=1"), with no login.
    assert re.fullmatch(r"<redlatch.Client cluster \(seed 127\.0\.0\.1:\d+\)>", repr(client)), repr(client)
    # redis+cluster://[user:password@]h1:p1,h2:p2 (the seeds may carry the ACL user's login).
    seeds = [urllib.parse.urlsplit(u) for u in cluster_urls()]
    login = seeds[0].netloc.rpartition("@")[0]
    hosts = ",".join(s.netloc.rpartition("@")[2] for s in seeds)
    by_url = redlatch.Client(f"redis+cluster://{login + '@' if login else ''}{hosts}")
    for i in range(6):  # names on several shards
        lock = client.lock(f"{name}:{i}", lease=5.0, fenced=True)
        with lock as held:
            assert held.fencing_token is not None
            assert not by_url.lock(f"{name}:{i}").acquire(blocking=False)
    with client.rlock(name) as outer:
        with client.rlock(name):
            assert outer.owned()


def test_sentinel_url_with_sentinel_password_and_sync_replicas(name: str) -> None:
    url = env("REDLATCH_TEST_SENTINEL_URL")
    password = env("REDLATCH_TEST_SENTINEL_PASSWORD")
    client = redlatch.Client(url, sentinel_password=password, sync_replicas=1)
    with client.lock(name, lease=5.0) as held:
        assert held.owned()
    with pytest.raises(redlatch.RedisConnectionError) as raised:
        redlatch.Client(url, sentinel_password="not-it").lock(name, lease=1.0).acquire(timeout=1.0)
    assert "not-it" not in str(raised.value) and "fleet-data-pw" not in str(raised.value)
    with pytest.raises(ValueError, match="sentinel password"):
        redlatch.Client(url, sentinel_username="someone")


def test_an_evicting_policy_is_a_deployment_warning(name: str) -> None:
    client = redlatch.Client(env("REDLATCH_TEST_EVICTING_URL"))
    with pytest.warns(redlatch.DeploymentWarning, match="maxmemory-policy is allkeys-lru"):
        with client.lock(name, lease=1.0):
            pass
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once per node: not again
        with client.lock(name, lease=1.0):
            pass


def test_no_token_or_password_in_messages_or_reprs(name: str) -> None:
    # A plain client pointed at a sentinel: it answers "unknown command 'SET', with args
    # beginning with: ..." and would echo the token.
    first_sentinel = env("REDLATCH_TEST_SENTINEL_URL").split("@", 1)[1].split(",")[0]
    sentinel_password = env("REDLATCH_TEST_SENTINEL_PASSWORD")
    client = redlatch.Client(f"redis://:{sentinel_password}@{first_sentinel}")
    assert sentinel_password not in repr(client)
    with pytest.raises(redlatch.LockError) as raised:
        client.lock(name, lease=1.0).acquire(blocking=False)
    message = str(raised.value)
    assert "unknown command" in message
    assert not re.search(r"[0-9a-f]{32}", message), message
    assert sentinel_password not in message
    secret = "pw-Zq81-secret"
    url = f"redis://user:{secret}@127.0.0.1:1"
    c = redlatch.Client(url, network_timeout=0.5)
    assert secret not in repr(c)
    with pytest.raises(redlatch.RedisConnectionError) as raised:
        c.lock(name, lease=1.0).acquire(blocking=False)
    assert secret not in str(raised.value) and secret not in repr(raised.value)
    with pytest.raises(ValueError) as bad:
        redlatch.Client(f"redis://user:{secret}@[bad")
    assert secret not in str(bad.value)
