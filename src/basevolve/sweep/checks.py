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
