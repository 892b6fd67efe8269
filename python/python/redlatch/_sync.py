"""The synchronous API: ``redlatch.Client`` and its locks.

Ownership follows ``threading.RLock`` rather than ``threading.Lock``: each acquisition
belongs to the thread that made it, and only that thread can release or extend it. A lock
object may be shared by threads; each thread's holds are kept in a ``threading.local``, so
the holds of a thread that exits without releasing are dropped with it and released in the
background. Blocking calls release the GIL.
"""

from __future__ import annotations

import threading
from types import TracebackType
from typing import List, Optional, Type

from . import _common, _native
from ._common import (
    ClientBase,
    already_held,
    exit_error,
    forget,
    live_holds,
    native_lock,
    not_acquired_message,
    not_held,
)
from ._errors import LockError, NotAcquiredError

__all__ = ["Client", "Lock"]

_WHO = "thread"


class Client(ClientBase):
    """Connection(s) to Redis and the locks made from them.

    ``Client(url)`` uses one node; ``Client.quorum([url, ...])`` runs Redlock over N
    independent nodes. Connections are made lazily, on first use, and remade in a forked
    child. Durations are float seconds.

    :param url: ``redis://[user:password@]host:port[/db]``, ``rediss://...`` or ``unix://...``
    :param watchdog_timeout: lease of locks acquired without one, renewed every third of it
        while held (default 30 s, at least 0.003 s)
    :param network_timeout: timeout of one command and of each connection attempt; also how
        long errors are retried while waiting (default 3 s)
    :param poll_interval: longest pause between attempts while waiting for a busy lock
        (pub/sub usually wakes waiters sooner; default 0.05 s)
    :raises ValueError: a malformed URL or a bad duration
    """

    __slots__ = ()

    def lock(
        self,
        name: str,
        *,
        lease: Optional[float] = None,
        wait: Optional[float] = None,
        fenced: bool = False,
        fence_ttl: Optional[float] = None,
    ) -> "Lock":
        """A lease lock on key ``name`` (redis-py / node-redlock format), not reentrant.

        :param lease: seconds Redis keeps the lock if the holder vanishes; fixed, not
            renewed. ``None``: watchdog mode (``watchdog_timeout``, renewed while held)
        :param wait: how long ``acquire()`` and ``with`` wait, in seconds; 0 = one try;
            ``None`` = until acquired
        :param fenced: give each acquisition a fencing token (single node only); the counter
            key ``redisson_lock_token:{name}`` persists (Redisson's), one per name ever fenced
        :param fence_ttl: seconds after the last fenced acquire the counter expires (None:
            never). Hazard: tokens then start again at 1, so a resource that remembers a
            higher token refuses new holders until the counter catches up, and one that forgot
            may accept a paused old holder's higher token; use days, not seconds
        :raises TypeError: ``name`` is not a str
        :raises ValueError: empty or too long name, bad durations, ``fenced`` in quorum mode
        """
        return Lock(native_lock(
            self._native, name, reentrant=False, lease=lease, wait=wait, fenced=fenced, fence_ttl=fence_ttl
        ))

    def rlock(
        self,
        name: str,
        *,
        lease: Optional[float] = None,
        wait: Optional[float] = None,
        fenced: bool = False,
        fence_ttl: Optional[float] = None,
    ) -> "Lock":
        """A reentrant lock on key ``name`` (Redisson RLock layout): the owning thread may
        acquire it again, through this or any other ``rlock(name)`` of this client, and must
        release it as many times. Options as for :meth:`lock`.

        Holds live as long as some ``rlock(name)`` object of this client does: keep one
        while holding (``client.rlock(name).acquire()`` on a temporary object is released
        again as soon as that object is garbage-collected)."""
        native = native_lock(
            self._native, name, reentrant=True, lease=lease, wait=wait, fenced=fenced, fence_ttl=fence_ttl
        )
        return Lock(native, self._shared_holds(name, _ThreadHolds))

    def force_unlock(self, name: str) -> bool:
        """Admin: deletes lock ``name`` whatever its owner, waking its waiters.

        :returns: True if a lock was deleted (on a majority of nodes)
        :raises RedisConnectionError: Redis could not be reached
        :raises QuorumError: quorum mode, fewer than a majority of nodes answered
        """
        if not isinstance(name, str):
            raise TypeError(f"lock name must be str, not {type(name).__name__}")
        return self._native.force_unlock(name)

    def __repr__(self) -> str:
        return f"<redlatch.Client nodes={self.node_count}>"


class _ThreadHolds:
    """Each thread's holds of one lock, oldest first: per lock object for ``lock``, shared by
    the client's ``rlock(name)`` handles for ``rlock``."""

    __slots__ = ("_local", "__weakref__")

    def __init__(self) -> None:
        self._local = threading.local()

    def mine(self) -> List[_native.Hold]:
        """The calling thread's holds (empty in a forked child)."""
        try:
            generation, holds = self._local.state
            if generation == _common.fork_generation:
                return holds  # type: ignore[no-any-return]
        except AttributeError:
            pass
        holds = []
        self._local.state = (_common.fork_generation, holds)
        return holds


