"""What a failed store read or write means for the user, in one line (issue 22, items 7, 9).

Why one place: SQLite reports a damaged file, a full disk, a read-only file and a busy
lock as ``sqlite3`` exceptions that can surface from any statement of any command
(``runs``, ``export``, ``analyze``, ``report``, ``replay``, ``advise``, ``run``,
``sweep``...).  A traceback there tells the user nothing they can act on.  This module
turns such an exception into a :class:`~basevolve.errors.StoreError` whose message names
the file, what happened, whether anything was lost and what to do.

Why "nothing already stored was lost" is true: every event is its own committed
transaction (WAL journal, :mod:`basevolve.store.sqlite`); a write that fails for lack of
space is rolled back by SQLite and the rows committed before it stay readable, so
``basevolve run --resume`` continues from them (calls that were in flight are
re-issued, as after a crash).
"""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

from basevolve.errors import StoreError

#: errno values that mean "no space": a full disk, a quota, a file-size limit.
NO_SPACE = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def kind_of(exc: BaseException) -> str:
    """``full``, ``damaged``, ``io``, ``readonly``, ``busy`` or ``other``."""
    if isinstance(exc, OSError):
        return "full" if exc.errno in NO_SPACE else "io"
    name = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    if name.startswith("SQLITE_FULL") or "disk is full" in text:
        return "full"
    if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or "malformed" in text \
            or "not a database" in text:
        return "damaged"
    if name.startswith("SQLITE_IOERR") or "disk i/o error" in text:
        return "io"
    if name.startswith("SQLITE_READONLY") or "readonly" in text:
        return "readonly"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "locked" in text:
        return "busy"
    return "other"


def store_failure(exc: sqlite3.Error | OSError, path: str | Path | None, *,
                  run_id: str | None = None) -> StoreError:
    """The :class:`StoreError` to raise for ``exc`` on store ``path`` (one line).

    ``run_id``: the run being written, so the message can give the exact resume command.
    """
    where = f"store {str(path)!r}" if path is not None else "the run store"
    if isinstance(exc, OSError):  # a plain file (export, report, outputs), not SQLite
        where = repr(str(exc.filename)) if exc.filename else "the file being written"
        detail = exc.strerror or str(exc)
    else:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    kind = kind_of(exc)
    if run_id is not None and path is not None:
        again = f"continue with `basevolve run --resume {run_id} --store {path}`"
    else:
        again = "run the command again (a run continues with `basevolve run --resume " \
                "RUN_ID --store FILE`)"
    if kind == "full":
        return StoreError(f"the disk holding {where} is full ({detail}); nothing already "
                          f"stored was lost: free some space, then {again}")
    if kind == "io":
        return StoreError(f"cannot write {where}: {detail}; nothing already stored was lost: "
                          f"check the disk, then {again}")
    if kind == "damaged":
        shown = str(path) if path is not None else "STORE"
        return StoreError(f"{where} is damaged ({detail}): restore it from a copy, or save "
                          f"what is readable with `sqlite3 {shown} .recover | sqlite3 "
                          "recovered.sqlite`")
    if kind == "readonly":
        return StoreError(f"{where} cannot be written ({detail}); use a writable --store")
    if kind == "busy":
        return StoreError(f"{where} is locked by another process ({detail}); try again "
                          "when it is done")
    return StoreError(f"{where}: {detail}")


__all__ = ["NO_SPACE", "kind_of", "store_failure"]
