"""Helpers shared by the sync and asyncio layers: client construction, messages, and what
leaving a ``with`` block does when the release fails."""

from __future__ import annotations

import json
import os
import threading
import weakref
from typing import Callable, Generic, List, Optional, Protocol, Sequence, Tuple, Type, TypeVar, Union

from . import _native
from ._errors import INVALID_ARGUMENT, LockError, LockLostError, NotOwnedError

#: Bumped in a forked child. Per-thread hold lists stamped with an older value belong to the
#: parent: the child drops them (the native holds refuse to act in the child anyway), so a
#: lock object inherited across fork() starts empty and contends like any other.
fork_generation = 0


def _after_fork_in_child() -> None:
    global fork_generation
    fork_generation += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


PathLike = Union[str, "os.PathLike[str]"]
Pem = Union[str, bytes]


def native_client(
    urls: Sequence[str],
    *,
    watchdog_timeout: float,
    network_timeout: float,
    node_timeout: Optional[float],
    poll_interval: float,
    cluster: bool = False,
    tls_ca_file: Optional[PathLike] = None,
    tls_ca_pem: Optional[Pem] = None,
    tls_cert_file: Optional[PathLike] = None,
    tls_key_file: Optional[PathLike] = None,
    tls_cert_pem: Optional[Pem] = None,
    tls_key_pem: Optional[Pem] = None,
    tls_server_name: Optional[str] = None,
    tls_insecure: bool = False,
    sentinel_username: Optional[str] = None,
    sentinel_password: Optional[str] = None,
    sync_replicas: int = 0,
    sync_replicas_timeout: Optional[float] = None,
) -> _native.Client:
    """Checks the URL list and builds the native client (no connection is made yet)."""
    if isinstance(urls, (str, bytes)) or not all(isinstance(u, str) for u in urls):
        raise TypeError("urls must be a sequence of str, e.g. ['redis://h1:6379', ...]")
    if isinstance(sync_replicas, bool) or not isinstance(sync_replicas, int):
        raise TypeError(f"sync_replicas must be an int, not {type(sync_replicas).__name__}")
    if sync_replicas < 0:
        raise ValueError(f"sync_replicas must be a non-negative int, not {sync_replicas!r}")
    for what, flag in (("tls_insecure", tls_insecure), ("cluster", cluster)):
        if not isinstance(flag, bool):
            raise TypeError(f"{what} must be a bool, not {type(flag).__name__}")
    return _native.Client(
        list(urls),
        watchdog_timeout=watchdog_timeout,
        network_timeout=network_timeout,
        node_timeout=node_timeout,
        poll_interval=poll_interval,
        cluster=cluster,
        tls_ca_file=None if tls_ca_file is None else os.fspath(tls_ca_file),
        tls_ca_pem=tls_ca_pem,
        tls_cert_file=None if tls_cert_file is None else os.fspath(tls_cert_file),
        tls_key_file=None if tls_key_file is None else os.fspath(tls_key_file),
        tls_cert_pem=tls_cert_pem,
        tls_key_pem=tls_key_pem,
        tls_server_name=tls_server_name,
        tls_insecure=tls_insecure,
        sentinel_username=sentinel_username,
        sentinel_password=sentinel_password,
        sync_replicas=sync_replicas,
        sync_replicas_timeout=sync_replicas_timeout,
    )


def native_lock(
    client: _native.Client,
    name: str,
    *,
    kind: str,
    lease: Optional[float],
    wait: Optional[float],
    fenced: bool,
    fence_ttl: Optional[float] = None,
) -> _native.Lock:
    """The native handle of a lock of ``kind`` (``"lease"``, ``"reentrant"``, ``"fair"``,
    ``"read"``, ``"write"``), its arguments checked (nothing is sent to Redis)."""
    if not isinstance(name, str):
        raise TypeError(f"lock name must be str, not {type(name).__name__}")
    return client.lock(
        name, kind=kind, lease=lease, wait=wait, fenced=fenced, fence_ttl=fence_ttl
    )


