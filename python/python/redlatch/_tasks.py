"""Which asyncio task is calling, and each task's owner number (shared by the asyncio locks
and the asyncio multi-lock)."""

from __future__ import annotations

import asyncio as _asyncio
import weakref
from typing import Optional

from . import _native

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


def _task_owner(task: "_asyncio.Task[object]") -> int:
    owner = _TASK_OWNERS.get(task)
    if owner is None:
        owner = _TASK_OWNERS[task] = _native.new_owner()
    return owner
