"""Text from outside, made storable: the one rule for lone surrogates (issue 22, items 1-2).

Why this exists: a Python ``str`` may hold *lone surrogates* (code points U+D800-U+DFFF
that are not half of a pair).  A program can make one (``chr(0xD800)``), a server can
send one as a JSON escape (``"\\ud800"``), and a decoder with ``surrogateescape`` turns
every undecodable byte into one.  UTF-8 cannot encode them, so SQLite's driver raised
``UnicodeEncodeError`` on the row that held one: the call stayed ``pending`` and the run
crashed again on every ``--resume``.

The rule (stated in docs/running.md, "Text from outside"):

* a surrogate *pair* (high then low, as UTF-16 and JSON write astral characters) becomes
  the character it encodes -- lossless;
* every other surrogate becomes U+FFFD (REPLACEMENT CHARACTER) -- the stated
  replacement; every other character is kept as it is.

Where it is applied, once each: the records that carry outside text into the engine
(:class:`~basevolve.records.Completion`, :class:`~basevolve.records.Attempt`,
:class:`~basevolve.records.ExecResult`, :class:`~basevolve.records.Evaluation`) clean
their text fields when built, so prompts, budgets and the terminal never meet a lone
surrogate; and the store cleans every text it binds
(:class:`basevolve.store.connection.TextSafeConnection`), so no column can crash a
write, whatever channel the text came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

#: What a lone surrogate becomes.
REPLACEMENT = "\ufffd"

_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_safe(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD.

    Returns ``text`` itself (no copy) when it holds no surrogate, which is the common
    case and costs one C-level scan.
    """
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    # UTF-16 joins a high+low pair into one astral character; "replace" turns what is
    # left alone into U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def utf8_safe_optional(text: str | None) -> str | None:
    """:func:`utf8_safe` for a field that may be None (None stays None)."""
    return None if text is None else utf8_safe(text)


def safe_params(params: Any) -> Any:
    """SQL parameters with every ``str`` made :func:`utf8_safe` (other values untouched;
    ``params`` itself when nothing changed).

    Accepts what ``sqlite3`` accepts: a sequence (positional ``?``) or a mapping (named
    ``:name``).  Anything else is passed through for ``sqlite3`` to judge.
    """
    if isinstance(params, Mapping):
        named = {k: utf8_safe(v) if isinstance(v, str) else v for k, v in params.items()}
        return params if all(named[k] is v for k, v in params.items()) else named
    if isinstance(params, Sequence) and not isinstance(params, str | bytes):
        values = [utf8_safe(v) if isinstance(v, str) else v for v in params]
        return params if all(a is b for a, b in zip(values, params, strict=True)) else values
    return params


__all__ = ["REPLACEMENT", "safe_params", "utf8_safe", "utf8_safe_optional"]