def already_held(name: str, who: str) -> LockError:
    return LockError(
        f"lock {quoted(name)} is already held by this {who}; it is not reentrant (use rlock)",
        code=INVALID_ARGUMENT,
    )


def not_held(name: str, who: str) -> NotOwnedError:
    return NotOwnedError(f"lock {quoted(name)} is not held by this {who}", reason="never_held")


class Held(Protocol):
    """What the hold lists need of a hold (``_native.Hold``, ``_native.MultiHold``)."""

    @property
    def held(self) -> bool: ...


_H = TypeVar("_H", bound=Held)


class ThreadHolds(Generic[_H]):
    """Each thread's holds of one lock (or multi-lock), oldest first: per lock object for ``lock``, shared by
    the client's reentrant handles of one kind and name (``rlock``, ``fair_lock``, each side of
    ``rw_lock``)."""

    __slots__ = ("_local", "__weakref__")

    def __init__(self) -> None:
        self._local = threading.local()

    def mine(self) -> List[_H]:
        """The calling thread's holds (empty in a forked child)."""
        try:
            generation, found = self._local.state
            if generation == fork_generation:
                return found  # type: ignore[no-any-return]
        except AttributeError:
            pass
        holds: List[_H] = []
        self._local.state = (fork_generation, holds)
        return holds


def live_holds(holds: List[_H]) -> List[_H]:
    """Drops the holds that are no longer held (lost: the watchdog saw the key gone, or a fixed
    lease ran out; or settled) from ``holds`` in place, and returns it. A lost hold never
    blocks a new acquire of a non-reentrant lock (its release would only say it was lost)."""
    if holds and not all(h.held for h in holds):
        holds[:] = [h for h in holds if h.held]
    return holds


def forget(holds: List[_H], hold: _H) -> None:
    """Removes ``hold`` from ``holds`` once it is settled (released, or found not ours); a
    hold whose release had an unknown outcome stays, to be released again."""
    if not hold.held:
        try:
            holds.remove(hold)  # by identity: holds have no __eq__
        except ValueError:
            pass


def disown(holds: List[_H], hold: _H) -> None:
    """Removes ``hold`` from ``holds`` whatever its state: the asyncio task awaiting its
    release was cancelled. The release goes on without the task (its outcome is dropped; one
    left unknown is retried in the background once the hold object is gone), so the hold is
    no longer the task's: a new acquire goes to Redis, and waits there while the key is still
    set, instead of finding the lock "already held" until the release's reply is read."""
    try:
        holds.remove(hold)
    except ValueError:
        pass


def permit_id_arg(permit_id: object) -> str:
    """``permit_id`` checked to be a str (its 32 hex digits are checked by the core).

    :raises TypeError: anything else, with what to pass instead (a user trial of stop 46:
        ``release(5)``, as for a counting semaphore, raised pyo3's raw conversion message)
    """
    if not isinstance(permit_id, str):
        raise TypeError(
            f"permit_id must be a str (a permit's id, 32 hex digits), not {type(permit_id).__name__};"
            " a Permit is released with permit.release()"
        )
    return permit_id


def quoted(name: str) -> str:
    """``name`` in double quotes, as the core's messages (and so Node's and C's) quote names."""
    return json.dumps(name, ensure_ascii=False)


