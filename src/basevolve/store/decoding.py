"""Reading text a store holds that is not valid UTF-8 (issue 22, item 11).

SQLite does not check that TEXT is UTF-8: a store written by another tool, a row
patched by hand or a damaged page can hold any bytes.  Python's ``sqlite3`` then raises
``OperationalError: Could not decode to UTF-8 column ...`` on the row, so one bad value
made every dashboard page, ``basevolve runs`` and ``basevolve export`` fail.  Readers
install :func:`decode_text` as the connection's ``text_factory``: valid UTF-8 reads as
before, and each invalid byte reads as U+FFFD (the stated replacement), so the rest of
the row, and of the store, stays readable.  Nothing is written back by reading.
"""

from __future__ import annotations

import sqlite3

REPLACEMENT = "\ufffd"


def decode_text(raw: bytes) -> str:
    """``raw`` as UTF-8, each invalid byte sequence replaced by U+FFFD."""
    return raw.decode("utf-8", "replace")


def read_leniently(con: sqlite3.Connection) -> sqlite3.Connection:
    """Make ``con`` read invalid UTF-8 text with replacements instead of raising."""
    con.text_factory = decode_text
    return con
