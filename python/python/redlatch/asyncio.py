"""The asyncio API: ``redlatch.asyncio.Client`` and its locks (same names, awaitable).

Each acquisition belongs to the asyncio task that made it (``asyncio.current_task()``):
two tasks never share a hold, a token or a reentrant hold count, even on one thread, and
only the owning task can release or extend. Reentrant locks re-enter within one task.

Cancelling a task while it awaits ``acquire`` drops the attempt and leaves nothing in Redis
(no key, no subscription); a hold whose acquire finished just as the task was cancelled is
released in the background. ``release`` runs to completion even if the awaiting task is
cancelled, and the hold stops being the task's at once (a new ``acquire`` waits in Redis
until the key is gone). On Python < 3.12, ``asyncio.wait_for`` runs its argument in a new
task: use ``acquire(timeout=...)`` (or ``asyncio.timeout``) instead, so the hold belongs to
your task.
"""

from __future__ import annotations

import asyncio as _asyncio
import weakref
from types import TracebackType
from typing import List, Optional, Sequence, Type, Union

from . import _native
from ._common import (
    ClientBase,
    already_held,
    disown,
    exit_error,
    forget,
    live_holds,
    native_lock,
    not_held,
)
from ._errors import LockError
from ._tasks import _current, _task, _task_owner
from ._async_family import CountDownLatch, MultiLock, Permit, PermitSemaphore, Semaphore
from ._family import RwLockBase, members as _members, name as _name

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

_WHO = "task"

def _drop_granted(granted: "_asyncio.Future[Optional[_native.Hold]]") -> None:
    """The awaiting task was cancelled: if the acquire had succeeded all the same, drop the
    hold (moved out of the future, so it goes now; it is released in the background)."""
    if granted.done() and not granted.cancelled() and granted.exception() is None:
        hold = granted.result()
        if hold is not None:
            try:
                hold.take()
            except LockError:
                pass  # already gone


class Client(ClientBase):
    """Connection(s) to Redis for asyncio code; see :class:`redlatch.Client` for the
    parameters (identical). Creating one does not connect and needs no running loop."""

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
        """A lease lock; see :meth:`redlatch.Client.lock` (same options and errors)."""
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
        """A reentrant lock, re-entered by the task that holds it (through any ``rlock(name)``
        of this client); see :meth:`redlatch.Client.rlock`."""
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
        return Lock(native, self._shared_holds(native, _TaskHolds))

    def fair_lock(
        self,
        name: str,
        *,
        lease: Optional[float] = None,
        wait: Optional[float] = None,
        fenced: bool = False,
        fence_ttl: Optional[float] = None,
    ) -> "Lock":
        """A fair lock (Redisson RFairLock), reentrant per task, granted in strict FIFO order;
        see :meth:`redlatch.Client.fair_lock` (same options and errors). Cancelling a task
        that waits for it takes it out of the queue."""
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
        """A read/write lock (Redisson RReadWriteLock) whose ``.read()`` / ``.write()`` locks
        are reentrant per task; see :meth:`redlatch.Client.rw_lock` (same options, errors and
        ``WouldDeadlockError`` for a read-to-write upgrade)."""
        return RwLock(self._reentrant, name, {"lease": lease, "wait": wait, "fenced": fenced, "fence_ttl": fence_ttl})

    def semaphore(self, name: str, *, permits: Optional[int] = None, wait: Optional[float] = None) -> Semaphore:
        """An asyncio counting semaphore (Redisson RSemaphore); see
        :meth:`redlatch.Client.semaphore` (same options and errors)."""
        return Semaphore(self._native.semaphore(_name(name), permits=permits, wait=wait))

    def permit_semaphore(
        self, name: str, *, permits: Optional[int] = None, wait: Optional[float] = None
    ) -> PermitSemaphore:
        """An asyncio semaphore whose permits expire (Redisson RPermitExpirableSemaphore); see
        :meth:`redlatch.Client.permit_semaphore`."""
        return PermitSemaphore(self._native.permit_semaphore(_name(name), permits=permits, wait=wait))

    def count_down_latch(self, name: str) -> CountDownLatch:
        """An asyncio count-down latch (Redisson RCountDownLatch); see
        :meth:`redlatch.Client.count_down_latch`."""
        return CountDownLatch(self._native.count_down_latch(_name(name)))

    def multi_lock(
        self,
        locks: Sequence[Union["Lock", str]],
        *,
        lease: Optional[float] = None,
        wait: Optional[float] = None,
    ) -> MultiLock:
        """Several locks taken together by one task, all or none, in sorted order; see
        :meth:`redlatch.Client.multi_lock` (members: asyncio lock objects of this client, or
        names)."""
        native = self._native.multi_lock(_members(locks, Lock, "redlatch.asyncio.Lock"), lease=lease, wait=wait)
        return MultiLock(native, [m for m in locks if isinstance(m, Lock) and not m.reentrant])

    async def force_unlock(self, name: str) -> bool:
        """Admin: deletes lock ``name`` whatever its owner. True if a lock was deleted.

        :raises RedisConnectionError: Redis could not be reached
        :raises QuorumError: quorum mode, fewer than a majority of nodes answered
        """
        if not isinstance(name, str):
            raise TypeError(f"lock name must be str, not {type(name).__name__}")
        result: bool = await self._native.force_unlock_async(name)
        return result

    def __repr__(self) -> str:
        return f"<redlatch.asyncio.Client {self._describe()}>"


