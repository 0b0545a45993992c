"""Declared parameters: ``--protocol-param`` / ``--task-param key=value`` validated once.

Why declarations rather than ``**kwargs`` passed through: a typo such as
``n_islnads=4`` must be one clear error naming the known keys before anything is
stored, not a ``TypeError`` deep in a constructor (DESIGN style rule 2: configuration is
frozen data validated at the boundary).  Each protocol (and each task that takes
parameters, e.g. ``prompt_optimization``) lists its parameters, with defaults and their
sources, as ``PARAMS``; :func:`parse_params` turns user strings (or already typed values
from a TOML file or a stored config) into typed values.  ``flag`` and ``what`` name the
option in messages (``--protocol-param`` of a protocol, ``--task-param`` of a task).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from basevolve.errors import ConfigError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True, slots=True)
class Param:
    """One declared parameter of a protocol.

    ``kind`` is ``int``, ``float``, ``bool``, ``str`` or :class:`~pathlib.Path` (a file
    path, stored absolute so a resume from another folder finds the same file; an empty
    value means "none given"); ``choices`` restricts the value
    to a set; ``low``/``high`` bound numbers (inclusive).  ``help`` says what it does and
    where the default comes from.
    """

    name: str
    kind: type
    default: Any
    help: str = ""
    choices: tuple[Any, ...] | None = None
    low: float | None = None
    high: float | None = None

    def convert(self, value: Any, owner: str, *, flag: str = "--protocol-param",
                what: str = "protocol") -> Any:
        """Typed, range-checked value or :class:`ConfigError` naming key and fix."""
        where = f"{flag} {self.name}={value!r} for {what} {owner!r}"
        out = _coerce(self.kind, value)
        if out is None:
            raise ConfigError(f"{where}: expected {self.kind.__name__}" + self._allowed())
        if self.choices is not None and out not in self.choices:
            raise ConfigError(f"{where}: not one of {', '.join(map(str, self.choices))}")
        if isinstance(out, int | float) and not isinstance(out, bool):
            if (self.low is not None and out < self.low) or (
                    self.high is not None and out > self.high):
                lo = "-inf" if self.low is None else self.low
                hi = "inf" if self.high is None else self.high
                raise ConfigError(f"{where}: out of range [{lo}, {hi}]")
        return out

    def _allowed(self) -> str:
        if self.choices is not None:
            return f" (one of {', '.join(map(str, self.choices))})"
        return ""


def _coerce(kind: type, value: Any) -> Any:
    if kind is bool:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        return True if text in _TRUE else False if text in _FALSE else None
    if kind is int:
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        try:
            f = float(str(value).strip())
        except ValueError:
            return None
        return int(f) if math.isfinite(f) and f == int(f) else None
    if kind is float:
        if isinstance(value, bool):
            return None
        try:
            f = float(value) if isinstance(value, int | float) else float(str(value).strip())
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    if kind is str:
        return value if isinstance(value, str) else str(value)
    if kind is Path:
        text = str(value).strip()
        return str(Path(text).expanduser().resolve()) if text else ""
    return value if isinstance(value, kind) else None


def parse_params(declared: Sequence[Param], raw: Mapping[str, Any] | None,
                 owner: str, *, flag: str = "--protocol-param",
                 what: str = "protocol") -> dict[str, Any]:
    """Validate ``raw`` against ``declared``; returns only the keys given (typed).

    Defaults are *not* filled in, so a stored config records what the user chose and a
    later default change cannot silently alter a resumed run's recorded intent.
    """
    known = {p.name: p for p in declared}
    out: dict[str, Any] = {}
    for key, value in (raw or {}).items():
        if key not in known:
            names = ", ".join(sorted(known)) or "(it takes none)"
            raise ConfigError(f"unknown {flag} {key!r} for {what} {owner!r}; known: {names}")
        out[key] = known[key].convert(value, owner, flag=flag, what=what)
    return out


def split_assignments(items: Sequence[str] | None, flag: str = "--protocol-param",
                      example: str = "n_islands=4") -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``; a missing ``=`` is a clear error."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{flag} {item!r}: expected key=value, e.g. {example}")
        if key.strip() in out:
            raise ConfigError(f"{flag} {key.strip()!r} given twice")
        out[key.strip()] = value.strip()
    return out
