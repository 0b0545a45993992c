"""A sweep's runs, kept lazy (issue 22, item 6).

Why lazy: each expanded run used to be kept as a validated :class:`RunConfig` with its
own dictionaries, about 10 KB per run once planned.  Runs of a grid differ in few
fields, and those of one *cell* (one [[grid]] combination without the seed) only in
their seed and id.  So :class:`GridRuns` keeps one validated config per cell (a
:class:`Template`) and, per run, only its template's index, its seed and its id
(about 150 bytes).  A :class:`SweepRun` is a small handle made on demand; its
``config`` is the template's with the run's seed and id, built when asked for (the
template was validated once, and the seed is checked when the run is expanded).
File order, run ids and cells are exactly those of an eager expansion.

How a file's [[grid]] blocks are counted (bounded by ``max_runs``), expanded and named
is :mod:`basevolve.sweep.expansion`, which fills a :class:`GridRuns` through
:meth:`GridRuns.add_template` and :meth:`GridRuns.add`.
"""

from __future__ import annotations

import copy
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from basevolve.config import RunConfig


def endpoint_key(cfg: RunConfig) -> str:
    """The server a run's calls go to: its base URL, or the in-process embedded model."""
    if cfg.base_url:
        return cfg.base_url.rstrip("/")
    return f"embedded:{cfg.model}"


@dataclass(frozen=True)
class Template:
    """What the runs of one cell share: a validated config (with the seed and id of the
    cell's first run), the cell's coordinates and the [[grid]] block it came from."""

    config: RunConfig
    cell: tuple[tuple[str, Any], ...]  # the run's coordinates without the seed
    block: int  # index of its [[grid]] block
    endpoint: str


class SweepRun:
    """One run of the grid: a handle on :class:`GridRuns` (made on demand, cheap).

    ``config`` is built on first access (and kept by this handle only), so walking the
    grid costs no memory per run.
    """

    __slots__ = ("_config", "_grid", "index")

    def __init__(self, grid: GridRuns, index: int) -> None:
        self._grid, self.index = grid, index
        self._config: RunConfig | None = None

    @property
    def config(self) -> RunConfig:
        if self._config is None:
            self._config = self._grid.config_at(self.index)
        return self._config

    @property
    def template(self) -> Template:
        return self._grid.template_at(self.index)

    @property
    def cell(self) -> tuple[tuple[str, Any], ...]:
        return self.template.cell

    @property
    def block(self) -> int:
        return self.template.block

    @property
    def run_id(self) -> str:
        return self._grid.run_id_at(self.index)

    @property
    def endpoint(self) -> str:
        return self.template.endpoint

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SweepRun) and (self.run_id, self.config) == (
            other.run_id, other.config)

    def __hash__(self) -> int:
        return hash(self.run_id)

    def __repr__(self) -> str:
        return f"SweepRun({self.run_id!r})"


class GridRuns(Sequence[SweepRun]):
    """The runs of a sweep in file order, stored compactly (see the module docstring)."""

    def __init__(self) -> None:
        self.templates: list[Template] = []
        # (block, the run's keys but its seed) -> (template, the id's readable part)
        self._template_of: dict[tuple[int, tuple[Any, ...]], tuple[int, list[str]]] = {}
        self._tidx = array("L")  # run -> template index
        self._seeds = array("q")  # run -> seed (int64, as the store keeps it)
        self._ids: list[str] = []

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, i: int) -> SweepRun: ...

    @overload
    def __getitem__(self, i: slice) -> list[SweepRun]: ...

    def __getitem__(self, i: int | slice) -> SweepRun | list[SweepRun]:
        if isinstance(i, slice):
            return [SweepRun(self, j) for j in range(*i.indices(len(self)))]
        n = len(self)
        if not -n <= i < n:
            raise IndexError(i)
        return SweepRun(self, i % n)

    def __iter__(self) -> Iterator[SweepRun]:
        return (SweepRun(self, j) for j in range(len(self)))

    def run_id_at(self, i: int) -> str:
        return self._ids[i]

    def template_at(self, i: int) -> Template:
        return self.templates[self._tidx[i]]

    def template_index(self, i: int) -> int:
        return self._tidx[i]

    def config_at(self, i: int) -> RunConfig:
        """Run ``i``'s config: its template's, with the run's seed and id.

        Why a copy, not ``RunConfig(...)``: the template was validated when the grid was
        expanded and a run differs from it only in seed and id (the seed was checked
        then too), so validating again per run would only cost time.
        """
        cfg = copy.copy(self.template_at(i).config)
        object.__setattr__(cfg, "seed", self._seeds[i])
        object.__setattr__(cfg, "run_id", self._ids[i])
        return cfg

    def ids(self) -> Iterator[str]:
        return iter(self._ids)

    def representatives(self) -> list[SweepRun]:
        """One run per template (what is the same for every run of a cell)."""
        first: dict[int, int] = {}
        for j, t in enumerate(self._tidx):
            first.setdefault(t, j)
        return [SweepRun(self, j) for j in first.values()]

    def total_budget(self) -> int:
        """Sum of C over all runs with a call budget (per template, times its runs); a
        cost-budget run's number of calls is not known before it ends (sweep/cost.py)."""
        return sum(self.templates[t].config.budget * n for t, n in self._per_template()
                   if self.templates[t].config.budget_kind == "calls")

    def cost_runs(self) -> int:
        """Runs with a FLOPs, token or dollar budget (not counted by :meth:`total_budget`)."""
        return sum(n for t, n in self._per_template()
                   if self.templates[t].config.budget_kind != "calls")

    def _per_template(self) -> list[tuple[int, int]]:
        counts: dict[int, int] = {}
        for t in self._tidx:
            counts[t] = counts.get(t, 0) + 1
        return list(counts.items())

    # ------------------------------------------------- filled by sweep/expansion.py
    def known(self, key: tuple[int, tuple[Any, ...]]) -> tuple[int, list[str]] | None:
        """The template index and id's readable part of the cell ``key`` (its block and
        its keys but the seed), once its first run was added; else None."""
        return self._template_of.get(key)

    def add_template(self, key: tuple[int, tuple[Any, ...]], template: Template,
                     readable: list[str]) -> int:
        """Keep a new cell's template (its first run's validated config); its index."""
        self.templates.append(template)
        self._template_of[key] = (len(self.templates) - 1, readable)
        return len(self.templates) - 1

    def add(self, template: int, seed: int, run_id: str) -> None:
        """Append one run: its template's index, its seed and its id."""
        self._tidx.append(template)
        self._seeds.append(seed)
        self._ids.append(run_id)


__all__ = ["GridRuns", "SweepRun", "Template", "endpoint_key"]