class _TaskHolds:
    """Each task's holds of one lock, oldest first: per lock object for ``lock``, shared by
    the client's reentrant handles of one kind and name (``rlock``, ``fair_lock``, each side of
    ``rw_lock``). Dropped with the task."""

    __slots__ = ("by_task", "__weakref__")

    def __init__(self) -> None:
        self.by_task: "weakref.WeakKeyDictionary[_asyncio.Task[object], List[_native.Hold]]" = (
            weakref.WeakKeyDictionary()
        )


class Lock:
    """A named Redis lock for asyncio: ``async with lock: ...`` or ``await lock.acquire()``
    / ``await lock.release()``. Holds belong to the acquiring task."""

    __slots__ = ("_native", "_store", "_holds", "__weakref__")

    def __init__(self, native: _native.Lock, holds: Optional[_TaskHolds] = None) -> None:
        self._native = native
        self._store = holds if holds is not None else _TaskHolds()
        self._holds = self._store.by_task

    def _mine(self) -> List[_native.Hold]:
        task = _current()
        if task is None:
            return []
        return self._holds.get(task) or []

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

    async def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Acquires the lock for the current task (``threading.Lock.acquire`` semantics:
        ``timeout`` None = the lock's wait, -1 = forever, else seconds).

        :returns: True when acquired, False when the wait ran out
        :raises LockError: a non-reentrant lock already held by this task
        :raises RedisConnectionError: Redis kept failing until the wait ran out (for one network
            timeout when the wait is forever); no call takes longer than its wait plus one
            network timeout
        :raises QuorumError: quorum mode, no majority reachable
        :raises ValueError: a bad timeout

        Cancelling the awaiting task leaves nothing behind (no key, no subscription).
        """
        return await self._acquire(blocking, timeout, raising=False)

    async def _acquire(self, blocking: bool, timeout: Optional[float], raising: bool) -> bool:
        """``acquire``; ``raising``: a refusal raises ``NotAcquiredError`` with the core's reason
        (an ``async with`` block) instead of returning False."""
        task = _task()
        holds = self._holds.get(task)
        if holds:
            live_holds(holds)
        reentrant = self._native.reentrant
        if holds and not reentrant:
            self._native.check_acquire(bool(blocking), timeout)  # bad arguments first
            raise already_held(self._native.name, _WHO)
        owner = _task_owner(task) if reentrant else None
        granted = self._native.acquire_async(bool(blocking), timeout, owner, raising=raising)
        try:
            resolved = await granted
        except _asyncio.CancelledError:
            _native.abandon(granted)  # stop waiting; the core undoes the attempt
            _drop_granted(granted)
            raise
        if resolved is None:
            return False
        # The future keeps the object it resolved to for as long as it lives, which this task
        # does not control: move the hold out, so that only this task keeps the lock held.
        # (`holds` is still this task's list: the task did nothing else while it awaited.)
        if holds is None:
            self._holds[task] = [resolved.take()]
        else:
            holds.append(resolved.take())
        return True

    async def release(self) -> None:
        """Releases the current task's latest acquisition, at most once. Errors (and
        ``reason``) as for :meth:`redlatch.Lock.release`: after ``RedisConnectionError`` the
        hold is kept, and ``release()`` may be awaited again. If the awaiting task is
        cancelled, the release still runs to completion, and the hold is no longer the task's.
        """
        holds = self._holds.get(_task())
        if not holds:
            raise not_held(self._native.name, _WHO)
        hold = holds[-1]
        try:
            await hold.release_async()
        except _asyncio.CancelledError:
            disown(holds, hold)
            raise
        finally:
            forget(holds, hold)

    async def extend(self, lease: float) -> None:
        """Resets the remaining lease of this task's hold to ``lease`` seconds (replace,
        never add); never re-creates a lost lock. In watchdog mode the next renewal, within a
        third of ``lease``, sets it back to ``watchdog_timeout``. Errors as for :meth:`release`, plus ``ValueError`` for a
        bad lease."""
        self._native.check_lease(lease)  # a bad lease first, held or not
        holds = self._holds.get(_task())
        if not holds:
            raise not_held(self._native.name, _WHO)
        # One call: a reentrant owner's holds share the hash's TTL and, in the core, its validity.
        await holds[-1].extend_async(lease)

    async def locked(self) -> bool:
        """True when anyone holds the lock (asks Redis). The read side of a read/write lock
        answers whether it is held in read mode, the write side whether in write mode (as
        Redisson's ``isLocked`` of its read and write locks); ``ttl`` likewise."""
        result: bool = await self._native.locked_async()
        return result

    async def owned(self) -> bool:
        """True when the current task holds the lock (asks Redis)."""
        task = _task()
        if self._native.reentrant:
            count: int = await self._native.hold_count_async(_task_owner(task))
            return count > 0
        holds = self._holds.get(task)
        if not holds:
            return False
        result: bool = await holds[-1].owned_async()
        return result

    async def hold_count(self) -> int:
        """Reentrant locks: how many times the current task holds it (asks Redis). Lease
        locks: 1 when this task has acquired it, else 0 (local)."""
        task = _task()
        if self._native.reentrant:
            count: int = await self._native.hold_count_async(_task_owner(task))
            return count
        return len(self._holds.get(task) or [])

    async def ttl(self) -> Optional[float]:
        """Remaining lease of whoever holds the lock, in seconds; None when free, or held without
        a TTL (a redis-py ``Lock(timeout=None)``; :meth:`locked` tells them apart)."""
        result: Optional[float] = await self._native.ttl_async()
        return result

    @property
    def fencing_token(self) -> Optional[int]:
        """The fencing token of the current task's latest acquisition, else None."""
        holds = self._mine()
        return holds[-1].fencing_token if holds else None

    @property
    def lost(self) -> bool:
        """True when the current task's hold was lost. Read locally, never blocks."""
        return any(h.lost for h in self._mine())

    async def __aenter__(self) -> "Lock":
        await self._acquire(True, None, raising=True)
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        task = _current()
        if task is None:
            # The coroutine is being closed outside its loop (the loop was closed and the
            # task collected): its holds go with the task, released in the background.
            return None
        holds = self._holds.get(task)
        if not holds:
            return None  # released inside the block
        # Popped whatever happens: a release with an unknown outcome goes on in the
        # background (release_final), so the task is free to acquire again.
        hold = holds.pop()
        try:
            await hold.release_final_async()
        except LockError as err:
            raised = exit_error(self._native.name, err, exc)
            if raised is not None:
                raise raised
        return None

    def __repr__(self) -> str:
        kind = self._native.kind
        return f"<redlatch.asyncio.Lock {kind} {self._native.name!r}>"


class RwLock(RwLockBase["Lock"]):
    """A read/write lock made by :meth:`Client.rw_lock`: ``.read()`` and ``.write()`` are
    reentrant asyncio :class:`Lock` objects, owned per task."""

    __slots__ = ()
