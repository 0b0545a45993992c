"""A sweep's grid, bounded and kept lazy (issue 22, item 6).

Why bounded: a grid is a product, and one typo (``seeds = 100000000``) named 10^8 runs;
``basevolve sweep --status`` then expanded all of them and grew to 20 GB before the
kernel killed it.  The number of runs is counted from the lists' lengths *before*
anything is expanded, and a grid above ``max_runs`` (:data:`MAX_RUNS` unless the file's
``[sweep]`` table raises it) is one line naming the count and the key to raise it.

Why lazy: each expanded run used to be kept as a validated :class:`RunConfig` with its
own dictionaries, about 10 KB per run once planned.  Runs of a grid differ in few
fields, and those of one *cell* (one [[grid]] combination without the seed) only in
their seed and id.  So :class:`GridRuns` keeps one validated config per cell (a
:class:`Template`) and, per run, only its template's index, its seed and its id
(about 150 bytes).  A :class:`SweepRun` is a small handle made on demand; its
``config`` is the template's with the run's seed and id, built when asked for (the
template was validated once, and the seed is checked when the run is expanded).
File order, run ids and cells are exactly those of an eager expansion.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import re
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from basevolve.config import MAX_RUN_ID, MAX_SEED, RUN_ID_PATTERN, RunConfig
from basevolve.engine.run_checks import checked_run
from basevolve.errors import ConfigError
from basevolve.sweep import cost, models
from basevolve.tasks.identity import resolve_task_spec

POWERS_OF_2 = "powers-of-2"
#: Most runs a sweep may name unless its ``[sweep]`` table sets ``max_runs``.  The
#: paper's largest grid (the depth-breadth preset) has 6,210; 100,000 runs take about
#: 15 MB to plan and a few seconds to validate, and are weeks of GPU time.
MAX_RUNS = 100_000
#: Keys left out of a run's identity hash (see :mod:`basevolve.sweep.config`).
NOT_IDENTITY = ("base_url", "request_timeout", "call_timeout")
#: Keys whose values decide how many runs one combination gives (``powers-of-2``).
_SHAPE_KEYS = frozenset(("budget", "depth", "breadth"))


def endpoint_key(cfg: RunConfig) -> str:
    """The server a run's calls go to: its base URL, or the in-process embedded model."""
    if cfg.base_url:
        return cfg.base_url.rstrip("/")
    return f"embedded:{cfg.model}"


def powers_of_two(budget: int) -> list[int]:
    """T in {1, 2, 4, ..., C} (paper Section 4): the powers of 2 dividing C, then C itself."""
    ts, t = [], 1
    while t < budget and budget % t == 0:
        ts.append(t)
        t *= 2
    return [*ts, budget]


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

    def _add(self, template: int, seed: int, run_id: str) -> None:
        self._tidx.append(template)
        self._seeds.append(seed)
        self._ids.append(run_id)


# ------------------------------------------------------------------ expansion
@dataclass(frozen=True)
class _Factor:
    """One axis of a block's product: a key (or a zip group) and its values."""

    keys: tuple[str, ...]
    values: Sequence[Any]  # one value per entry; a tuple per entry for a zip group

    def parts(self) -> Iterator[dict[str, Any]]:
        if len(self.keys) == 1:
            return ({self.keys[0]: v} for v in self.values)
        return (dict(zip(self.keys, v, strict=True)) for v in self.values)


@dataclass(frozen=True)
class Block:
    """A [[grid]] block ready to expand: its factors, where it is, how many runs."""

    index: int
    where: str
    factors: tuple[_Factor, ...]
    count: int
    at_least: bool  # count is a lower bound (counting stopped above the limit)


