"""redlatch: Redis distributed locks.

>>> import redlatch
>>> client = redlatch.Client("redis://127.0.0.1:6379")
>>> with client.lock("order:42", lease=10.0, wait=5.0):   # doctest: +SKIP
...     ...

Lease locks (``lock``) use the redis-py / node-redlock format and exclude redis-py's own
``Lock`` on the same key; reentrant locks (``rlock``) use Redisson's RLock layout, and the rest
of the family Redisson's too: ``fair_lock`` (FIFO), ``rw_lock`` (``.read()`` / ``.write()``). Without a
lease, a lock is renewed by a watchdog while held, and a loss is reported at once. Quorum
(Redlock) over independent nodes: ``Client.quorum([...])``; Redis Cluster:
``Client.cluster([...])`` or a ``redis+cluster://`` URL; Sentinel: a
``redis+sentinel://host:26379/master`` URL; TLS: ``rediss://`` with ``tls_*`` options
(docs/deployments.md). The asyncio API is
``redlatch.asyncio.Client`` with the same names. Durations are float seconds.
"""

import atexit

from . import _native
from ._errors import (
    KeyConflictError,
    DeploymentWarning,
    LockError,
    LockLostError,
    NoPermissionError,
    NotAcquiredError,
    NotOwnedError,
    OutOfMemoryError,
    QuorumError,
    RedisConnectionError,
    WouldDeadlockError,
)
from ._sync import Client, CountDownLatch, Lock, MultiLock, Permit, PermitSemaphore, RwLock, Semaphore
from . import asyncio

__version__: str = _native.__version__

# Stop the native runtime before the interpreter finalizes, so none of its threads is inside
# Python then (see python/src/runtime.rs). Registered first, so it runs after the user's own
# atexit hooks, which may still release locks.
atexit.register(_native.shutdown_runtime)

__all__ = [
    "Client",
    "CountDownLatch",
    "DeploymentWarning",
    "Lock",
    "MultiLock",
    "Permit",
    "PermitSemaphore",
    "KeyConflictError",
    "LockError",
    "LockLostError",
    "NoPermissionError",
    "NotAcquiredError",
    "NotOwnedError",
    "OutOfMemoryError",
    "QuorumError",
    "RedisConnectionError",
    "RwLock",
    "Semaphore",
    "WouldDeadlockError",
    "asyncio",
    "__version__",
]
