"""The lock a process holds on a run while it drives it (one byte of ``<store>.lock``).

Why its own module beside :mod:`basevolve.store.liveness` (which tests the same lock
from a reader): taking the lock is store plumbing, not engine logic; the run entry
points (:mod:`basevolve.engine.runner`) and the sweep executors take it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from basevolve.errors import StoreError


@contextmanager
def run_lock(store_path: str | Path, run_id: str) -> Iterator[None]:
    """Hold an exclusive lock on ``run_id`` of this store while a process drives it.

    Why: a ``--resume`` launched while the run is still alive (or two resumes started
    together) would mark the other process's in-flight calls lost and both would spend
    LLM calls until one hit "call N is not pending".  A POSIX byte-range lock (one byte
    per run, at ``crc32(run_id)``) on ``<store>.lock`` lets runs of *different* ids share
    the store concurrently; the kernel drops the lock when the process dies, even by
    SIGKILL, so a killed run can always be resumed.
    """
    lock_path = Path(f"{store_path}.lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot create the lock file {str(lock_path)!r}: "
                         f"{exc.strerror or exc}") from None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, zlib.crc32(run_id.encode()))
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                raise StoreError(
                    f"run {run_id!r} in {str(store_path)!r} is being driven by another "
                    "process; wait for it to end (or stop it) before --resume") from None
            # a file system without POSIX locks: run unguarded rather than not at all
        yield
    finally:
        os.close(fd)


__all__ = ["run_lock"]
