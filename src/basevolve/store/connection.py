"""The store's SQLite connection: every text it binds is made storable first.

Why at the connection and not in each ``insert_*``: text from outside (LLM replies,
server error messages, program output and exceptions, and any channel added later)
reaches many columns through many methods, and one lone surrogate in any of them made
``sqlite3`` raise ``UnicodeEncodeError`` mid-run (issue 22, items 1-2).  Binding is the
one place all of them pass, so the rule of :mod:`basevolve.safe_text` is applied there,
for every statement of this connection: a new column or table is covered without a
new special case.  Reads are untouched (what is stored is valid UTF-8).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import Any

from basevolve.safe_text import safe_params


class TextSafeCursor(sqlite3.Cursor):
    """A cursor whose ``execute`` / ``executemany`` bind only storable text."""

    def execute(self, sql: str, parameters: Any = (), /) -> TextSafeCursor:  # type: ignore[override]
        return super().execute(sql, safe_params(parameters))  # type: ignore[return-value]

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /  # type: ignore[override]
                    ) -> TextSafeCursor:
        return super().executemany(  # type: ignore[return-value]
            sql, (safe_params(p) for p in seq_of_parameters))


class TextSafeConnection(sqlite3.Connection):
    """``sqlite3.connect(..., factory=TextSafeConnection)``: all statements go through
    :class:`TextSafeCursor` (``Connection.execute`` would otherwise bind directly)."""

    def cursor(self, factory: Any = TextSafeCursor) -> Any:  # type: ignore[override]
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> TextSafeCursor:  # type: ignore[override]
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /  # type: ignore[override]
                    ) -> TextSafeCursor:
        return self.cursor().executemany(sql, seq_of_parameters)


__all__ = ["TextSafeConnection", "TextSafeCursor"]