def prepare_block(index: int, values: dict[str, Sequence[Any]],
                  groups: list[tuple[str, ...]], limit: int) -> Block:
    """The block's factors in key order (zip groups advance together) and its size.

    ``values``: each key's values (the ``seeds = N`` key as ``range(N)``, never a list).
    """
    factors: list[_Factor] = []
    done: set[str] = set()
    for key in values:
        if key in done:
            continue
        group = next((g for g in groups if key in g), None)
        if group is None:
            factors.append(_Factor((key,), values[key]))
            done.add(key)
        else:
            factors.append(_Factor(group, list(zip(*(values[k] for k in group), strict=True))))
            done.update(group)
    count, at_least = _count(factors, limit)
    return Block(index, f"grid[{index}]", tuple(factors), count, at_least)


def _count(factors: list[_Factor], limit: int) -> tuple[int, bool]:
    """Runs the product names, without expanding it: the axes that do not shape a run
    (tasks, models, seeds...) multiply; budget/depth/breadth combinations are walked,
    since ``powers-of-2`` gives a number of depths per budget.  Walking stops once the
    count passes ``limit`` (then it is a lower bound: the second value is True)."""
    shaping = [f for f in factors if _SHAPE_KEYS & set(f.keys)]
    others = math.prod(len(f.values) for f in factors if f not in shaping)
    combos = math.prod(len(f.values) for f in shaping)
    total = 0
    for n, given in enumerate(_product(shaping), start=1):
        total += _depths_of(given)
        if others * total > limit:
            return others * total, n < combos
    return others * total, False


def _product(factors: Sequence[_Factor]) -> Iterator[dict[str, Any]]:
    """The merged combinations of ``factors`` in ``itertools.product`` order, made one
    at a time (``itertools.product`` would first copy every axis, all seeds included)."""
    if not factors:
        yield {}
        return
    for part in factors[0].parts():
        for rest in _product(factors[1:]):
            yield {**part, **rest}


def _depths_of(given: dict[str, Any]) -> int:
    budget = given.get("budget")
    if given.get("depth") == POWERS_OF_2 and isinstance(budget, int) and budget >= 1:
        return len(powers_of_two(budget))
    return 1


def expand(blocks: list[Block], source: str) -> GridRuns:
    """Every run of ``blocks`` in file order; a bad value or a repeated run is one
    :class:`ConfigError` naming the block."""
    grid = GridRuns()
    seen: dict[str, str] = {}
    for block in blocks:
        for given in _product(block.factors):
            for spec in _resolve_depths(given, block.where, source):
                run_id = _add_run(grid, spec, block, source)
                if run_id in seen:
                    raise ConfigError(f"{source}: {block.where} repeats run {run_id} of "
                                      f"{seen[run_id]}; every run must be named once")
                seen[run_id] = block.where
    return grid


def _resolve_depths(given: dict[str, Any], where: str, source: str) -> list[dict[str, Any]]:
    priced = cost.resolve(given, where, source)  # budget_flops/_tokens/_usd (issue 25)
    if priced is not None:
        return [priced]
    budget = given.get("budget")
    if budget is None:
        raise ConfigError(f"{source}: {where}: no budget; every run needs budget = C (or "
                          "budget_flops, budget_tokens or budget_usd with breadth = N)")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ConfigError(f"{source}: {where}.budget must be an integer >= 1, got {budget!r}")
    if "breadth" in given:
        given = dict(given)
        n = given.pop("breadth")
        if budget % n:
            raise ConfigError(f"{source}: {where}: breadth {n} does not divide budget {budget} "
                              "(C = T x N)")
        given["depth"] = budget // n
    if given.get("depth") == POWERS_OF_2:
        return [{**given, "depth": t} for t in powers_of_two(budget)]
    return [given]


