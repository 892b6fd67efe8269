"""Fixtures: Redis servers from the fleet harness, or our own when run alone.

``redlatch-fleet`` sets REDLATCH_TEST_URL (one node) and REDLATCH_TEST_QUORUM_URLS (three
independent nodes, comma-separated). Without them, this file starts redis-server processes
itself on free 127.0.0.1 ports and stops them (by pid) at the end of the session.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Iterator, List

import pytest
import redis

import redlatch


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _Server:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="redlatch-py-redis-")
        last = None
        for _ in range(5):
            self.port = free_port()
            self.proc = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.dir, "--enable-debug-command", "local"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            try:
                self._wait_ready()
                return
            except RuntimeError as e:  # port taken between bind and start: try another
                last = e
                self.proc.kill()
                self.proc.wait()
        raise RuntimeError(f"redis-server did not start: {last}")

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited")
            try:
                if redis.Redis(port=self.port, socket_timeout=0.5).ping():
                    return
            except redis.exceptions.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server not ready")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    url = os.environ.get("REDLATCH_TEST_URL")
    if url:
        yield url
        return
    if not shutil.which("redis-server"):
        pytest.skip("no REDLATCH_TEST_URL and no redis-server on PATH")
    server = _Server()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="session")
def quorum_urls() -> Iterator[List[str]]:
    urls = [u for u in os.environ.get("REDLATCH_TEST_QUORUM_URLS", "").split(",") if u]
    if urls:
        yield urls
        return
    if not shutil.which("redis-server"):
        pytest.skip("no REDLATCH_TEST_QUORUM_URLS and no redis-server on PATH")
    servers = [_Server() for _ in range(3)]
    try:
        yield [s.url for s in servers]
    finally:
        for s in servers:
            s.stop()


def admin(url: str) -> str:
    """The default user's URL of the fleet node behind ``url``: when the suite runs as the
    least-privilege ACL user (``REDLATCH_FLEET_ACL=1``), test code that inspects or tampers
    with keys uses this one."""
    users = [os.environ.get("REDLATCH_TEST_URL", "")] + os.environ.get("REDLATCH_TEST_QUORUM_URLS", "").split(",")
    admins = [os.environ.get("REDLATCH_TEST_ADMIN_URL", "")] + os.environ.get(
        "REDLATCH_TEST_ADMIN_QUORUM_URLS", ""
    ).split(",")
    for user_url, admin_url in zip(users, admins):
        if user_url == url and admin_url:
            return admin_url
    return url


@pytest.fixture
def r(redis_url: str) -> Iterator[redis.Redis]:
    """A redis-py client on the single node (default user), for inspecting keys."""
    client = redis.Redis.from_url(admin(redis_url))
    yield client
    client.close()


@pytest.fixture(scope="session")
def client(redis_url: str) -> redlatch.Client:
    return redlatch.Client(redis_url)


@pytest.fixture
def name(request: pytest.FixtureRequest) -> str:
    """A lock name unique to the test."""
    return f"pytest:{request.node.name}:{uuid.uuid4().hex[:8]}"


def channel(lock_name: str) -> str:
    """The unlock channel waiters subscribe to (shared/WIRE.md)."""
    return f"redisson_lock__channel:{{{lock_name}}}"


def numsub(r: redis.Redis, lock_name: str) -> int:
    return int(r.pubsub_numsub(channel(lock_name))[0][1])


def wait_until(predicate, timeout: float = 5.0, interval: float = 0.02) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
