"""Lease a private block of unprivileged uids for one sandbox pool.

Why: as root, each worker slot runs programs under its own uid so that RLIMIT_NPROC
(counted per uid by the kernel, across the whole machine) and the fallback's
``kill(-1)``-as-that-uid clean-up touch only that slot's programs.  Two pools that used
the same uids -- two ``basevolve run`` processes side by side, or a benchmark next to a
run -- would share the process limit and could kill each other's evaluations.  So each
pool holds an exclusive ``flock`` on one block file for as long as it lives; the kernel
drops the lock when the process dies (even by SIGKILL), so a crashed pool never leaks
its block.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path
from typing import IO

from basevolve.errors import SandboxError

BLOCK_WIDTH = 256  # uids per block: the most workers one pool may have
MAX_BLOCKS = 4096


def lease_dir() -> Path:
    return Path(tempfile.gettempdir()) / "basevolve-uid-leases"


class UidLease:
    """An exclusive block ``[first, first + BLOCK_WIDTH)`` of uids; release with close()."""

    def __init__(self, uid_base: int, workers: int) -> None:
        if workers > BLOCK_WIDTH:
            raise SandboxError(
                f"a sandbox pool may have at most {BLOCK_WIDTH} workers, got {workers}"
            )
        directory = lease_dir()
        directory.mkdir(mode=0o700, exist_ok=True)
        for block in range(MAX_BLOCKS):
            handle: IO[str] = open(directory / f"{uid_base}-{block}.lock", "a")
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            os.set_inheritable(handle.fileno(), False)
            self._handle: IO[str] | None = handle
            self.first = uid_base + block * BLOCK_WIDTH
            return
        raise SandboxError(
            f"all {MAX_BLOCKS} sandbox uid blocks under {directory} are in use; "
            "close other basevolve processes or remove stale lock files"
        )

    def uid(self, slot: int) -> int:
        return self.first + slot

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()  # closing the only descriptor releases the flock
            self._handle = None
