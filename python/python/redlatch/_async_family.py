"""The asyncio semaphores, count-down latch and multi-lock (issue 13), made by
``redlatch.asyncio.Client``: the sync classes' names and behaviour (``redlatch._sync_family``),
awaitable. Cancelling a task that awaits an acquire stops it and takes nothing (what was
granted at that moment is given back in the background)."""

from __future__ import annotations

import asyncio as _asyncio
import weakref
from types import TracebackType
from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Type, TypeVar

from . import _native
from ._common import add_note, already_held, disown, exit_error, forget, live_holds, not_held, permit_id_arg
from ._errors import LockError
from ._tasks import _current, _task, _task_owner

if TYPE_CHECKING:
    from .asyncio import Lock

__all__ = ["Semaphore", "PermitSemaphore", "Permit", "CountDownLatch", "MultiLock"]

_T = TypeVar("_T")


async def _granted(future: "_asyncio.Future[_T]") -> _T:
    """Awaits a native acquire; on cancellation stops it (``abandon``): a grant already made
    is then dropped, which gives it back in the background."""
    try:
        return await future
    except _asyncio.CancelledError:
        _native.abandon(future)
        if future.done() and not future.cancelled() and future.exception() is None:
            _drop(future.result())
        raise


def _drop(resolved: Any) -> None:
    """Gives back what a cancelled acquire got (a grant, permit or multi-hold)."""
    if resolved is None or isinstance(resolved, bool):
        return
    if isinstance(resolved, _native.Permit):
        # Whatever its lease: nobody got its id (a dropped permit with a lease stays taken).
        resolved.give_back()
        return
    try:
        resolved.take()  # moved out of the future and dropped now: released in the background
    except LockError:
        pass


