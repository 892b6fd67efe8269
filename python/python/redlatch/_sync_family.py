"""The synchronous semaphores, count-down latch and multi-lock (issue 13), made by
``redlatch.Client``. The core decides; these classes give them Python's idioms
(``threading.Semaphore``, ``threading.Event.wait``, ``with``)."""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, List, Optional, Sequence, Type

from . import _native
from ._common import (
    ThreadHolds,
    add_note,
    already_held,
    exit_error,
    forget,
    live_holds,
    not_held,
    permit_id_arg,
)
from ._errors import LockError

if TYPE_CHECKING:
    from ._sync import Lock

__all__ = ["Semaphore", "PermitSemaphore", "Permit", "CountDownLatch", "MultiLock"]


class Semaphore:
    """A counting semaphore on key ``name`` (Redisson RSemaphore: a string holding the
    permits available), shared by threads and processes like a ``threading.Semaphore``
    spanning them. Made by :meth:`redlatch.Client.semaphore`.

    Permits are not owned in Redis: a holder that dies keeps its permits taken (use
    :class:`PermitSemaphore` for permits that come back by themselves). This object counts the
    permits it acquired (:attr:`held`) and refuses to release more (``NotOwnedError``); any
    thread may release them, as with ``threading.Semaphore``.
    """

    __slots__ = ("_native",)

    def __init__(self, native: _native.Semaphore) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The semaphore's name (its Redis key)."""
        return self._native.name

    @property
    def held(self) -> int:
        """Permits acquired through this object and not yet released (local, never blocks)."""
        return self._native.held

    def try_set_permits(self, permits: int) -> bool:
        """Sets the number of permits if the semaphore does not exist yet (Redisson's
        ``trySetPermits``). Returns True when set, False when it already existed.

        :raises ValueError: ``permits`` not in 1..2^31-1
        """
        return self._native.try_set_permits(permits)

    def acquire(self, permits: int = 1, *, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Takes ``permits`` at once (all or none), waiting while fewer are available.

        :param permits: 1..2^31-1 (a ``bool`` is refused: pass ``blocking=`` by keyword)
        :param blocking: False = one try (then ``timeout`` must be None or -1)
        :param timeout: seconds to wait; ``None`` = the semaphore's ``wait``; -1 = forever
        :returns: True when taken, False when the wait ran out (nothing taken)
        :raises ValueError: bad ``permits`` or ``timeout``
        :raises RedisConnectionError: Redis kept failing until the wait ran out (for one network
            timeout when the wait is forever); no call takes longer than its wait plus one
            network timeout
        :raises KeyConflictError: the name holds application data

        Blocks with the GIL released; Ctrl-C stops the wait and takes nothing.
        """
        return self._native.acquire(permits, bool(blocking), timeout)

    def release(self, permits: int = 1) -> None:
        """Gives back ``permits`` that this object acquired, waking waiters.

        :raises NotOwnedError: more than :attr:`held` (``reason == "never_held"``); nothing sent.
            ``reason == "deleted"``: the semaphore's count is gone (deleted, expired, a restart of
            Redis without persistence); nothing written, the permits leave :attr:`held`, and
            :meth:`try_set_permits` sets the count again
        :raises ValueError: ``permits`` not in 1..2^31-1
        :raises RedisConnectionError: Redis could not confirm (the permits count as held)
        """
        self._native.release(permits)

    def available(self) -> int:
        """Permits available now (asks Redis); 0 when the semaphore does not exist, and 0 when its
        count is below zero (Redisson's ``reducePermits`` can take it there; its
        ``availablePermits`` then returns the negative count)."""
        return self._native.available()

    def __enter__(self) -> "Semaphore":
        self._native.acquire(1, True, None, raising=True)
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        try:
            # When the outcome stays unknown the permit leaves this handle's count and the
            # release is settled in the background (release_final): kept counted, a later
            # release() gave it back a second time once the first one had applied.
            self._native.release_final()
        except LockError as err:
            if exc is None:
                raise
            add_note(exc, f"redlatch: releasing the permit failed: {type(err).__name__}: {err}")

    def __repr__(self) -> str:
        return f"<redlatch.Semaphore {self.name!r} held={self.held}>"


class Permit:
    """One permit of a :class:`PermitSemaphore` (Redisson RPermitExpirableSemaphore): its
    :attr:`id` (32 lower-case hex digits, Redisson's format, so a Java client can release it)
    and lease. ``with permit:`` releases it at the end of the block. A permit with a fixed
    lease comes back by itself when the lease ends; one without is renewed by the watchdog
    while this object lives, and released in the background when it is garbage-collected."""

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
        """True once it is known no longer held, before a release: its lease ran out (a
        fixed lease, or watchdog renewals that failed for a whole watchdog timeout, e.g.
        refused while Redis is out of memory: Redis then gives it back, to any client) or a
        renewal found it gone; :meth:`release` then raises :class:`LockLostError`."""
        return self._native.lost

    def release(self) -> None:
        """Gives the permit back, at most once.

        :raises LockLostError: its fixed lease had ended (``reason == "expired"``; a
            :class:`NotOwnedError`, as for a lock released late)
        :raises NotOwnedError: its entry is gone
            within its lease (``"deleted"``: a restart without persistence, its id released
            elsewhere) or it was released through this object already (``"never_held"``)
        :raises RedisConnectionError: Redis could not confirm; ``release()`` may be called again
        """
        self._native.release()

    def __enter__(self) -> "Permit":
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        try:
            # A release whose outcome is unknown goes on in the background (release_final):
            # the block's exception keeps this object alive, so its drop would come late.
            self._native.release_final()
        except LockError as err:
            raised = exit_error(self._native.name, err, exc, what="the permit of semaphore")
            if raised is not None:
                raise raised

    def __repr__(self) -> str:
        return f"<redlatch.Permit of {self._native.name!r} lease={self.lease!r}>"  # no id: it releases


class PermitSemaphore:
    """A semaphore whose permits expire (Redisson RPermitExpirableSemaphore): each
    :meth:`acquire` returns a :class:`Permit` with an id, released by id, and given back by
    itself when its lease ends, so a dead holder's permits come back. Made by
    :meth:`redlatch.Client.permit_semaphore`. Leases use the callers' wall clocks, as in
    Redisson: hosts sharing one need synchronised clocks."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.PermitSemaphore) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The semaphore's name (its Redis key; the permits' ZSET is ``{name}:timeout``)."""
        return self._native.name

    def try_set_permits(self, permits: int) -> bool:
        """As :meth:`Semaphore.try_set_permits`."""
        return self._native.try_set_permits(permits)

    def acquire(self, lease: Optional[float] = None, *, timeout: Optional[float] = None) -> Permit:
        """Takes one permit, waiting while none is available.

        :param lease: seconds until the permit comes back by itself; None = renewed by the
            watchdog while the returned :class:`Permit` lives (``watchdog_timeout``)
        :param timeout: seconds to wait; ``None`` = the semaphore's ``wait``; -1 = forever
        :raises NotAcquiredError: the wait ran out (a ``TimeoutError``)
        :raises ValueError: a bad lease or timeout
        :raises RedisConnectionError: Redis kept failing until the wait ran out (for one network
            timeout when the wait is forever); no call takes longer than its wait plus one
            network timeout
        """
        native = self._native.acquire(lease, True, timeout, raising=True)
        assert native is not None  # raising: a refusal raised
        # take(): handed over now; dropped before this (Ctrl-C as the call returned) the
        # native object gives the permit back, whatever its lease.
        return Permit(native.take())

    def try_acquire(self, lease: Optional[float] = None) -> Optional[Permit]:
        """One try: a :class:`Permit`, or None when none is available. Errors as :meth:`acquire`."""
        native = self._native.acquire(lease, False, None)
        return None if native is None else Permit(native.take())

    def release(self, permit_id: str) -> None:
        """Releases a permit by id (this process's or another's, in any language).

        :raises NotOwnedError: an unknown id (``reason == "never_held"``) or one whose lease
            ended (``"expired"``); the id is never shown in the message
        :raises ValueError: not 32 hex digits
        :raises TypeError: ``permit_id`` is not a str
        """
        self._native.release(permit_id_arg(permit_id))

    def available(self) -> int:
        """Permits available now (asks Redis; expired permits count as available)."""
        return self._native.available()

    def __repr__(self) -> str:
        return f"<redlatch.PermitSemaphore {self.name!r}>"


class CountDownLatch:
    """A count-down latch on key ``name`` (Redisson RCountDownLatch): :meth:`try_set_count`
    arms it, each :meth:`count_down` takes one off, and :meth:`wait` returns when it reaches
    zero, in every process (woken by Redisson's latch channel). Made by
    :meth:`redlatch.Client.count_down_latch`."""

    __slots__ = ("_native",)

    def __init__(self, native: _native.CountDownLatch) -> None:
        self._native = native

    @property
    def name(self) -> str:
        """The latch's name (its Redis key)."""
        return self._native.name

    def try_set_count(self, count: int) -> bool:
        """Arms the latch with ``count`` if it is not armed (it is open: zero or never set).

        :returns: True when set, False when a count was already set
        :raises ValueError: ``count`` not in 1..2^31-1
        """
        return self._native.try_set_count(count)

    def count_down(self) -> None:
        """Takes one off the count; at zero the latch opens (its key is deleted) and every
        waiter wakes. Does nothing to a latch that is open.

        :raises redlatch.RedisConnectionError: Redis did not answer within the network timeout:
            the outcome is unknown (a stalled Redis may still apply it when it runs again),
            and calling again may count down twice
        """
        self._native.count_down()

    def count(self) -> int:
        """The current count (asks Redis); 0 when open."""
        return self._native.count()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Waits until the count reaches zero, like ``threading.Event.wait``, except that a
        latch opened and set again (``try_set_count``) before this waiter looks is not seen
        open: the wait goes on (as Redisson's ``await``).

        :param timeout: seconds; None = forever
        :returns: True when the latch is open, False when the timeout ran out
        :raises ValueError: a bad timeout

        Blocks with the GIL released; Ctrl-C stops the wait.
        """
        return self._native.wait(timeout)

    def __repr__(self) -> str:
        return f"<redlatch.CountDownLatch {self.name!r}>"


class MultiLock:
    """Several locks taken together, all or none (Redisson RedissonMultiLock): taken in one
    order (sorted by name), so processes locking overlapping sets in different orders never
    deadlock; released together; a failure part way rolls back what was taken. Made by
    :meth:`redlatch.Client.multi_lock`. Each acquisition belongs to the acquiring thread; it is
    not reentrant (acquiring it again from the holding thread raises ``LockError``)."""

    __slots__ = ("_native", "_store", "_lease_members")

    def __init__(self, native: _native.MultiLock, lease_members: "Sequence[Lock]" = ()) -> None:
        self._native = native
        self._store: ThreadHolds[_native.MultiHold] = ThreadHolds()
        # Lease-lock members given as lock objects: one the acquiring thread holds already
        # would wait for itself (a Python user trial of stop 46: forever with no wait).
        self._lease_members = tuple(lease_members)

    @property
    def names(self) -> List[str]:
        """The member locks' names, in the order they are taken (sorted)."""
        return self._native.names

    def acquire(self, blocking: bool = True, timeout: Optional[float] = None) -> bool:
        """Takes every member, like ``threading.Lock.acquire`` (``timeout`` None = the
        multi-lock's ``wait``, -1 = forever). Returns False when the wait ran out (nothing
        held). Errors as for :meth:`redlatch.Lock.acquire`."""
        return self._acquire(blocking, timeout, raising=False)

    def _acquire(self, blocking: bool, timeout: Optional[float], raising: bool) -> bool:
        """``acquire``; ``raising`` as for :class:`redlatch.Lock`."""
        holds = live_holds(self._store.mine())
        if holds:
            self._native.check_acquire(bool(blocking), timeout)
            raise already_held(",".join(self.names), "thread")
        for member in self._lease_members:
            if live_holds(member._holds()):
                self._native.check_acquire(bool(blocking), timeout)
                raise already_held(member.name, "thread")
        hold = self._native.acquire(bool(blocking), timeout, raising=raising)
        if hold is None:
            return False
        holds.append(hold)
        return True

    def release(self) -> None:
        """Releases every member. Errors as for :meth:`redlatch.Lock.release`."""
        holds = self._store.mine()
        if not holds:
            raise not_held(",".join(self.names), "thread")
        hold = holds[-1]
        try:
            hold.release()
        finally:
            forget(holds, hold)

    def __enter__(self) -> "MultiLock":
        self._acquire(True, None, raising=True)
        return self

    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> None:
        holds = self._store.mine()
        if not holds:
            return None
        hold = holds.pop()
        try:
            hold.release_final()  # an unknown outcome goes on in the background
        except LockError as err:
            raised = exit_error(",".join(self.names), err, exc)
            if raised is not None:
                raise raised
        return None

    def __repr__(self) -> str:
        return f"<redlatch.MultiLock {self.names!r}>"