class Lock:
    """A named Redis lock, used like ``threading.Lock``: ``with lock: ...`` or
    ``acquire()`` / ``release()``. Made by :meth:`Client.lock` and :meth:`Client.rlock`.

    Each acquisition belongs to the acquiring thread; other threads sharing this object
    contend for the lock like separate processes and can never release or extend it.
    """

    __slots__ = ("_native", "_store", "__weakref__")

    def __init__(self, native: _native.Lock, holds: Optional[_ThreadHolds] = None) -> None:
        self._native = native
        self._store = holds if holds is not None else _ThreadHolds()

    def _holds(self) -> List[_native.Hold]:
        """The calling thread's holds, oldest first (empty in a forked child)."""
        return self._store.mine()

    @property
    def name(self) -> str:
        """The lock's name (its Redis key)."""
        return self._native.name

    @property
    def reentrant(self) -> bool:
        """True for locks made by ``rlock``."""
        return self._native.reentrant

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Acquires the lock for the calling thread, like ``threading.Lock.acquire``.

        :param blocking: False = one try (then ``timeout`` must be None or -1)
        :param timeout: seconds to wait; ``None`` = the lock's ``wait``; -1 = forever
        :returns: True when acquired, False when the wait ran out
        :raises LockError: a non-reentrant lock already held by this thread
        :raises RedisConnectionError: Redis unreachable for longer than the network timeout
        :raises QuorumError: quorum mode, no majority reachable
        :raises ValueError: a bad timeout

        Blocks with the GIL released; Ctrl-C interrupts the wait and leaves nothing behind.
        """
        holds = live_holds(self._holds())
        if holds and not self._native.reentrant:
            self._native.check_acquire(bool(blocking), timeout)  # bad arguments first
            raise already_held(self._native.name, _WHO)
        hold = self._native.acquire(bool(blocking), timeout)
        if hold is None:
            return False
        holds.append(hold)
        return True

    def release(self) -> None:
        """Releases this thread's latest acquisition, at most once.

        :raises NotOwnedError: this thread does not hold it (``reason == "never_held"``), or
            it was found deleted or taken (``"deleted"``, ``"taken"``)
        :raises LockLostError: the loss was known before (watchdog or extend: its reason), or
            the lease had run out (``"expired"``)
        :raises RedisConnectionError: Redis could not confirm; the hold is kept: call
            ``release()`` again once Redis is back (it is released exactly once)
        :raises NoPermissionError: the ACL user may not release it (nothing changed; kept)
        """
        holds = self._holds()
        if not holds:
            raise not_held(self._native.name, _WHO)
        hold = holds[-1]
        try:
            hold.release()
        finally:
            forget(holds, hold)

    def extend(self, lease: float) -> None:
        """Resets the remaining lease of this thread's hold to ``lease`` seconds (replace,
        never add). Never re-creates a lock that is gone. In watchdog mode the next renewal
        sets it back to ``watchdog_timeout`` (``extend`` is meant for fixed leases).

        :raises NotOwnedError: not held by this thread, or found gone or taken
        :raises LockLostError: the loss had already been seen
        :raises ValueError: a bad lease
        """
        holds = self._holds()
        if not holds:
            raise not_held(self._native.name, _WHO)
        # One call: a reentrant owner's holds share the hash's TTL and, in the core, its validity.
        holds[-1].extend(lease)

    def locked(self) -> bool:
        """True when anyone holds the lock (asks Redis)."""
        return self._native.locked()

    def owned(self) -> bool:
        """True when the calling thread holds the lock (asks Redis)."""
        if self._native.reentrant:
            return self._native.hold_count() > 0
        holds = self._holds()
        return bool(holds) and holds[-1].owned()

    def hold_count(self) -> int:
        """Reentrant locks: how many times the calling thread holds it (asks Redis).
        Lease locks: 1 when this thread has acquired it, else 0 (local)."""
        if self._native.reentrant:
            return self._native.hold_count()
        return len(self._holds())

    def ttl(self) -> Optional[float]:
        """Remaining lease of whoever holds the lock, in seconds; None when free."""
        return self._native.ttl()

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of this thread's latest acquisition (fenced locks), else None."""
        holds = self._holds()
        return holds[-1].fencing_token if holds else None

    @property
    def lost(self) -> bool:
        """True when this thread's hold was lost (the watchdog or an extend found it gone or
        taken, or its lease ran out). Read locally, never blocks."""
        return any(h.lost for h in self._holds())

    def __enter__(self) -> "Lock":
        if not self.acquire():
            raise NotAcquiredError(not_acquired_message(self._native.name, self._native.wait))
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        holds = self._holds()
        if not holds:
            return None  # released inside the block
        # Popped whatever happens: a release with an unknown outcome goes on in the
        # background (the dropped hold), so the thread is free to acquire again.
        hold = holds.pop()
        try:
            hold.release()
        except LockError as err:
            raised = exit_error(self._native.name, err, exc)
            if raised is not None:
                raise raised
        return None

    def __repr__(self) -> str:
        kind = "rlock" if self._native.reentrant else "lock"
        return f"<redlatch.Lock {kind} {self._native.name!r}>"