class Semaphore:
    """An asyncio counting semaphore (Redisson RSemaphore); see :class:`redlatch.Semaphore`.
    ``async with sem:`` takes one permit."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.Semaphore) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The semaphore's name (its Redis key)."""
        return self._native.name

    @property
    def held(self) -> int:
        """Permits acquired through this object and not yet released (local)."""
        return self._native.held

    async def try_set_permits(self, permits: int) -> bool:
        """As :meth:`redlatch.Semaphore.try_set_permits`."""
        result: bool = await self._native.try_set_permits_async(permits)
        return result

    async def acquire(self, permits: int = 1, *, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """As :meth:`redlatch.Semaphore.acquire`; cancelling the task takes nothing."""
        grant = await _granted(self._native.acquire_async(permits, bool(blocking), timeout))
        if grant is None:
            return False
        grant.keep()
        return True

    async def release(self, permits: int = 1) -> None:
        """As :meth:`redlatch.Semaphore.release`."""
        await self._native.release_async(permits)

    async def available(self) -> int:
        """Permits available now (asks Redis); 0 when the semaphore does not exist or its count
        is below zero (as the sync ``Semaphore.available``)."""
        result: int = await self._native.available_async()
        return result

    async def __aenter__(self) -> "Semaphore":
        grant = await _granted(self._native.acquire_async(1, True, None, raising=True))
        assert grant is not None  # raising: a refusal raised
        grant.keep()
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        try:
            # As the sync exit: an unknown outcome is settled in the background (release_final).
            await self._native.release_final_async()
        except LockError as err:
            if exc is None:
                raise
            add_note(exc, f"redlatch: releasing the permit failed: {type(err).__name__}: {err}")

    def __repr__(self) -> str:
        return f"<redlatch.asyncio.Semaphore {self.name!r} held={self.held}>"


class Permit:
    """A permit of an asyncio :class:`PermitSemaphore`; see :class:`redlatch.Permit`.
    ``async with permit:`` releases it at the end of the block."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.Permit) -> None:
        self._native = native

    @property
    def id(self) -> str:
        """The permit id (32 lower-case hex digits)."""
        return self._native.id

    @property
    def lease(self) -> Optional[float]:
        """The fixed lease in seconds; None when renewed by the watchdog."""
        return self._native.lease

    @property
    def lost(self) -> bool:
        """As :attr:`redlatch.Permit.lost`."""
        return self._native.lost

    async def release(self) -> None:
        """As :meth:`redlatch.Permit.release`."""
        await self._native.release_async()

    async def __aenter__(self) -> "Permit":
        return self

    async def __aexit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        try:
            # A release whose outcome is unknown goes on in the background (release_final):
            # the block's exception keeps this object alive, so its drop would come late.
            await self._native.release_final_async()
        except LockError as err:
            raised = exit_error(self._native.name, err, exc, what="the permit of semaphore")
            if raised is not None:
                raise raised

    def __repr__(self) -> str:
        return f"<redlatch.asyncio.Permit of {self._native.name!r} lease={self.lease!r}>"


class PermitSemaphore:
    """An asyncio semaphore whose permits expire (Redisson RPermitExpirableSemaphore); see
    :class:`redlatch.PermitSemaphore`."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.PermitSemaphore) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The semaphore's name (its Redis key)."""
        return self._native.name

    async def try_set_permits(self, permits: int) -> bool:
        """As :meth:`redlatch.Semaphore.try_set_permits`."""
        result: bool = await self._native.try_set_permits_async(permits)
        return result

    async def acquire(self, lease: Optional[float] = None, *, timeout: Optional[float] = None) -> Permit:
        """As :meth:`redlatch.PermitSemaphore.acquire` (``NotAcquiredError`` when the wait runs
        out); cancelling the task takes nothing."""
        native = await _granted(self._native.acquire_async(lease, True, timeout, raising=True))
        assert native is not None  # raising: a refusal raised
        return Permit(native.take())

    async def try_acquire(self, lease: Optional[float] = None) -> Optional[Permit]:
        """One try: a :class:`Permit`, or None."""
        native = await _granted(self._native.acquire_async(lease, False, None))
        return None if native is None else Permit(native.take())

    async def release(self, permit_id: str) -> None:
        """As :meth:`redlatch.PermitSemaphore.release`."""
        await self._native.release_async(permit_id_arg(permit_id))

    async def available(self) -> int:
        """Permits available now (asks Redis)."""
        result: int = await self._native.available_async()
        return result

    def __repr__(self) -> str:
        return f"<redlatch.asyncio.PermitSemaphore {self.name!r}>"


class CountDownLatch:
    """An asyncio count-down latch (Redisson RCountDownLatch); see
    :class:`redlatch.CountDownLatch`."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.CountDownLatch) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The latch's name (its Redis key)."""
        return self._native.name

    async def try_set_count(self, count: int) -> bool:
        """As :meth:`redlatch.CountDownLatch.try_set_count`."""
        result: bool = await self._native.try_set_count_async(count)
        return result

    async def count_down(self) -> None:
        """As :meth:`redlatch.CountDownLatch.count_down`."""
        await self._native.count_down_async()

    async def count(self) -> int:
        """The current count (asks Redis); 0 when open."""
        result: int = await self._native.count_async()
        return result

    async def wait(self, timeout: Optional[float] = None) -> bool:
        """As :meth:`redlatch.CountDownLatch.wait`: True when open, False when ``timeout``
        seconds ran out. Cancelling the task stops the wait."""
        result: bool = await _granted(self._native.wait_async(timeout))
        return result

    def __repr__(self) -> str:
        return f"<redlatch.asyncio.CountDownLatch {self.name!r}>"


class MultiLock:
    """Several locks taken together by one task, all or none; see
    :class:`redlatch.MultiLock`. Each acquisition belongs to the acquiring task."""

    __slots__ = ("_native", "_holds", "_lease_members")

    def __init__(self, native: _native.MultiLock, lease_members: "Sequence[Lock]" = ()) -> None:
        self._native = native
        self._holds: "weakref.WeakKeyDictionary[_asyncio.Task[object], List[_native.MultiHold]]" = (
            weakref.WeakKeyDictionary()
        )
        # Lease-lock members given as lock objects: one the acquiring task holds already would
        # wait for itself (a Python user trial of stop 46: forever with no wait).
        self._lease_members = tuple(lease_members)

    @property
    def names(self) -> List[str]:
        """The member locks' names, in the order they are taken (sorted)."""
        return self._native.names

    async def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """As :meth:`redlatch.MultiLock.acquire`, for the current task."""
        return await self._acquire(blocking, timeout, raising=False)

    async def _acquire(self, blocking: bool, timeout: Optional[float], raising: bool) -> bool:
        """``acquire``; ``raising`` as for :class:`redlatch.asyncio.Lock`."""
        task = _task()
        holds = live_holds(self._holds.get(task) or [])
        if holds:
            self._native.check_acquire(bool(blocking), timeout)
            raise already_held(",".join(self.names), "task")
        for member in self._lease_members:
            if live_holds(member._holds.get(task) or []):
                self._native.check_acquire(bool(blocking), timeout)
                raise already_held(member.name, "task")
        hold = await _granted(self._native.acquire_async(bool(blocking), timeout, _task_owner(task), raising=raising))
        if hold is None:
            return False
        self._holds.setdefault(task, []).append(hold.take())
        return True

    async def release(self) -> None:
        """Releases every member (the current task's acquisition)."""
        holds = self._holds.get(_task())
        if not holds:
            raise not_held(",".join(self.names), "task")
        hold = holds[-1]
        try:
            await hold.release_async()
        except _asyncio.CancelledError:
            disown(holds, hold)
            raise
        finally:
            forget(holds, hold)

    async def __aenter__(self) -> "MultiLock":
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
            # Closed outside its loop (the loop was closed and the task collected): its holds
            # go with the task, released in the background.
            return None
        holds = self._holds.get(task)
        if not holds:
            return None
        hold = holds.pop()
        try:
            await hold.release_final_async()  # an unknown outcome goes on in the background
        except LockError as err:
            raised = exit_error(",".join(self.names), err, exc)
            if raised is not None:
                raise raised
        return None

    def __repr__(self) -> str:
        return f"<redlatch.asyncio.MultiLock {self.names!r}>"