def add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)``, also on Python < 3.11 (where tracebacks do not show it)."""
    adder = getattr(exc, "add_note", None)
    if adder is not None:
        adder(note)
        return
    notes: List[str] = list(getattr(exc, "__notes__", ()))
    notes.append(note)
    try:
        setattr(exc, "__notes__", notes)
    except AttributeError:  # pragma: no cover - exceptions with __slots__
        pass


def exit_error(
    name: str, err: LockError, block_exc: Optional[BaseException], what: str = "lock"
) -> Optional[BaseException]:
    """What leaving a ``with`` block does when releasing failed with ``err``.

    A hold that is not ours any more means the lock was lost inside the block: that is a
    ``LockLostError`` unless the block raised, in which case the block's exception wins and
    carries the loss as a note. Other failures (Redis unreachable) follow the same rule.
    Returns the exception to raise, or None to let the block's exception propagate.
    """
    if isinstance(err, NotOwnedError) and not isinstance(err, LockLostError):
        lost: LockError = LockLostError(
            f"{what} {quoted(name)} was lost while the block held it: {err}", reason=err.reason
        )
        lost.__cause__ = err
    else:
        lost = err
    if block_exc is None:
        return lost
    add_note(block_exc, f"redlatch: {type(lost).__name__}: {lost}")
    return None


_C = TypeVar("_C", bound="ClientBase")
_NativeClient = _native.Client
_NativeLock = _native.Lock
_S = TypeVar("_S")


class ClientBase:
    """What the sync and asyncio clients share: construction (lazy; no connection is made
    here) and the client's identity. Their locks differ; see ``_sync.py`` and ``asyncio.py``."""

    __slots__ = ("_native", "_rlock_holds", "_rlock_guard")

    _native: _native.Client
    # (kind, lock name) -> the hold store that every reentrant handle of that kind and name
    # (``rlock(name)``, ``fair_lock(name)``, ``rw_lock(name).read()``...) of this client
    # shares, so that a thread (task) re-enters and releases through any of them. Weak: a store
    # lives as long as some handle of that kind and name does.
    _rlock_holds: "weakref.WeakValueDictionary[Tuple[str, str], object]"
    _rlock_guard: threading.Lock

    def _adopt(self, native: "_NativeClient") -> None:
        self._native = native
        self._rlock_holds = weakref.WeakValueDictionary()
        self._rlock_guard = threading.Lock()

    def _shared_holds(self, native: "_NativeLock", new_store: Callable[[], _S]) -> _S:
        """The hold store of this client's reentrant handles of ``native``'s kind and name
        (made on first use)."""
        key = (native.kind, native.name)
        with self._rlock_guard:
            store = self._rlock_holds.get(key)
            if store is None:
                store = new_store()
                self._rlock_holds[key] = store
            return store  # type: ignore[return-value]

    def __init__(
        self,
        url: str,
        *,
        watchdog_timeout: float = 30.0,
        network_timeout: float = 3.0,
        poll_interval: float = 0.05,
        tls_ca_file: Optional[PathLike] = None,
        tls_ca_pem: Optional[Pem] = None,
        tls_cert_file: Optional[PathLike] = None,
        tls_key_file: Optional[PathLike] = None,
        tls_cert_pem: Optional[Pem] = None,
        tls_key_pem: Optional[Pem] = None,
        tls_server_name: Optional[str] = None,
        tls_insecure: bool = False,
        sentinel_username: Optional[str] = None,
        sentinel_password: Optional[str] = None,
        sync_replicas: int = 0,
        sync_replicas_timeout: Optional[float] = None,
    ) -> None:
        if not isinstance(url, str):
            raise TypeError(f"url must be str, not {type(url).__name__}")
        self._adopt(native_client(
            [url],
            watchdog_timeout=watchdog_timeout,
            network_timeout=network_timeout,
            node_timeout=None,
            poll_interval=poll_interval,
            tls_ca_file=tls_ca_file,
            tls_ca_pem=tls_ca_pem,
            tls_cert_file=tls_cert_file,
            tls_key_file=tls_key_file,
            tls_cert_pem=tls_cert_pem,
            tls_key_pem=tls_key_pem,
            tls_server_name=tls_server_name,
            tls_insecure=tls_insecure,
            sentinel_username=sentinel_username,
            sentinel_password=sentinel_password,
            sync_replicas=sync_replicas,
            sync_replicas_timeout=sync_replicas_timeout,
        ))

    @classmethod
    def quorum(
        cls: Type[_C],
        urls: Sequence[str],
        *,
        watchdog_timeout: float = 30.0,
        network_timeout: float = 3.0,
        node_timeout: Optional[float] = None,
        poll_interval: float = 0.05,
        tls_ca_file: Optional[PathLike] = None,
        tls_ca_pem: Optional[Pem] = None,
        tls_cert_file: Optional[PathLike] = None,
        tls_key_file: Optional[PathLike] = None,
        tls_cert_pem: Optional[Pem] = None,
        tls_key_pem: Optional[Pem] = None,
        tls_server_name: Optional[str] = None,
        tls_insecure: bool = False,
        sync_replicas: int = 0,
        sync_replicas_timeout: Optional[float] = None,
    ) -> _C:
        """A Redlock client over independent nodes (no replication between them).

        :param node_timeout: per-node timeout in seconds (default ``min(lease / 20, 0.25)``)
        :param tls_*: as for ``Client(url)``, applied to every ``rediss://`` node
        :raises ValueError: an empty list, a malformed URL or a bad duration
        """
        self = cls.__new__(cls)
        self._adopt(native_client(
            urls,
            watchdog_timeout=watchdog_timeout,
            network_timeout=network_timeout,
            node_timeout=node_timeout,
            poll_interval=poll_interval,
            tls_ca_file=tls_ca_file,
            tls_ca_pem=tls_ca_pem,
            tls_cert_file=tls_cert_file,
            tls_key_file=tls_key_file,
            tls_cert_pem=tls_cert_pem,
            tls_key_pem=tls_key_pem,
            tls_server_name=tls_server_name,
            tls_insecure=tls_insecure,
            sync_replicas=sync_replicas,
            sync_replicas_timeout=sync_replicas_timeout,
        ))
        return self

    @classmethod
    def cluster(
        cls: Type[_C],
        urls: Sequence[str],
        *,
        watchdog_timeout: float = 30.0,
        network_timeout: float = 3.0,
        poll_interval: float = 0.05,
        tls_ca_file: Optional[PathLike] = None,
        tls_ca_pem: Optional[Pem] = None,
        tls_cert_file: Optional[PathLike] = None,
        tls_key_file: Optional[PathLike] = None,
        tls_cert_pem: Optional[Pem] = None,
        tls_key_pem: Optional[Pem] = None,
        tls_insecure: bool = False,
        sync_replicas: int = 0,
        sync_replicas_timeout: Optional[float] = None,
    ) -> _C:
        """A Redis Cluster client from seed node URLs (``redis://`` or ``rediss://``; any of
        the cluster's nodes). ``Client("redis+cluster://h1:7000,h2:7001")`` is the same.
        Slot moves and failovers are followed (``MOVED``/``ASK``); waiters use sharded
        pub/sub where the cluster has it.

        :raises ValueError: an empty list, a malformed URL or a bad setting
        """
        self = cls.__new__(cls)
        self._adopt(native_client(
            urls,
            watchdog_timeout=watchdog_timeout,
            network_timeout=network_timeout,
            node_timeout=None,
            poll_interval=poll_interval,
            cluster=True,
            tls_ca_file=tls_ca_file,
            tls_ca_pem=tls_ca_pem,
            tls_cert_file=tls_cert_file,
            tls_key_file=tls_key_file,
            tls_cert_pem=tls_cert_pem,
            tls_key_pem=tls_key_pem,
            tls_insecure=tls_insecure,
            sync_replicas=sync_replicas,
            sync_replicas_timeout=sync_replicas_timeout,
        ))
        return self

    @property
    def node_count(self) -> int:
        """Number of Redis nodes (1 = single node, a Cluster or Sentinel; more = quorum)."""
        return self._native.node_count

    @property
    def node_labels(self) -> List[str]:
        """Each node as errors name it: ``"host:port"``, ``"cluster (seed host:port)"``,
        ``"<master> via Sentinel"``; one per quorum node. Never a credential."""
        return self._native.node_labels

    def _describe(self) -> str:
        """The deployment, for ``repr``: its node, or the quorum's nodes."""
        labels = self._native.node_labels
        if len(labels) == 1:
            return labels[0]
        return f"quorum of {len(labels)}: {', '.join(labels)}"

    @property
    def id(self) -> str:
        """This client's id in this process (a UUID; a forked child gets a new one)."""
        return self._native.id
