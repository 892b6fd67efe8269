"""The exception tree (shared/API.md, "Errors").

Every exception carries ``.code``, the stable number of its kind, equal to the C
``redlatch_status`` value and shared with the other languages: 1 NotAcquired, 2 NotOwned,
3 LockLost, 4 Quorum, 5 Connection, 7 Redis (an error reply), 8 internal. Bad arguments
(code 6 elsewhere) are plain ``ValueError`` / ``TypeError``.
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


class LockError(Exception):
    """Base class of every redlatch error.

    Raised as such for a Redis error reply (``code == 7``), an internal failure
    (``code == 8``) and for acquiring a non-reentrant lock again through the same lock by
    the thread or task that holds it (``code == 6``; use ``rlock`` for reentrancy).
    """

    code: int = INTERNAL

    def __init__(self, message: str = "", *, code: Optional[int] = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class NotAcquiredError(LockError, TimeoutError):
    """The wait ran out before the lock could be acquired (``code == 1``)."""

    code = NOT_ACQUIRED


class NotOwnedError(LockError):
    """Release or extend of a hold that this thread or task does not have: never held,
    expired, taken by someone else, or held by another thread, task or process
    (``code == 2``)."""

    code = NOT_OWNED


class LockLostError(NotOwnedError):
    """The hold was lost while held: the watchdog or an extend found the lock gone or
    taken, or its lease ran out (``code == 3``)."""

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
        nodes: Sequence[Tuple[str, Optional[str]]] = (),
    ) -> None:
        super().__init__(message, code=code)
        self.nodes: List[Tuple[str, Optional[str]]] = list(nodes)


class RedisConnectionError(LockError, ConnectionError):
    """Redis unreachable, the connection dropped, or no reply within the network timeout
    (``code == 5``)."""

    code = CONNECTION


class DeploymentWarning(UserWarning):
    """A deployment setting that weakens what locks guarantee, reported once per node with
    ``warnings.warn`` when a connection is made: today a ``maxmemory-policy`` other than
    ``noeviction`` (Redis may then evict lock keys and hand a held lock to someone else)."""
