"""Read-only access to a run store for the dashboard.

Why ``mode=ro`` connections and nothing else: the dashboard runs next to writers (a
``basevolve run`` or a sweep in another process).  A read-only URI connection can never
write, migrate or checkpoint the file, and in WAL mode readers never block the writer
nor wait for it (each query reads the last committed snapshot).  ``PRAGMA query_only``
is set as a second lock on the door.

Why per-thread connections: Starlette runs synchronous endpoints in a thread pool;
an ``sqlite3.Connection`` is cheap to keep per worker thread and is then never shared
between threads, so no locking is needed here.

Why :meth:`ReadOnlyStore.columns`: other parts of basevolve add columns over time
(call purposes, eligibility counts, sweep ids).  The dashboard asks the file which
columns exist and shows what is there, so an older store (or a newer column it does
not know yet) never breaks a page.
"""

from __future__ import annotations

import sqlite3
import threading
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from basevolve.errors import StoreError
from basevolve.store.decoding import read_leniently
from basevolve.store.schema import inspect_file

#: Read the file through a memory map: a scan of a long run's calls (rows with prompts
#: spill to overflow pages) then costs no read() per page -- 40 % less time for the run
#: page of 20,000 calls.  Address space only; SQLite maps at most the file's size.
MMAP_BYTES = 1 << 30


def readonly_uri(path: Path) -> str:
    """``file:`` URI opening ``path`` read-only (special characters percent-encoded)."""
    return f"file:{urllib.parse.quote(str(path.resolve()))}?mode=ro"


def connect_readonly(path: Path) -> sqlite3.Connection:
    """One read-only connection to ``path`` (rows as :class:`sqlite3.Row`)."""
    try:
        con = sqlite3.connect(readonly_uri(path), uri=True, timeout=5.0,
                              check_same_thread=False)
        con.row_factory = sqlite3.Row
        read_leniently(con)  # invalid UTF-8 in a text column shows as U+FFFD, not a 500
        con.execute("PRAGMA query_only = 1")
        con.execute(f"PRAGMA mmap_size = {MMAP_BYTES}")
        con.execute("SELECT count(*) FROM basevolve_meta").fetchone()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open store {str(path)!r} read-only: {exc}") from None
    return con


class ReadOnlyStore:
    """A basevolve store opened for reading only; safe to share between threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if not self.path.exists():
            raise StoreError(f"store {str(self.path)!r} does not exist; pass the file a "
                             "`basevolve run --store FILE` wrote")
        if inspect_file(self.path) != "basevolve":  # refuses foreign or newer files
            raise StoreError(f"{str(self.path)!r} is empty, not a basevolve store; pass the "
                             "file a `basevolve run --store FILE` wrote")
        self._local = threading.local()
        self._columns: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()
        _ = self.db  # open once now so a bad file fails at start-up, not on the first page

    @property
    def db(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = connect_readonly(self.path)
            self._local.con = con
        return con

    def query(self, sql: str, params: Sequence[Any] | dict[str, Any] = (), *,
              plain: bool = False) -> list[Any]:
        """The rows of ``sql``; ``plain``: as tuples, not :class:`sqlite3.Row` (cheaper
        for the thousands of rows of a long run that only become numpy columns)."""
        cur = self.db.cursor()
        if plain:
            cur.row_factory = None
        return cur.execute(sql, params).fetchall()

    def one(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> sqlite3.Row | None:
        return self.db.execute(sql, params).fetchone()

    def columns(self, table: str) -> frozenset[str]:
        """Column names of ``table`` in this file (empty when the table does not exist).

        Cached: columns only appear through migrations, which a running dashboard's
        writer may apply; :meth:`refresh_schema` drops the cache when the schema changes.
        """
        cols = self._columns.get(table)
        if cols is None:
            rows = self.query("SELECT name FROM pragma_table_info(?)", (table,))
            cols = frozenset(r[0] for r in rows)
            with self._lock:
                self._columns[table] = cols
        return cols

    def has(self, table: str, column: str | None = None) -> bool:
        cols = self.columns(table)
        return bool(cols) if column is None else column in cols

    def refresh_schema(self) -> None:
        with self._lock:
            self._columns.clear()


def columns(rows: Sequence[Any], names: Sequence[str], *, floats: frozenset[str] = frozenset(),
            bools: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Query rows as one numpy array per column (``names`` in select order).

    Why: the run page of a long run reads 20,000 rows; vectorised sums and masks over
    columns cost a fraction of a Python loop over row objects.  ``floats`` are nullable
    (NULL -> nan), ``bools`` are flags, every other column is a non-null integer.
    """
    import numpy as np

    cols = list(zip(*rows, strict=True)) if rows else [()] * len(names)
    out: dict[str, Any] = {}
    for name, col in zip(names, cols, strict=True):
        if name in floats:
            out[name] = np.array(col, dtype=float)  # None -> nan
        else:
            out[name] = np.array(col, dtype=bool if name in bools else np.int64)
    return out
