"""A sweep's grid expanded into runs: counted before expansion, made one at a time, each
named (issue 11; issue 22, items 6 and 10).

Why counted first: a grid is a product, and one typo (``seeds = 100000000``) named 10^8
runs; ``basevolve sweep --status`` then expanded all of them and grew to 20 GB before
the kernel killed it.  :func:`prepare_block` counts a [[grid]] block's runs from its
lists' lengths *before* anything is expanded, so a grid above ``max_runs``
(:data:`MAX_RUNS` unless the file's ``[sweep]`` table raises it) is one line naming the
count and the key to raise it.  :func:`expand` then walks the product in file order and
adds each run to a :class:`~basevolve.sweep.grid.GridRuns` (the compact storage, its own
module: what a run *is* there is apart from how a file's blocks become runs).

A run's id is ``task-model-method-C-T-s`` and a hash of its identity
(:func:`safe_run_id`), so re-expanding a file names the same runs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from basevolve.config import MAX_RUN_ID, MAX_SEED, RUN_ID_PATTERN, RunConfig
from basevolve.engine.run_checks import checked_run
from basevolve.errors import ConfigError
from basevolve.sweep.cost import readable as cost_readable
from basevolve.sweep.cost import resolve as resolve_cost
from basevolve.sweep.grid import GridRuns, Template, endpoint_key
from basevolve.sweep.models import identity as models_identity
from basevolve.sweep.models import primary
from basevolve.sweep.models import readable as models_readable
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


def powers_of_two(budget: int) -> list[int]:
    """T in {1, 2, 4, ..., C} (paper Section 4): the powers of 2 dividing C, then C itself."""
    ts, t = [], 1
    while t < budget and budget % t == 0:
        ts.append(t)
        t *= 2
    return [*ts, budget]


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
    priced = resolve_cost(given, where, source)  # budget_flops/_tokens/_usd (issue 25)
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
    identity = {k: models_identity(v) if k == "models" else v
                for k, v in sorted(given.items()) if k not in NOT_IDENTITY}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode())
    known = grid.known(key)
    if known is None:
        if "task" not in given:
            raise ConfigError(f"{source}: {block.where}: no task; every run needs a task")
        readable = _readable(given)[:-1]  # the seed's part is added per run
        run_id = safe_run_id([*readable, f"s{seed}"], digest.hexdigest()[:8])
        cfg = _validated(given, run_id, block.where, source)
        cell = tuple((k, _hashable(v)) for k, v in identity.items() if k != "seed")
        t = grid.add_template(key, Template(cfg, cell, block.index, endpoint_key(cfg)),
                              readable)
    else:
        t, readable = known
        run_id = safe_run_id([*readable, f"s{seed}"], digest.hexdigest()[:8])
        if type(seed) is not int or not 0 <= seed <= MAX_SEED:  # a bool is no seed
            _validated(given, run_id, block.where, source)  # RunConfig's own message
    grid.add(t, seed, run_id)
    return run_id


def _validated(given: dict[str, Any], run_id: str, where: str, source: str) -> RunConfig:
    # A task file runs by absolute path (resume from anywhere); the id keeps the path as
    # written, so moving the sweep folder does not rename its runs.
    given = {**primary(given), "task": resolve_task_spec(str(given["task"]))}
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
    model = models_readable(given["models"]) if given.get("models") and "model" not in given \
        else str(given.get("model", "embedded"))
    size = cost_readable(given) or [f"C{given['budget']}",
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


__all__ = ["MAX_RUNS", "NOT_IDENTITY", "POWERS_OF_2", "Block", "expand", "powers_of_two",
           "prepare_block", "safe_run_id"]
