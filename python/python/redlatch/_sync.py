"""The synchronous API: ``redlatch.Client`` and its locks.

Ownership follows ``threading.RLock`` rather than ``threading.Lock``: each acquisition
belongs to the thread that made it, and only that thread can release or extend it. A lock
object may be shared by threads; each thread's holds are kept in a ``threading.local``, so
the holds of a thread that exits without releasing are dropped with it and released in the
background. Blocking calls release the GIL.
"""

from __future__ import annotations

from types import TracebackType
from typing import List, Optional, Sequence, Type, Union

from . import _native
from ._common import (
    ClientBase,
    ThreadHolds,
    already_held,
    exit_error,
    forget,
    live_holds,
    native_lock,
    not_held,
)
from ._errors import LockError
from ._family import RwLockBase, members as _members, name as _name
from ._sync_family import CountDownLatch, MultiLock, Permit, PermitSemaphore, Semaphore

__all__ = [
    "Client",
    "CountDownLatch",
    "Lock",
    "MultiLock",
    "Permit",
    "PermitSemaphore",
    "RwLock",
    "Semaphore",
]

_WHO = "thread"


class Client(ClientBase):
    """Connection(s) to Redis and the locks made from them.

    ``Client(url)`` uses the deployment ``url`` names; ``Client.quorum([url, ...])`` runs
    Redlock over N independent nodes; ``Client.cluster([url, ...])`` uses a Redis Cluster.
    Connections are made lazily, on first use, and remade in a forked child. Durations are
    float seconds. docs/deployments.md says what each deployment guarantees.

    :param url: one node: ``redis://[user:password@]host:port[/db]``, ``rediss://...`` (TLS)
        or ``unix://...``; a Cluster: ``redis+cluster://host:port,host:port``; Sentinel:
        ``redis+sentinel://[[user]:password@]host:26379[,host:26379]/master[/db]`` (the
        credentials are the data nodes')
    :param tls_ca_file: PEM file of the CA(s) to trust instead of the system roots
        (``tls_ca_pem``: the same as str or bytes)
    :param tls_cert_file: mutual TLS: client certificate chain (PEM file), with
        ``tls_key_file``; or ``tls_cert_pem`` / ``tls_key_pem`` as text
    :param tls_server_name: verify the server certificate against this name instead of
        the URL's host (single nodes only)
    :param tls_insecure: accept any server certificate (encrypted, not authenticated); never
        the default. TLS failures raise ``RedisConnectionError`` naming the cause
    :param sentinel_username: the sentinels' own ACL user (with ``sentinel_password``)
    :param sync_replicas: replicas that must confirm each acquire and renewal (``WAIT``,
        Redisson's ``checkLockSyncedSlaves``): too few make an acquire fail
        (``NotAcquiredError``, rolled back) and a renewal not count; 0 (default) = off
    :param sync_replicas_timeout: how long each ``WAIT`` may take (default 1 s; below
        ``network_timeout``)
    :param watchdog_timeout: lease of locks acquired without one, renewed every third of it
        while held (default 30 s, at least 0.003 s)
    :param network_timeout: timeout of one command and of each connection attempt; also how
        long errors are retried by a wait without a ``timeout`` (one with a timeout retries
        them until it ends; default 3 s)
    :param poll_interval: longest pause between attempts while waiting for a busy lease or
        fair lock, or without pub/sub (release messages usually wake waiters sooner; default
        0.05 s); waiters of reentrant and read/write locks, semaphores and latches that hear
        the release messages poll at most every ``max(poll_interval, 1.0)`` seconds
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
            self._native, name, kind="lease", lease=lease, wait=wait, fenced=fenced, fence_ttl=fence_ttl
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
        return self._reentrant("reentrant", name, lease=lease, wait=wait, fenced=fenced, fence_ttl=fence_ttl)

    def _reentrant(
        self,
        kind: str,
        name: str,
        *,
        lease: Optional[float] = None,
        wait: Optional[float] = None,
        fenced: bool = False,
        fence_ttl: Optional[float] = None,
    ) -> "Lock":
        native = native_lock(
            self._native, name, kind=kind, lease=lease, wait=wait, fenced=fenced, fence_ttl=fence_ttl
        )
        return Lock(native, self._shared_holds(native, _ThreadHolds))

    def fair_lock(
        self,
        name: str,
        *,
        lease: Optional[float] = None,
        wait: Optional[float] = None,
        fenced: bool = False,
        fence_ttl: Optional[float] = None,
    ) -> "Lock":
        """A fair lock on key ``name`` (Redisson RFairLock layout): reentrant per thread like
        :meth:`rlock`, and granted in strict FIFO order to the threads and processes waiting
        for it (Redisson's queue list ``redisson_lock_queue:{name}``, so Java waiters queue in
        the same line). A release wakes the queue head only. A waiter that gives up (its wait
        ran out, Ctrl-C) leaves the queue at once; one that dies stays queued until its slot
        runs out (its ``wait``, or 5 minutes when it waits forever, as in Redisson) and can
        stall those behind it that long. ``acquire(blocking=False)`` never queues (Redisson's
        ``tryLock()``). Options and errors as for :meth:`lock`.

        :raises ValueError: as :meth:`lock`; at acquire, a quorum client (fair and read/write
            locks need a single-node, Cluster or Sentinel client)
        """
        return self._reentrant("fair", name, lease=lease, wait=wait, fenced=fenced, fence_ttl=fence_ttl)

    def rw_lock(
        self,
        name: str,
        *,
        lease: Optional[float] = None,
        wait: Optional[float] = None,
        fenced: bool = False,
        fence_ttl: Optional[float] = None,
    ) -> "RwLock":
        """A read/write lock on key ``name`` (Redisson RReadWriteLock layout): ``.read()``
        and ``.write()`` are lock objects (reentrant per thread, as :meth:`rlock`). Many
        threads and processes may hold the read lock at once, or one the write lock. The
        options here are the defaults of ``.read(**opts)`` / ``.write(**opts)``.

        A thread holding the write lock may take the read lock too; one holding the read lock
        that acquires the write lock gets ``WouldDeadlockError`` at once. Each read hold has
        its own timeout key, so a dead reader's hold expires while other readers keep theirs.

        Holds live as long as this object, or a lock object of that side, does: keep it while
        holding (``rw.read().acquire()`` holds until ``rw`` is garbage-collected).

        :raises ValueError: as :meth:`lock`; at acquire, a quorum client
        """
        return RwLock(self._reentrant, name, {"lease": lease, "wait": wait, "fenced": fenced, "fence_ttl": fence_ttl})

    def semaphore(self, name: str, *, permits: Optional[int] = None, wait: Optional[float] = None) -> Semaphore:
        """A counting semaphore on key ``name`` (Redisson RSemaphore), like a
        ``threading.Semaphore`` shared by every thread and process that uses the name.

        :param permits: set the number of permits if the semaphore does not exist yet
            (:meth:`Semaphore.try_set_permits`), by this object's first acquire or ``available()``;
            an acquire retries it within its wait
        :param wait: how long ``acquire()`` and ``with`` wait, in seconds; 0 = one try;
            ``None`` = until acquired
        :raises TypeError: ``name`` is not a str
        :raises ValueError: empty or too long name, ``permits`` not in 1..2^31-1, bad ``wait``
        """
        return Semaphore(self._native.semaphore(_name(name), permits=permits, wait=wait))

    def permit_semaphore(
        self, name: str, *, permits: Optional[int] = None, wait: Optional[float] = None
    ) -> PermitSemaphore:
        """A semaphore whose permits expire (Redisson RPermitExpirableSemaphore): ``acquire``
        returns a :class:`Permit` with an id and a lease. Options and errors as for
        :meth:`semaphore`."""
        return PermitSemaphore(self._native.permit_semaphore(_name(name), permits=permits, wait=wait))

    def count_down_latch(self, name: str) -> CountDownLatch:
        """A count-down latch on key ``name`` (Redisson RCountDownLatch).

        :raises TypeError: ``name`` is not a str
        :raises ValueError: empty or too long name
        """
        return CountDownLatch(self._native.count_down_latch(_name(name)))

    def multi_lock(
        self,
        locks: Sequence[Union["Lock", str]],
        *,
        lease: Optional[float] = None,
        wait: Optional[float] = None,
    ) -> MultiLock:
        """Several locks taken together, all or none (Redisson RedissonMultiLock), in sorted
        order so that overlapping sets never deadlock.

        :param locks: lock objects of this client (any kind) and names (lease locks, as
            :meth:`lock`), mixed freely
        :param lease: the lease of every member, in seconds (None: each member's own, or
            watchdog mode)
        :param wait: how long ``acquire()`` and ``with`` wait for the whole set, in seconds
        :raises ValueError: an empty set, duplicate names, a lock of another client, bad
            durations
        :raises TypeError: a member that is neither a lock of this API nor a str
        """
        native = self._native.multi_lock(_members(locks, Lock, "redlatch.Lock"), lease=lease, wait=wait)
        return MultiLock(native, [m for m in locks if isinstance(m, Lock) and not m.reentrant])

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
        return f"<redlatch.Client {self._describe()}>"


#: Each thread's holds of one lock (see ``ThreadHolds``).
_ThreadHolds = ThreadHolds[_native.Hold]


class Lock:
    """A named Redis lock, used like ``threading.Lock``: ``with lock: ...`` or
    ``acquire()`` / ``release()``. Made by :meth:`Client.lock`, :meth:`Client.rlock`,
    :meth:`Client.fair_lock` and :meth:`Client.rw_lock` (``.read()`` / ``.write()``).

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
        """True for the reentrant kinds: every kind but ``lock``."""
        return self._native.reentrant

    @property
    def kind(self) -> str:
        """The kind, the same word in every binding: ``"lease"`` (``lock``), ``"reentrant"``
        (``rlock``), ``"fair"``, ``"read"`` or ``"write"``."""
        return self._native.kind

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Acquires the lock for the calling thread, like ``threading.Lock.acquire``.

        :param blocking: False = one try (then ``timeout`` must be None or -1)
        :param timeout: seconds to wait; ``None`` = the lock's ``wait``; -1 = forever
        :returns: True when acquired, False when the wait ran out
        :raises LockError: a non-reentrant lock already held by this thread
        :raises RedisConnectionError: Redis kept failing until the wait ran out (for one network
            timeout when the wait is forever); no call takes longer than its wait plus one
            network timeout
        :raises QuorumError: quorum mode, no majority reachable
        :raises ValueError: a bad timeout

        Blocks with the GIL released; Ctrl-C interrupts the wait and leaves nothing behind.
        """
        return self._acquire(blocking, timeout, raising=False)

    def _acquire(self, blocking: bool, timeout: Optional[float], raising: bool) -> bool:
        """``acquire``; ``raising``: a refusal raises ``NotAcquiredError`` with the core's reason
        (a ``with`` block) instead of returning False."""
        holds = live_holds(self._holds())
        if holds and not self._native.reentrant:
            self._native.check_acquire(bool(blocking), timeout)  # bad arguments first
            raise already_held(self._native.name, _WHO)
        hold = self._native.acquire(bool(blocking), timeout, raising=raising)
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
        never add). Never re-creates a lock that is gone. In watchdog mode the next renewal,
        within a third of ``lease``, sets it back to ``watchdog_timeout`` (``extend`` is meant
        for fixed leases).

        :raises NotOwnedError: not held by this thread, or found gone or taken
        :raises LockLostError: the loss had already been seen
        :raises ValueError: a bad lease
        """
        self._native.check_lease(lease)  # a bad lease first, held or not
        holds = self._holds()
        if not holds:
            raise not_held(self._native.name, _WHO)
        # One call: a reentrant owner's holds share the hash's TTL and, in the core, its validity.
        holds[-1].extend(lease)

    def locked(self) -> bool:
        """True when anyone holds the lock (asks Redis). The read side of a read/write lock
        answers whether it is held in read mode, the write side whether in write mode (as
        Redisson's ``isLocked`` of its read and write locks); ``ttl`` likewise."""
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
        """Remaining lease of whoever holds the lock, in seconds; None when free, or held without
        a TTL (a redis-py ``Lock(timeout=None)``; :meth:`locked` tells them apart)."""
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
        self._acquire(True, None, raising=True)
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
        # background (release_final), so the thread is free to acquire again.
        hold = holds.pop()
        try:
            hold.release_final()
        except LockError as err:
            raised = exit_error(self._native.name, err, exc)
            if raised is not None:
                raise raised
        return None

    def __repr__(self) -> str:
        kind = self._native.kind
        return f"<redlatch.Lock {kind} {self._native.name!r}>"


class RwLock(RwLockBase["Lock"]):
    """A read/write lock made by :meth:`Client.rw_lock`: ``.read()`` and ``.write()`` are
    reentrant :class:`Lock` objects, owned per thread."""

    __slots__ = ()
