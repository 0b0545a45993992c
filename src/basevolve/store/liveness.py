"""Is a stored ``running`` run still driven by a live process? (issue 37, item 2)

Why: the engine writes ``running`` when a run starts and ``interrupted``/``failed``/
``finished`` when it ends; a process killed outright (SIGKILL, the OOM killer, a node
lost) writes nothing, and readers showed the run as ``running`` for ever.

How: every process driving a run holds an exclusive POSIX record lock on one byte of
``<store>.lock`` (offset ``crc32(run_id)``; :func:`basevolve.store.run_lock.run_lock`,
:class:`basevolve.sweep.locks.RunLocks`).  The kernel drops it the moment the process
dies, however it dies, so a reader asks the kernel (``F_GETLK``: tests the lock, never
takes it) and shows a ``running`` run nobody holds as ``interrupted``.  Why a lock and
not a heartbeat lease or a pid+host check: a lease needs a period, and a process
starved on a loaded machine (or a slow shared disk) misses its beats and looks dead
while it runs; a pid can be reused and means nothing on another host.  The lock is
exact at once, costs no writes, and holds across hosts wherever the store may be
shared at all -- SQLite's own locking is the same kind of POSIX lock, so a file system
that does not honour them cannot host a store safely either.  Where the lock cannot
be tested (``ENOLCK``) the stored status is shown unchanged.
"""

from __future__ import annotations

import fcntl
import os
import struct
import zlib
from pathlib import Path

_FLOCK = "@hhqqi"  # struct flock on Linux: l_type, l_whence, l_start, l_len, l_pid
UNKNOWN = -1  # holder(): the lock could not be tested


def lock_file(store_path: str | Path) -> Path:
    return Path(f"{store_path}.lock")


def lock_offset(run_id: str) -> int:
    return zlib.crc32(run_id.encode())


def lock_holder(store_path: str | Path, run_id: str) -> int | None:
    """Pid of the process holding ``run_id``'s lock; None if free (no lock file: nobody
    ever locked it here); :data:`UNKNOWN` when the file system cannot tell."""
    try:
        fd = os.open(lock_file(store_path), os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError:
        return UNKNOWN
    try:
        size = struct.calcsize(_FLOCK)
        arg = struct.pack(_FLOCK, fcntl.F_WRLCK, os.SEEK_SET, lock_offset(run_id), 1, 0)
        arg += b"\0" * (32 - size if size < 32 else 0)
        out = fcntl.fcntl(fd, fcntl.F_GETLK, arg)
        l_type, _, _, _, pid = struct.unpack(_FLOCK, out[:size])
        return None if l_type == fcntl.F_UNLCK else int(pid)
    except OSError:
        return UNKNOWN
    finally:
        os.close(fd)


def live_status(store_path: str | Path, run_id: str, status: str) -> str:
    """The status to show: a stored ``running`` nobody drives is ``interrupted``
    (``basevolve run --resume`` continues it, as after Ctrl-C)."""
    if status == "running" and lock_holder(store_path, run_id) is None:
        return "interrupted"
    return status


__all__ = ["UNKNOWN", "live_status", "lock_file", "lock_holder", "lock_offset"]
