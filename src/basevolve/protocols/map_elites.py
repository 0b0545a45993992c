"""MAP-Elites feature coordinates for the OpenEvolve-style protocol (paper, Table 1
"OpenEvolve"; behaviour described in our spec, Part 2 §1.2).

Built-in feature dimensions:

* ``complexity``: code length in characters;
* ``diversity``: mean "fast code diversity" of the program to a reference set of up to
  ``reference_size`` programs (the first distinct programs seen; OpenEvolve rebuilds
  its set greedily only while it is smaller than that, i.e. also from the earliest
  programs);
* ``score``: the program's fitness;
* any other name: the task metric of that name (0 when the program lacks it).

Each raw value is min-max scaled with running minimum and maximum per dimension (0.5
while they are equal) and binned as ``floor(scaled * bins)`` clipped to ``[0, bins-1]``.
Everything is deterministic; per-code diversity values are cached (LRU).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence

BUILTIN_FEATURES = ("complexity", "diversity", "score")


def fast_diversity(a: str, b: str) -> float:
    """0 for identical code, else 0.1·|Δlength| + 10·|Δlines| + 0.5·|charset symmetric
    difference| (cheap: no alignment; spec Part 2 §1.2)."""
    if a == b:
        return 0.0
    return (0.1 * abs(len(a) - len(b)) + 10.0 * abs(a.count("\n") - b.count("\n"))
            + 0.5 * len(set(a) ^ set(b)))


class FeatureSpace:
    """Running-scaled feature coordinates over ``dims`` with ``bins`` bins each."""

    def __init__(self, dims: Sequence[str], bins: int, reference_size: int = 20,
                 cache_size: int = 1000) -> None:
        self.dims = tuple(dims)
        self.bins = bins
        self.reference_size = reference_size
        self.reference: list[str] = []
        self._ref_stats: list[tuple[int, int, frozenset[str]]] = []
        self.lo: dict[str, float] = {}
        self.hi: dict[str, float] = {}
        self._cache: OrderedDict[str, float] = OrderedDict()
        self._cache_size = cache_size

    def _diversity(self, code: str) -> float:
        hit = self._cache.get(code)
        if hit is not None:
            self._cache.move_to_end(code)
            return hit
        # fast_diversity against each reference, with the reference sides precomputed
        n, lines, chars = len(code), code.count("\n"), frozenset(code)
        dists = [0.1 * abs(n - rn) + 10.0 * abs(lines - rl) + 0.5 * len(chars ^ rc)
                 for r, (rn, rl, rc) in zip(self.reference, self._ref_stats, strict=True)
                 if r != code]
        value = sum(dists) / len(dists) if dists else 0.0
        self._cache[code] = value
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return value

    def observe(self, code: str) -> None:
        """Grow the reference set with a new distinct program while it is small."""
        if len(self.reference) < self.reference_size and code not in self.reference:
            self.reference.append(code)
            self._ref_stats.append((len(code), code.count("\n"), frozenset(code)))
            self._cache.clear()  # reference changed: cached means are stale

    def raw(self, code: str, fitness: float, metrics: Mapping[str, float] | None) -> dict[str, float]:
        out: dict[str, float] = {}
        for d in self.dims:
            if d == "complexity":
                out[d] = float(len(code))
            elif d == "diversity":
                out[d] = self._diversity(code)
            elif d == "score":
                out[d] = fitness
            else:
                v = (metrics or {}).get(d, 0.0)
                out[d] = float(v) if isinstance(v, int | float) and math.isfinite(v) else 0.0
        return out

    def update(self, raw: Mapping[str, float]) -> None:
        for d, v in raw.items():
            self.lo[d] = min(self.lo.get(d, v), v)
            self.hi[d] = max(self.hi.get(d, v), v)

    def scaled(self, raw: Mapping[str, float]) -> dict[str, float]:
        out = {}
        for d, v in raw.items():
            lo, hi = self.lo.get(d, v), self.hi.get(d, v)
            out[d] = 0.5 if hi <= lo else min(1.0, max(0.0, (v - lo) / (hi - lo)))
        return out

    def cell(self, raw: Mapping[str, float]) -> tuple[int, ...]:
        """Bin coordinates of ``raw`` with the current scaling (call :meth:`update` first
        to include the value itself, as OpenEvolve does)."""
        s = self.scaled(raw)
        return tuple(min(self.bins - 1, max(0, int(s[d] * self.bins))) for d in self.dims)
