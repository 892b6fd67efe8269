"""Helpers shared by the sync and asyncio layers: client construction, messages, and what
leaving a ``with`` block does when the release fails."""

from __future__ import annotations

import os
import threading
import weakref
from typing import Callable, List, Optional, Sequence, Type, TypeVar

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


def native_client(
    urls: Sequence[str],
    *,
    watchdog_timeout: float,
    network_timeout: float,
    node_timeout: Optional[float],
    poll_interval: float,
) -> _native.Client:
    """Checks the URL list and builds the native client (no connection is made yet)."""
    if isinstance(urls, (str, bytes)) or not all(isinstance(u, str) for u in urls):
        raise TypeError("urls must be a sequence of str, e.g. ['redis://h1:6379', ...]")
    return _native.Client(
        list(urls),
        watchdog_timeout=watchdog_timeout,
        network_timeout=network_timeout,
        node_timeout=node_timeout,
        poll_interval=poll_interval,
    )


def native_lock(
    client: _native.Client,
    name: str,
    *,
    reentrant: bool,
    lease: Optional[float],
    wait: Optional[float],
    fenced: bool,
    fence_ttl: Optional[float] = None,
) -> _native.Lock:
    if not isinstance(name, str):
        raise TypeError(f"lock name must be str, not {type(name).__name__}")
    return client.lock(
        name, reentrant=reentrant, lease=lease, wait=wait, fenced=bool(fenced), fence_ttl=fence_ttl
    )


def already_held(name: str, who: str) -> LockError:
    return LockError(
        f"lock {name!r} is already held by this {who}; it is not reentrant (use rlock)",
        code=INVALID_ARGUMENT,
    )


def not_held(name: str, who: str) -> NotOwnedError:
    return NotOwnedError(f"lock {name!r} is not held by this {who}", reason="never_held")


def live_holds(holds: List[_native.Hold]) -> List[_native.Hold]:
    """Drops the holds that are no longer held (lost: the watchdog saw the key gone, or a fixed
    lease ran out; or settled) from ``holds`` in place, and returns it. A lost hold never
    blocks a new acquire of a non-reentrant lock (its release would only say it was lost)."""
    holds[:] = [h for h in holds if h.held]
    return holds


def forget(holds: List[_native.Hold], hold: _native.Hold) -> None:
    """Removes ``hold`` from ``holds`` once it is settled (released, or found not ours); a
    hold whose release had an unknown outcome stays, to be released again."""
    if not hold.held and any(h is hold for h in holds):
        holds[:] = [h for h in holds if h is not hold]


def not_acquired_message(name: str, wait: Optional[float]) -> str:
    if wait is None:
        return f"lock {name!r} was not acquired"
    return f"lock {name!r} was not acquired within {wait:g} s"


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


def exit_error(name: str, err: LockError, block_exc: Optional[BaseException]) -> Optional[BaseException]:
    """What leaving a ``with`` block does when releasing failed with ``err``.

    A hold that is not ours any more means the lock was lost inside the block: that is a
    ``LockLostError`` unless the block raised, in which case the block's exception wins and
    carries the loss as a note. Other failures (Redis unreachable) follow the same rule.
    Returns the exception to raise, or None to let the block's exception propagate.
    """
    if isinstance(err, NotOwnedError) and not isinstance(err, LockLostError):
        lost: LockError = LockLostError(
            f"lock {name!r} was lost while the block held it: {err}", reason=err.reason
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
_S = TypeVar("_S")


class ClientBase:
    """What the sync and asyncio clients share: construction (lazy; no connection is made
    here) and the client's identity. Their locks differ; see ``_sync.py`` and ``asyncio.py``."""

    __slots__ = ("_native", "_rlock_holds", "_rlock_guard")

    _native: _native.Client
    # Lock name -> the hold store that every ``rlock(name)`` handle of this client shares, so
    # that a thread (task) re-enters and releases through any of them. Weak: a store lives as
    # long as some handle of that name does.
    _rlock_holds: "weakref.WeakValueDictionary[str, object]"
    _rlock_guard: threading.Lock

    def _adopt(self, native: "_NativeClient") -> None:
        self._native = native
        self._rlock_holds = weakref.WeakValueDictionary()
        self._rlock_guard = threading.Lock()

    def _shared_holds(self, name: str, new_store: Callable[[], _S]) -> _S:
        """The hold store of the ``rlock(name)`` handles of this client (made on first use)."""
        with self._rlock_guard:
            store = self._rlock_holds.get(name)
            if store is None:
                store = new_store()
                self._rlock_holds[name] = store
            return store  # type: ignore[return-value]

    def __init__(
        self,
        url: str,
        *,
        watchdog_timeout: float = 30.0,
        network_timeout: float = 3.0,
        poll_interval: float = 0.05,
    ) -> None:
        if not isinstance(url, str):
            raise TypeError(f"url must be str, not {type(url).__name__}")
        self._adopt(native_client(
            [url],
            watchdog_timeout=watchdog_timeout,
            network_timeout=network_timeout,
            node_timeout=None,
            poll_interval=poll_interval,
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
    ) -> _C:
        """A Redlock client over independent nodes (no replication between them).

        :param node_timeout: per-node timeout in seconds (default ``min(lease / 20, 0.25)``)
        :raises ValueError: an empty list, a malformed URL or a bad duration
        """
        self = cls.__new__(cls)
        self._adopt(native_client(
            urls,
            watchdog_timeout=watchdog_timeout,
            network_timeout=network_timeout,
            node_timeout=node_timeout,
            poll_interval=poll_interval,
        ))
        return self

    @property
    def node_count(self) -> int:
        """Number of Redis nodes (1 = single node, more = quorum)."""
        return self._native.node_count

    @property
    def id(self) -> str:
        """This client's id in this process (a UUID; a forked child gets a new one)."""
        return self._native.id
