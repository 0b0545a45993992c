"""Per-run locks for a process that drives many runs (issue 11).

:func:`basevolve.engine.runner.run_lock` locks one byte of ``<store>.lock`` (offset
``crc32(run_id)``) while a process drives that run, so ``basevolve run --resume`` and
a sweep never drive the same run twice.  POSIX record locks belong to the *process*
and closing *any* descriptor of the file drops all of them, so a sweep that opened and
closed the lock file once per run would silently lose the locks of its other runs.
:class:`RunLocks` therefore keeps one descriptor for the whole sweep and locks and
unlocks byte ranges on it, with the same file and offsets as ``run_lock``.

:func:`holder` asks the kernel who holds a run's lock (``F_GETLK``) without taking it,
which is what ``basevolve sweep --status`` needs: it must never disturb a live sweep.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from basevolve.errors import StoreError
from basevolve.store.liveness import UNKNOWN, lock_file, lock_holder, lock_offset


class RunLocks:
    """Exclusive run locks held through one descriptor (see the module docstring)."""

    def __init__(self, store_path: str | Path) -> None:
        path = lock_file(store_path)
        try:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise StoreError(f"cannot create the lock file {str(path)!r}: "
                             f"{exc.strerror or exc}") from None
        self.held: set[str] = set()

    def try_lock(self, run_id: str) -> bool:
        """Lock ``run_id``; False when another process drives it."""
        try:
            fcntl.lockf(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, lock_offset(run_id))
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                return False
            # a file system without POSIX locks: run unguarded, like run_lock
        self.held.add(run_id)
        return True

    def unlock(self, run_id: str) -> None:
        if run_id in self.held:
            self.held.discard(run_id)
            try:
                fcntl.lockf(self.fd, fcntl.LOCK_UN, 1, lock_offset(run_id))
            except OSError:
                pass

    def close(self) -> None:
        os.close(self.fd)  # drops every lock this process holds on the file
        self.held.clear()

    def __enter__(self) -> RunLocks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def holder(store_path: str | Path, run_id: str) -> int | None:
    """Pid of the process holding ``run_id``'s lock, None if free (or unknowable)."""
    pid = lock_holder(store_path, run_id)
    return None if pid == UNKNOWN else pid


__all__ = ["RunLocks", "holder", "lock_file", "lock_offset"]
