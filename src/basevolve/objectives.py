"""Objectives of a multi-objective run: names, directions and the reference point (issue 36).

A task (built-in, user task, function task, OpenEvolve directory) may declare two or more
objectives, each the name of a metric its evaluation reports and a direction, ``"max"`` or
``"min"``: ``{"accuracy": "max", "seconds": "min"}``, or on the command line
``--objectives accuracy:max,seconds:min``.  A program's *objective vector* is then read from
its trusted evaluation's metrics in declaration order.

The vocabulary lives at the bottom of the layers (it imports only :mod:`basevolve.errors`)
because the config, the tasks, the protocols' parent choice, the allocator's reward, the
store, the analysis and the dashboard all speak it.  Dominance and hypervolume are in
:mod:`basevolve.fronts` (computed by moocore, never by hand).

The reference point bounds the hypervolume.  A task may declare one; otherwise it is
derived ONCE from the initial program's vector (:func:`derive_reference_point`) and stored
with the run, so a resume measures every front against the same point.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from basevolve.errors import ConfigError

DIRECTIONS = ("max", "min")
MAX_OBJECTIVES = 8
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")


@dataclass(frozen=True)
class Objectives:
    """Two or more named objectives with their directions, in declaration order."""

    names: tuple[str, ...]
    directions: tuple[str, ...]

    @property
    def maximise(self) -> tuple[bool, ...]:
        """Per objective: is higher better (moocore's ``maximise=`` argument)."""
        return tuple(d == "max" for d in self.directions)

    def as_dict(self) -> dict[str, str]:
        """``{name: direction}`` in declaration order: how a run stores its objectives."""
        return dict(zip(self.names, self.directions, strict=True))

    def describe(self) -> str:
        """``accuracy (higher is better), seconds (lower is better)``: for prompts and pages."""
        word = {"max": "higher is better", "min": "lower is better"}
        return ", ".join(f"{n} ({word[d]})" for n, d in zip(self.names, self.directions, strict=True))

    def missing(self, metrics: Mapping[str, Any]) -> list[str]:
        """The declared names the metrics do not report."""
        return [n for n in self.names if n not in metrics]

    def vector(self, metrics: Mapping[str, Any]) -> tuple[float, ...] | None:
        """The objective vector of one evaluation's metrics, or None when any objective is
        missing, not a number, or not finite (such a program is on no front)."""
        out: list[float] = []
        for n in self.names:
            v = metrics.get(n)
            if isinstance(v, bool) or not isinstance(v, int | float):
                return None
            f = float(v)
            if not math.isfinite(f):
                return None
            out.append(f)
        return tuple(out)

    def minimised(self, vector: Sequence[float]) -> tuple[float, ...]:
        """The vector with every "max" objective negated, so that lower is better for all."""
        return tuple(-v if m else v for v, m in zip(vector, self.maximise, strict=True))


def _bad(what: str, why: str) -> ConfigError:
    return ConfigError(f"{what}: {why}")


def parse_objectives(spec: Any, *, what: str = "--objectives") -> Objectives | None:
    """Objectives from ``"a:max,b:min"`` or a mapping ``{"a": "max", "b": "min"}``.

    None or an empty value means a single-objective run.  Every mistake is one line naming
    ``what`` (the flag, keyword or config key the caller used), the value and the fix."""
    if spec is None or spec == "" or spec == {}:
        return None
    pairs: list[tuple[str, str]]
    if isinstance(spec, str):
        pairs = []
        for part in spec.split(","):
            name, sep, direction = part.strip().rpartition(":")
            if not sep:
                raise _bad(what, f"{part.strip()!r} has no direction; write NAME:max or "
                                 f"NAME:min, e.g. accuracy:max,seconds:min")
            pairs.append((name.strip(), direction.strip()))
    elif isinstance(spec, Mapping):
        pairs = [(str(k), v) for k, v in spec.items()]
    else:
        raise _bad(what, f"expected NAME:max,NAME:min or a mapping of name to 'max'/'min', "
                         f"got {type(spec).__name__}")
    seen: set[str] = set()
    for name, direction in pairs:
        if not _NAME.match(name):
            raise _bad(what, f"objective name {name[:80]!r} is not a metric name (letters, "
                             f"digits, _ . -; starting with a letter or _)")
        if direction not in DIRECTIONS:
            raise _bad(what, f"objective {name!r} has direction {str(direction)[:40]!r}; "
                             f"use 'max' or 'min'")
        if name in seen:
            raise _bad(what, f"objective {name!r} is named twice")
        seen.add(name)
    if len(pairs) < 2:
        raise _bad(what, f"{len(pairs)} objective declared; declare two or more (a single "
                         f"objective is the task's score: leave the option out)")
    if len(pairs) > MAX_OBJECTIVES:
        raise _bad(what, f"{len(pairs)} objectives declared; at most {MAX_OBJECTIVES}")
    return Objectives(tuple(n for n, _ in pairs), tuple(d for _, d in pairs))


def parse_reference_point(spec: Any, objectives: Objectives, *,
                          what: str = "--reference-point") -> tuple[float, ...]:
    """A reference point from ``"0,10"`` or a sequence of numbers, one per objective."""
    items: Sequence[Any]
    if isinstance(spec, str):
        items = [s.strip() for s in spec.split(",")]
    elif isinstance(spec, Sequence):
        items = list(spec)
    else:
        raise _bad(what, f"expected {len(objectives.names)} comma-separated numbers")
    if len(items) != len(objectives.names):
        raise _bad(what, f"{len(items)} values for {len(objectives.names)} objectives "
                         f"({', '.join(objectives.names)}); give one number per objective")
    out: list[float] = []
    for name, item in zip(objectives.names, items, strict=True):
        try:
            f = float(item)
        except (TypeError, ValueError):
            raise _bad(what, f"value {str(item)[:40]!r} for {name!r} is not a number") from None
        if isinstance(item, bool) or not math.isfinite(f):
            raise _bad(what, f"value {str(item)[:40]!r} for {name!r} is not a finite number")
        out.append(f)
    return tuple(out)


def derive_reference_point(initial: Sequence[float], objectives: Objectives) -> tuple[float, ...]:
    """The reference point derived from the initial program's vector: each objective made
    worse by ``max(|v|, 1)``, so a child that trades some of one objective for another
    still counts, and the point is fixed for the whole run (stored, reused on resume)."""
    return tuple(v - max(abs(v), 1.0) if m else v + max(abs(v), 1.0)
                 for v, m in zip(initial, objectives.maximise, strict=True))


def objectives_from_stored(stored: Mapping[str, str] | None) -> Objectives | None:
    """The objectives a run stored (``Objectives.as_dict()``), or None for a single score."""
    return parse_objectives(dict(stored), what="stored objectives") if stored else None
