"""Type checks for arguments that the CLI's argparse would have converted.

A Python caller can pass ``arms="3"`` or ``resamples=None``; without a check these
surface as a ``TypeError`` deep inside validation.  Here they become one
:class:`~basevolve.errors.ConfigError` naming the keyword as the caller wrote it
(``arms=``, :mod:`basevolve.argnames`; issue 37, item 8: ``budget='8'`` was told about
``--budget``), the expected type and the value, like every other bad input (issue 17:
never a bare built-in error).
"""

from __future__ import annotations

import types
import typing
from typing import Any

from basevolve.errors import ConfigError

_UNIONS = (typing.Union, types.UnionType)
_KINDS = {int: "an integer", float: "a number", str: "a string", bool: "True or False",
          dict: "a dict"}


def keyword(name: str) -> str:
    """How a Python caller wrote argument ``name`` (``arms=``; :mod:`basevolve.argnames`)."""
    return f"{name}="


def check_type(name: str, value: Any, hint: Any) -> None:
    """Refuse a value of the wrong type with a ConfigError naming the keyword.

    Why: the CLI's argparse converts types before RunConfig sees them; a Python caller
    can pass ``arms="3"``, which would surface as a TypeError deep in validation.
    """
    members = typing.get_args(hint) if typing.get_origin(hint) in _UNIONS else (hint,)
    allowed = [t for t in members if t is not type(None)]
    optional = type(None) in members
    if value is None and optional:
        return
    for t in allowed:
        origin = typing.get_origin(t) or t
        if origin is float and isinstance(value, int | float) and not isinstance(value, bool):
            return
        if origin is int and isinstance(value, int) and not isinstance(value, bool):
            return
        if origin not in (int, float) and isinstance(origin, type) and isinstance(value, origin):
            return
        if origin is Any:
            return
    kinds = " or ".join(_KINDS.get(typing.get_origin(t) or t, str(t)) for t in allowed)
    raise ConfigError(f"{keyword(name)} must be {kinds}{' or None' if optional else ''}, "
                      f"got {value!r}")
