"""The exception tree (shared/API.md, "Errors").

Every exception carries ``.code``, the stable number of its kind, equal to the C
``redlatch_status`` value and shared with the other languages: 1 NotAcquired, 2 NotOwned,
3 LockLost, 4 Quorum, 5 Connection, 7 Redis (an error reply), 8 internal, 9 NoPermission,
10 OutOfMemory, 11 KeyConflict, 12 WouldDeadlock. Bad arguments (code 6 elsewhere) are plain ``ValueError`` /
``TypeError``.

``NotOwnedError`` and ``LockLostError`` carry ``.reason``, the same word as in every binding:
``"expired"`` (the lease ran out), ``"taken"`` (another owner holds it), ``"deleted"`` (the key
was deleted within the lease), ``"never_held"`` (nothing held by this thread or task, or
already released). The rule is the core's: ``LockLostError`` when the loss was known before
the call (the watchdog or an extend saw it, or the lease had run out), ``NotOwnedError`` when
the call found it first or nothing is held.
"""

from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

__all__ = [
    "DeploymentWarning",
    "LockError",
    "NotAcquiredError",
    "NotOwnedError",
    "LockLostError",
    "QuorumError",
    "RedisConnectionError",
    "NoPermissionError",
    "OutOfMemoryError",
    "KeyConflictError",
    "WouldDeadlockError",
]

#: Stable codes, as in the core's ``ErrorKind`` (and C's ``redlatch_status``).
NOT_ACQUIRED = 1
NOT_OWNED = 2
LOCK_LOST = 3
QUORUM = 4
CONNECTION = 5
INVALID_ARGUMENT = 6
REDIS = 7
INTERNAL = 8
NO_PERMISSION = 9
OUT_OF_MEMORY = 10
KEY_CONFLICT = 11
WOULD_DEADLOCK = 12


class LockError(Exception):
    """Base class of every redlatch error.

    Raised as such for a Redis error reply (``code == 7``), an internal failure
    (``code == 8``) and for acquiring a non-reentrant lock again through the same lock by
    the thread or task that holds it (``code == 6``; use ``rlock`` for reentrancy).
    """

    code: int = INTERNAL
    #: Why a hold is not ours (``NotOwnedError`` / ``LockLostError``): ``"expired"``,
    #: ``"taken"``, ``"deleted"`` or ``"never_held"``; None for other errors.
    reason: Optional[str] = None

    def __init__(
        self, message: str = "", *, code: Optional[int] = None, reason: Optional[str] = None
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if reason is not None:
            self.reason = reason


class NotAcquiredError(LockError, TimeoutError):
    """The wait ran out before the lock could be acquired (``code == 1``)."""

    code = NOT_ACQUIRED


class NotOwnedError(LockError):
    """Release or extend of a hold that this thread or task does not have (``code == 2``):
    found deleted or taken by this call, or never held here (held by another thread, task or
    process, or already released). See ``reason``."""

    code = NOT_OWNED


class LockLostError(NotOwnedError):
    """The hold was lost while held: the watchdog or an extend found the lock gone or
    taken, or its lease ran out (``code == 3``). See ``reason``."""

    code = LOCK_LOST


class QuorumError(LockError):
    """Quorum (Redlock) mode: no majority of nodes granted the request (``code == 4``).

    ``nodes`` lists ``(node, None)`` for each node that granted it and ``(node, reason)``
    for each that did not, when known.
    """

    code = QUORUM

    def __init__(
        self,
        message: str = "",
        *,
        code: Optional[int] = None,
        reason: Optional[str] = None,
        nodes: Sequence[Tuple[str, Optional[str]]] = (),
    ) -> None:
        super().__init__(message, code=code, reason=reason)
        self.nodes: List[Tuple[str, Optional[str]]] = list(nodes)


class RedisConnectionError(LockError, ConnectionError):
    """Redis unreachable, the connection dropped, or no reply within the network timeout
    (``code == 5``)."""

    code = CONNECTION


class NoPermissionError(LockError):
    """Redis refused a command, key or channel to this ACL user (``NOPERM``, ``code == 9``).
    Nothing was changed: a refused release leaves the hold held, to be released again once
    the permission is granted."""

    code = NO_PERMISSION


class OutOfMemoryError(LockError):
    """Redis is out of memory (``OOM``: ``maxmemory`` reached under ``noeviction``;
    ``code == 10``). Raised at once, not retried."""

    code = OUT_OF_MEMORY


class KeyConflictError(LockError):
    """The lock's name holds application data (``code == 11``): a key of a type no lock of this
    kind uses, or a string (``lock``) / hash (``rlock``) without TTL that is no lock. Raised at
    once, whatever the wait; the data is left untouched."""

    code = KEY_CONFLICT


class WouldDeadlockError(LockError):
    """A write acquire of a read/write lock by a thread or task that holds its read lock
    (``code == 12``): a read-to-write upgrade. Redisson's RReadWriteLock would wait forever
    (the writer waits for every reader, itself included); redlatch refuses at once and changes
    nothing in Redis. Release the read holds first, or take the write lock first (a writer may
    also take the read lock)."""

    code = WOULD_DEADLOCK


class DeploymentWarning(UserWarning):
    """A deployment condition that weakens what locks guarantee, reported once per node (and
    client) with ``warnings.warn``: a ``maxmemory-policy`` other than ``noeviction`` (Redis may
    then evict lock keys and hand a held lock to someone else), a user who may not
    ``SUBSCRIBE`` (waiters poll), a renewal too few replicas confirmed (``sync_replicas``), or
    a node of a quorum that did not confirm a release a majority confirmed (the release
    succeeded; that node's key expires with its lease)."""
