"""Value checks of a sweep file: each error names the file and the key (issue 11, item 1).

Kept apart from :mod:`basevolve.sweep.config`, which expands the grid: these only say
whether one TOML value is what its key needs, as one-line :class:`ConfigError` messages
(``<file>: sweep.endpoint_limit must be an integer >= 1, got 0``).
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from basevolve.config import RunConfig
from basevolve.errors import ConfigError
from basevolve.outside_parse import RefusedText, check_depth, load_toml

#: Deepest nesting of tables and arrays a sweep file may have.  The deepest real one is
#: ``[[grid]]`` > ``protocol_params`` > a list (4); why a bound at all: a file nested
#: 100,000 deep made the TOML parser raise RecursionError (issue 22, item 8), and values
#: nested a few hundred deep are hashed and printed recursively later on.
MAX_NESTING = 32

#: Python types a :class:`RunConfig` annotation accepts from TOML (an int is a float too).
TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,), "int": (int,), "float": (int, float), "bool": (bool,),
    "dict": (dict,),
}


def known_keys(table: dict[str, Any], known: tuple[str, ...], prefix: str,
               source: str) -> None:
    for key in table:
        if key not in known:
            raise ConfigError(f"{source}: unknown key {prefix}{key}; known keys: "
                              f"{', '.join(known)}")


def as_table(value: Any, where: str, source: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(f"{source}: {where} must be a table, got {value!r}")
    return value


def positive_int(value: Any, where: str, source: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{source}: {where} must be an integer >= 1, got {value!r}")


def check_type(value: Any, types: tuple[type, ...], where: str, source: str) -> None:
    if not is_instance(value, types):
        raise ConfigError(f"{source}: {where} has the wrong type: {value!r}")


def is_instance(value: Any, types: tuple[type, ...]) -> bool:
    """``isinstance`` where a TOML boolean is not an integer (``true`` is no budget)."""
    if isinstance(value, bool) and bool not in types:
        return False
    return isinstance(value, types)


def field_type(key: str) -> str:
    """The base type name of :class:`RunConfig` field ``key`` (``int | None`` -> ``int``)."""
    ann = str(next(f.type for f in fields(RunConfig) if f.name == key))
    base = ann.split("|")[0].strip()
    return base.split("[")[0]


def type_words(ann: str) -> str:
    return {"str": "a string", "int": "an integer", "float": "a number", "bool": "true/false",
            "dict": "a table"}.get(ann, ann)


def parse_toml(text: str, source: str) -> dict[str, Any]:
    """:func:`basevolve.outside_parse.load_toml` with every failure one
    :class:`ConfigError` naming the file (memory errors too, issue 32)."""
    if longest_dotted_key(text) > MAX_NESTING:
        raise _too_deep(source)
    try:
        data = load_toml(text)
    except RefusedText as exc:
        if exc.kind == "depth":
            raise _too_deep(source) from None
        raise ConfigError(f"sweep config {source!r} {exc}") from None
    check_nesting(data, source)
    return data


def check_nesting(data: Any, source: str) -> None:
    """Refuse tables/arrays nested deeper than :data:`MAX_NESTING` (the bounded walk of
    :func:`basevolve.outside_parse.check_depth`)."""
    try:
        check_depth(data, "tables and arrays", MAX_NESTING)
    except RefusedText:
        raise _too_deep(source) from None


def longest_dotted_key(text: str) -> int:
    """The most ``.`` separators in one dotted key of ``text`` (``[a.b.c]``, ``a.b = 1``,
    ``{a.b = 1}``), found by a scan that skips strings, comments and numbers.

    Why before parsing: ``tomllib`` handles a dotted key in time and memory quadratic in
    its length; one key of 100,000 parts (200 KB of text) grew past 20 GB.
    """
    longest = chain = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            i = _string_end(text, i)
            continue
        if ch == "#":
            i = text.find("\n", i)
            if i < 0:
                break
            chain = 0
        elif ch == ".":
            between_digits = 0 < i < n - 1 and text[i - 1].isdigit() and text[i + 1].isdigit()
            if not between_digits:
                chain += 1
                longest = max(longest, chain)
        elif not (ch.isalnum() or ch in "_- \t"):
            chain = 0
        i += 1
    return longest


def _string_end(text: str, i: int) -> int:
    """Index just past the TOML string starting at ``i`` (basic, literal, multi-line)."""
    quote = text[i] * 3 if text.startswith(text[i] * 3, i) else text[i]
    j = i + len(quote)
    while j < len(text):
        if text[j] == "\\" and quote[0] == '"':
            j += 2
            continue
        if text.startswith(quote, j):
            return j + len(quote)
        if text[j] == "\n" and len(quote) == 1:  # an unclosed one-line string
            return j
        j += 1
    return j


def _too_deep(source: str) -> ConfigError:
    return ConfigError(f"sweep config {source!r} nests tables or arrays more than "
                       f"{MAX_NESTING} levels deep; a sweep file needs at most a few "
                       "(see docs/sweeps.md)")
