"""The asyncio API: ``redlatch.asyncio.Client`` and its locks (same names, awaitable).

Each acquisition belongs to the asyncio task that made it (``asyncio.current_task()``):
two tasks never share a hold, a token or a reentrant hold count, even on one thread, and
only the owning task can release or extend. Reentrant locks re-enter within one task.

Cancelling a task while it awaits ``acquire`` drops the attempt and leaves nothing in Redis
(no key, no subscription); a hold whose acquire finished just as the task was cancelled is
released in the background. ``release`` runs to completion even if the awaiting task is
cancelled. On Python < 3.12, ``asyncio.wait_for`` runs its argument in a new task: use
``acquire(timeout=...)`` (or ``asyncio.timeout``) instead, so the hold belongs to your task.
"""

from __future__ import annotations

import asyncio as _asyncio
import weakref
from types import TracebackType
from typing import List, Optional, Type

from . import _native
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

_WHO = "task"

# Each task's owner number for reentrant locks; dropped with the task.
_TASK_OWNERS: "weakref.WeakKeyDictionary[_asyncio.Task[object], int]" = weakref.WeakKeyDictionary()


def _current() -> "Optional[_asyncio.Task[object]]":
    try:
        return _asyncio.current_task()
    except RuntimeError:  # no running event loop
        return None


def _task() -> "_asyncio.Task[object]":
    task = _current()
    if task is None:
        raise RuntimeError("redlatch.asyncio locks must be used from an asyncio task")
    return task


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


def _task_owner(task: "_asyncio.Task[object]") -> int:
    owner = _TASK_OWNERS.get(task)
    if owner is None:
        owner = _TASK_OWNERS[task] = _native.new_owner()
    return owner


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
        """A reentrant lock, re-entered by the task that holds it (through any ``rlock(name)``
        of this client); see :meth:`redlatch.Client.rlock`."""
        native = native_lock(
            self._native, name, reentrant=True, lease=lease, wait=wait, fenced=fenced, fence_ttl=fence_ttl
        )
        return Lock(native, self._shared_holds(name, _TaskHolds))

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
        return f"<redlatch.asyncio.Client nodes={self.node_count}>"


class _TaskHolds:
    """Each task's holds of one lock, oldest first: per lock object for ``lock``, shared by
    the client's ``rlock(name)`` handles for ``rlock``. Dropped with the task."""

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
        """True for locks made by ``rlock``."""
        return self._native.reentrant

    async def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Acquires the lock for the current task (``threading.Lock.acquire`` semantics:
        ``timeout`` None = the lock's wait, -1 = forever, else seconds).

        :returns: True when acquired, False when the wait ran out
        :raises LockError: a non-reentrant lock already held by this task
        :raises RedisConnectionError: Redis unreachable for longer than the network timeout
        :raises QuorumError: quorum mode, no majority reachable
        :raises ValueError: a bad timeout

        Cancelling the awaiting task leaves nothing behind (no key, no subscription).
        """
        task = _task()
        holds = live_holds(self._holds.get(task) or [])
        reentrant = self._native.reentrant
        if holds and not reentrant:
            self._native.check_acquire(bool(blocking), timeout)  # bad arguments first
            raise already_held(self._native.name, _WHO)
        owner = _task_owner(task) if reentrant else None
        granted = self._native.acquire_async(bool(blocking), timeout, owner)
        try:
            resolved = await granted
        except _asyncio.CancelledError:
            _drop_granted(granted)
            raise
        if resolved is None:
            return False
        # The future keeps the object it resolved to for as long as it lives, which this task
        # does not control: move the hold out, so that only this task keeps the lock held.
        self._holds.setdefault(task, []).append(resolved.take())
        return True

    async def release(self) -> None:
        """Releases the current task's latest acquisition, at most once. Errors (and
        ``reason``) as for :meth:`redlatch.Lock.release`: after ``RedisConnectionError`` the
        hold is kept, and ``release()`` may be awaited again.
        """
        holds = self._holds.get(_task())
        if not holds:
            raise not_held(self._native.name, _WHO)
        hold = holds[-1]
        try:
            await hold.release_async()
        finally:
            forget(holds, hold)

    async def extend(self, lease: float) -> None:
        """Resets the remaining lease of this task's hold to ``lease`` seconds (replace,
        never add); never re-creates a lost lock. In watchdog mode the next renewal sets it
        back to ``watchdog_timeout``. Errors as for :meth:`release`, plus ``ValueError`` for a
        bad lease."""
        holds = self._holds.get(_task())
        if not holds:
            raise not_held(self._native.name, _WHO)
        # One call: a reentrant owner's holds share the hash's TTL and, in the core, its validity.
        await holds[-1].extend_async(lease)

    async def locked(self) -> bool:
        """True when anyone holds the lock (asks Redis)."""
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
        """Remaining lease of whoever holds the lock, in seconds; None when free."""
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
        if not await self.acquire():
            raise NotAcquiredError(not_acquired_message(self._native.name, self._native.wait))
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        holds = self._holds.get(_task())
        if not holds:
            return None  # released inside the block
        # Popped whatever happens: a release with an unknown outcome goes on in the
        # background (the dropped hold), so the task is free to acquire again.
        hold = holds.pop()
        try:
            await hold.release_async()
        except LockError as err:
            raised = exit_error(self._native.name, err, exc)
            if raised is not None:
                raise raised
        return None

    def __repr__(self) -> str:
        kind = "rlock" if self._native.reentrant else "lock"
        return f"<redlatch.asyncio.Lock {kind} {self._native.name!r}>"