def _add_run(grid: GridRuns, given: dict[str, Any], block: Block, source: str) -> str:
    """Add one expanded run; its template is made (and validated) with a cell's first run.

    The run id is the one an eager expansion gave: ``task-model-method-C-T-s`` and the
    first 8 hex digits of the SHA-256 of the run's identity (every key the file gives,
    ``NOT_IDENTITY`` aside), so re-expanding a file names the same runs.
    """
    seed = given.get("seed", 0)
    key = (block.index, tuple((k, _hashable(v)) for k, v in sorted(given.items())
                              if k != "seed"))
    identity = {k: models.identity(v) if k == "models" else v
                for k, v in sorted(given.items()) if k not in NOT_IDENTITY}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode())
    known = grid._template_of.get(key)
    if known is None:
        if "task" not in given:
            raise ConfigError(f"{source}: {block.where}: no task; every run needs a task")
        readable = _readable(given)[:-1]  # the seed's part is added per run
        run_id = safe_run_id([*readable, f"s{seed}"], digest.hexdigest()[:8])
        cfg = _validated(given, run_id, block.where, source)
        cell = tuple((k, _hashable(v)) for k, v in identity.items() if k != "seed")
        t = len(grid.templates)
        grid.templates.append(Template(cfg, cell, block.index, endpoint_key(cfg)))
        grid._template_of[key] = (t, readable)
    else:
        t, readable = known
        run_id = safe_run_id([*readable, f"s{seed}"], digest.hexdigest()[:8])
        if type(seed) is not int or not 0 <= seed <= MAX_SEED:  # a bool is no seed
            _validated(given, run_id, block.where, source)  # RunConfig's own message
    grid._add(t, seed, run_id)
    return run_id


def _validated(given: dict[str, Any], run_id: str, where: str, source: str) -> RunConfig:
    # A task file runs by absolute path (resume from anywhere); the id keeps the path as
    # written, so moving the sweep folder does not rename its runs.
    given = {**models.primary(given), "task": resolve_task_spec(str(given["task"]))}
    try:
        return checked_run(RunConfig(**given, run_id=run_id))
    except ConfigError as exc:
        shown = ", ".join(f"{k}={v}" for k, v in given.items() if k in
                          ("task", "model", "protocol", "allocator", "arms", "budget", "depth"))
        raise ConfigError(f"{source}: {where} ({shown}): {exc}") from None
    except TypeError as exc:  # a value of the wrong kind reached the dataclass
        raise ConfigError(f"{source}: {where}: {exc}") from None


_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def _readable(given: dict[str, Any]) -> list[str]:
    method = str(given.get("protocol", "greedy"))
    alloc = given.get("allocator", "single")
    if alloc != "single":
        method += f"+{alloc}-K{given.get('arms', 1)}"
    model = models.readable(given["models"]) if given.get("models") and "model" not in given \
        else str(given.get("model", "embedded"))
    size = cost.readable(given) or [f"C{given['budget']}",
                                    f"T{given.get('depth', given['budget'])}"]
    parts = [str(given["task"]), model, method, *size, f"s{given.get('seed', 0)}"]
    return [_UNSAFE.sub("_", p).strip("_") or "x" for p in parts]


def safe_run_id(parts: list[str], digest: str) -> str:
    """``task-model-method-C-T-s-HASH``, a safe run id (issue 22, item 10).

    An id that was already safe is returned unchanged, so existing sweeps keep their
    run ids; otherwise the readable part loses its leading ``.``/``-``/``+`` (a task file
    given as ``./x.py``) and is shortened to fit :data:`MAX_RUN_ID`; the hash, which
    covers the full identity, keeps ids unique.
    """
    run_id = "-".join([*parts, digest])
    if RUN_ID_PATTERN.fullmatch(run_id) and len(run_id) <= MAX_RUN_ID:
        return run_id
    readable = "-".join(parts).lstrip("._+-")[:MAX_RUN_ID - len(digest) - 1].rstrip("-")
    return f"{readable}-{digest}" if readable else digest


def _hashable(v: Any) -> Any:
    return json.dumps(v, sort_keys=True) if isinstance(v, dict | list) else v


__all__ = ["MAX_RUNS", "POWERS_OF_2", "Block", "GridRuns", "SweepRun", "Template",
           "endpoint_key", "expand", "powers_of_two", "prepare_block", "safe_run_id"]
