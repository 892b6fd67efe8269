"""What the sync and asyncio layers share for the rest of the lock family (read/write lock,
semaphores, latch, multi-lock): argument handling that is not the core's."""

from __future__ import annotations

from typing import Any, Callable, Dict, Generic, List, Optional, Sequence, Type, TypeVar, Union

from . import _native

#: ``rw_lock(...).read()`` / ``.write()`` arguments left out: the ``rw_lock``'s own apply.
_UNSET: Any = object()

_L = TypeVar("_L")


class RwLockBase(Generic[_L]):
    """A read/write lock (Redisson RReadWriteLock) on one name: ``read()`` and ``write()``
    make the two sides, each a reentrant lock object. Options given to ``rw_lock`` are the
    defaults of both (``fenced`` and ``fence_ttl``: of the write side; readers share a hold, so
    the read side is never fenced); each side may override them. The sync and asyncio clients
    each make their own lock class."""

    __slots__ = ("_make", "_name", "_defaults", "_sides")

    def __init__(self, make: Callable[..., _L], name: str, defaults: Dict[str, Any]) -> None:
        self._make = make
        self._name = name
        self._defaults = defaults
        # ``read()`` / ``write()`` without options: one object each, kept here, so that holds
        # taken through ``rw.read().acquire()`` last as long as ``rw`` does (a side's holds live
        # as long as some lock object of that side does, as for ``rlock``).
        self._sides: Dict[str, _L] = {"write": make("write", name, **defaults)}  # checks the options

    @property
    def name(self) -> str:
        """The lock's name (its Redis key, a hash with a ``mode`` field)."""
        return self._name

    def _side(self, kind: str, opts: Dict[str, Any]) -> _L:
        given = {k: v for k, v in opts.items() if v is not _UNSET}
        if not given and kind in self._sides:
            return self._sides[kind]
        defaults = self._defaults
        if kind == "read":
            defaults = {k: v for k, v in defaults.items() if k not in ("fenced", "fence_ttl")}
        side = self._make(kind, self._name, **{**defaults, **given})
        if not given:
            self._sides[kind] = side
        return side

    def read(
        self,
        *,
        lease: Optional[float] = _UNSET,
        wait: Optional[float] = _UNSET,
        fenced: bool = _UNSET,
        fence_ttl: Optional[float] = _UNSET,
    ) -> _L:
        """The read lock: shared by any number of readers, excluded by a writer of another
        thread or task. Reentrant per thread (task); each read hold expires on its own when
        its holder dies (Redisson's per-hold timeout keys). ``lease`` / ``wait`` in seconds
        as for ``lock``; left out, the ``rw_lock``'s apply. ``fenced=True`` is refused
        (``ValueError``: readers share one hold; fence the write side).

        :raises ValueError: bad durations, ``fenced``; at acquire, a quorum client
        """
        return self._side("read", {"lease": lease, "wait": wait, "fenced": fenced, "fence_ttl": fence_ttl})

    def write(
        self,
        *,
        lease: Optional[float] = _UNSET,
        wait: Optional[float] = _UNSET,
        fenced: bool = _UNSET,
        fence_ttl: Optional[float] = _UNSET,
    ) -> _L:
        """The write lock: one writer, no readers of other threads or tasks. Reentrant;
        the writer may also take the read lock. A thread (task) that holds the read lock and
        acquires the write lock gets ``WouldDeadlockError`` at once (Redisson would wait
        forever). Options as for :meth:`read`."""
        return self._side("write", {"lease": lease, "wait": wait, "fenced": fenced, "fence_ttl": fence_ttl})

    def __repr__(self) -> str:
        return f"<redlatch.RwLock {self._name!r}>"


def name(name: str) -> str:
    """``name`` if it is a str (the native side checks its length)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be str, not {type(name).__name__}")
    return name


def members(locks: Sequence[Any], lock_type: Type[Any], label: str) -> List[Union[_native.Lock, str]]:
    """A multi-lock's members as the native side takes them: lock handles and names."""
    if isinstance(locks, (str, bytes)):
        raise TypeError("multi_lock takes a list of locks or names, not a single str")
    out: List[Union[_native.Lock, str]] = []
    for m in locks:
        if isinstance(m, str):
            out.append(m)
        elif isinstance(m, lock_type):
            out.append(m._native)
        else:
            raise TypeError(f"multi_lock members must be {label} objects or str, not {type(m).__name__}")
    return out
