"""Sweep configuration: one TOML file, validated once, expanded into named runs (issue 11).

The paper's study is a grid (Section "Experiment Setup"): models x tasks x budgets
C in {8, ..., 512} x depths T in {1, 2, 4, ..., C} x 10 seeds, plus BaSE over protocols
x allocators x K.  A sweep file names that grid::

    [sweep]
    name = "depth-breadth"
    thresholds = [0.9, 0.99]          # tau of P(fitness >= tau); or {task = [...]}

    [[endpoints]]                      # one in-flight limit per endpoint (default 16)
    base_url = "http://127.0.0.1:8000/v1"
    limit = 16

    [defaults]                         # run options every block inherits
    base_url = "http://127.0.0.1:8000/v1"

    [[grid]]                           # one block = one product; blocks are concatenated
    task = ["circle_packing", "min_max_distance"]
    model = "qwen3-8b"
    budget = [8, 16, 32]
    depth = "powers-of-2"              # T in {1, 2, 4, ..., C} for each C
    seeds = 10                         # seed = 0..9 (or seed = [..])
    zip = [["model", "base_url"]]      # keys advanced together instead of crossed

Every key of a block (or of ``[defaults]``) is a :class:`~basevolve.config.RunConfig`
field (``task``, ``model``, ``base_url``, ``protocol``, ``protocol_params``,
``allocator``, ``arms``, ``budget``, ``depth``, ``seed``, ``max_in_flight`` ...) plus
``breadth`` (N, an alternative to ``depth``), ``seeds`` and ``zip``.  A list expands as
a product; a scalar (or a table, for the ``*_params`` keys) is one value.  ``models`` (a
run's several models, issue 25) is the exception: a flat list is one model set, a list
of lists an axis (:mod:`basevolve.sweep.models`); a cost budget (``budget_flops`` ...)
replaces ``budget``/``depth`` (:mod:`basevolve.sweep.cost`).

Identity: each expanded run gets the id ``task-model-method-C{C}-T{T}-s{seed}-HASH``
where HASH covers exactly the keys the file gives for that run (``base_url`` excepted:
it says *where* the model is served, not *what* runs, so a server may move between
sessions of one sweep; likewise ``request_timeout`` and ``call_timeout``, which say how
long to wait for it).  Re-expanding the same file therefore names the same runs, and
the sweep resumes them by id.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from basevolve.config import RunConfig
from basevolve.errors import ConfigError
from basevolve.sweep.checks import (
    TYPES,
    as_table,
    check_type,
    field_type,
    is_instance,
    known_keys,
    parse_toml,
    positive_int,
    type_words,
)
from basevolve.sweep.cost import COST_KEYS
from basevolve.sweep.expansion import (
    MAX_RUNS,
    NOT_IDENTITY,
    POWERS_OF_2,
    expand,
    powers_of_two,
    prepare_block,
)
from basevolve.sweep.grid import GridRuns, SweepRun, endpoint_key
from basevolve.sweep.models import model_lists

DEFAULT_ENDPOINT_LIMIT = 16
#: RunConfig fields a grid may name; ``run_id`` is derived, never given.
RUN_KEYS: tuple[str, ...] = tuple(f.name for f in fields(RunConfig) if f.name != "run_id")
EXTRA_KEYS = ("breadth", "seeds", "zip")
SWEEP_KEYS = ("name", "thresholds", "endpoint_limit", "sandbox_workers", "resamples",
              "max_runs")
ENDPOINT_KEYS = ("base_url", "limit")
TOP_KEYS = ("sweep", "endpoints", "defaults", "grid")


@dataclass(frozen=True)
class SweepConfig:
    """A validated sweep: its runs in file order plus sweep-wide settings."""

    name: str
    runs: GridRuns  # a Sequence[SweepRun], stored compactly (basevolve.sweep.grid)
    limits: dict[str, int] = field(default_factory=dict)  # endpoint key -> in-flight limit
    endpoint_limit: int = DEFAULT_ENDPOINT_LIMIT
    thresholds: dict[str, tuple[float, ...]] = field(default_factory=dict)  # task ("*") -> taus
    sandbox_workers: int | None = None
    resamples: int = 1000
    source: str = ""
    max_runs: int = MAX_RUNS

    def limit_of(self, endpoint: str) -> int:
        return self.limits.get(endpoint, self.endpoint_limit)

    def taus(self, task: str) -> tuple[float, ...]:
        return self.thresholds.get(task, self.thresholds.get("*", ()))

    def run_labels(self, task: str) -> dict[str, Any]:
        """What each run of this sweep stores next to its config (not run options): the
        sweep's name (the dashboard groups by it) and the settings its statistics use --
        the thresholds for the run's task and the bootstrap resamples -- so the dashboard
        and ``analyze`` show this sweep as its own summary does (issue 24, item 5)."""
        return {"sweep": self.name, "sweep_settings": {
            "thresholds": list(self.taus(task)), "resamples": self.resamples}}

    @property
    def endpoints(self) -> list[str]:
        return sorted({t.endpoint for t in self.runs.templates})


# ---------------------------------------------------------------------- loading
def load_sweep(path: str | Path) -> SweepConfig:
    """Read, validate and expand a sweep file; :class:`ConfigError` names the bad key."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"sweep config {str(p)!r} does not exist; write one with "
                          "`basevolve sweep init --preset depth-breadth`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read sweep config {str(p)!r}: {exc}") from None
    return parse_sweep(parse_toml(text, str(p)), source=str(p))


def parse_sweep(data: dict[str, Any], *, source: str = "<sweep>") -> SweepConfig:
    known_keys(data, TOP_KEYS, "", source)
    head = as_table(data.get("sweep", {}), "sweep", source)
    known_keys(head, SWEEP_KEYS, "sweep.", source)
    name = head.get("name", Path(source).stem or "sweep")
    check_type(name, (str,), "sweep.name", source)
    limit = head.get("endpoint_limit", DEFAULT_ENDPOINT_LIMIT)
    positive_int(limit, "sweep.endpoint_limit", source)
    workers = head.get("sandbox_workers")
    if workers is not None:
        positive_int(workers, "sweep.sandbox_workers", source)
    resamples = head.get("resamples", 1000)
    positive_int(resamples, "sweep.resamples", source)
    thresholds = _thresholds(head.get("thresholds", []), source)
    limits = _endpoints(data.get("endpoints", []), source)
    defaults = as_table(data.get("defaults", {}), "defaults", source)
    _block_keys(defaults, "defaults", source)
    if "zip" in defaults:
        raise ConfigError(f"{source}: defaults.zip: zip groups belong in a [[grid]] block")
    blocks = data.get("grid")
    if blocks is None or blocks == []:
        raise ConfigError(f"{source}: the sweep has no [[grid]] block, so it names no run; "
                          "add one (see `basevolve sweep init`)")
    if isinstance(blocks, dict):
        blocks = [blocks]
    if not isinstance(blocks, list):
        raise ConfigError(f"{source}: grid must be an array of tables ([[grid]])")
    max_runs = head.get("max_runs", MAX_RUNS)
    positive_int(max_runs, "sweep.max_runs", source)
    prepared = []
    total = 0
    for i, block in enumerate(blocks):
        where = f"grid[{i}]"
        block = as_table(block, where, source)
        _block_keys(block, where, source)
        values, groups = _block_values(_merge(defaults, block), where, source)
        prepared.append(prepare_block(i, values, groups, max_runs - total))
        total += prepared[-1].count
        if total > max_runs:  # counted, not expanded: refused before any run is built
            b = prepared[-1]
            more = " or more" if b.at_least else ""
            alone = f" ({where} alone: {b.count:,}{more})" if len(prepared) > 1 else ""
            raise ConfigError(
                f"{source}: the grid names {total:,}{more} runs{alone}, more than "
                f"sweep.max_runs = {max_runs:,}; check seeds and the lists, or raise the "
                "bound with max_runs = N in [sweep] if you mean it (docs/sweeps.md)")
    runs = expand(prepared, source)
    if not runs:
        raise ConfigError(f"{source}: the grid expands to no run; give every key at least "
                          "one value")
    return SweepConfig(name=name, runs=runs, limits=limits, endpoint_limit=limit,
                       thresholds=thresholds, sandbox_workers=workers, resamples=resamples,
                       source=source, max_runs=max_runs)


# ---------------------------------------------------------------------- expansion
_ALTERNATIVES = (("seed", "seeds"), ("depth", "breadth"))


def _merge(defaults: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    """Block keys override defaults; a block's ``seed`` also overrides default ``seeds``."""
    merged = {**defaults, **block}
    for a, b in _ALTERNATIVES:
        if a in block and b not in block:
            merged.pop(b, None)
        if b in block and a not in block:
            merged.pop(a, None)
    budgets = ("budget", *COST_KEYS)  # one budget per run: the block's replaces the defaults'
    if any(k in block for k in budgets):
        for k in budgets:
            if k not in block:
                merged.pop(k, None)
        if any(k in block for k in COST_KEYS) and "depth" not in block:
            merged.pop("depth", None)  # a cost budget has no depth (breadth = N instead)
    if "models" in block:  # the block's models replace the defaults' single model
        for k in ("model", "params"):
            if k not in block:
                merged.pop(k, None)
    elif "model" in block:
        merged.pop("models", None)
    return merged


def _block_values(block: dict[str, Any], where: str,
                  source: str) -> tuple[dict[str, Any], list[tuple[str, ...]]]:
    """Each key's values (``seeds = N`` as ``range(N)``, never a list of N) and the
    block's zip groups, checked; :func:`basevolve.sweep.expansion.prepare_block` counts and
    expands them."""
    block = dict(block)
    zips = block.pop("zip", [])
    if "seeds" in block:
        if "seed" in block:
            raise ConfigError(f"{source}: {where}: give seed or seeds, not both")
        n = block.pop("seeds")
        positive_int(n, f"{where}.seeds", source)
        block["seed"] = range(n)
    if "depth" in block and "breadth" in block:
        raise ConfigError(f"{source}: {where}: give depth or breadth, not both (C = T x N)")
    values = {k: _values(k, v, where, source) for k, v in block.items()}
    return values, _zip_groups(zips, values, where, source)


def _values(key: str, value: Any, where: str, source: str) -> list[Any] | range:
    """The values of one grid key; a list expands, anything else is one value."""
    if isinstance(value, range):  # seeds = N: integers by construction, never copied
        return value
    vals = value if isinstance(value, list) else [value]
    if not vals:
        raise ConfigError(f"{source}: {where}.{key} is an empty list, so the grid expands to "
                          "no run; give at least one value")
    if key == "depth":
        for v in vals:
            if v != POWERS_OF_2 and (isinstance(v, bool) or not isinstance(v, int)):
                raise ConfigError(f"{source}: {where}.depth must be an integer or "
                                  f"{POWERS_OF_2!r}, got {v!r}")
        return vals
    if key == "breadth":
        for v in vals:
            positive_int(v, f"{where}.breadth", source)
        return vals
    if key == "models":  # one model set, or a list of sets (issue 25; sweep/models.py)
        return model_lists(value, where, source)
    if key == "params":  # "8B" as --params takes it (issue 24, item 2)
        return [_params_value(v, where, source) for v in vals]
    ann = field_type(key)
    for v in vals:
        if v is None:
            continue
        expected = TYPES.get(ann)
        if expected is not None and not is_instance(v, expected):
            raise ConfigError(f"{source}: {where}.{key} must be {type_words(ann)}, got {v!r}")
    return vals


# ---------------------------------------------------------------------- helpers
def _params_value(v: Any, where: str, source: str) -> Any:
    """A grid's ``params``: a number stays as written (the run ids of existing files hash
    it so), a string such as ``"8B"`` becomes its number; a bad one names the key."""
    from basevolve.llm.catalog import parse_params

    if v is None:
        return None
    try:
        value = parse_params(v, f"{where}.params")
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return value if isinstance(v, str) else v


def _zip_groups(zips: Any, values: dict[str, Any], where: str,
                source: str) -> list[tuple[str, ...]]:
    if not isinstance(zips, list) or not all(isinstance(g, list) for g in zips):
        raise ConfigError(f"{source}: {where}.zip must be a list of key lists, e.g. "
                          '[["model", "base_url"]]')
    groups: list[tuple[str, ...]] = []
    used: set[str] = set()
    for g in zips:
        if len(g) < 2:
            raise ConfigError(f"{source}: {where}.zip group {g!r} needs at least two keys")
        for k in g:
            if k not in values:
                raise ConfigError(f"{source}: {where}.zip names {k!r}, which the block does "
                                  "not give")
            if k in used:
                raise ConfigError(f"{source}: {where}.zip names {k!r} in two groups")
            used.add(k)
        lengths = {k: len(values[k]) for k in g}
        if len(set(lengths.values())) != 1:
            shown = ", ".join(f"{k}: {n}" for k, n in lengths.items())
            raise ConfigError(f"{source}: {where}.zip group {g!r} needs lists of equal "
                              f"length, got {shown}")
        groups.append(tuple(g))
    return groups


def _thresholds(value: Any, source: str) -> dict[str, tuple[float, ...]]:
    def taus(v: Any, key: str) -> tuple[float, ...]:
        if not isinstance(v, list) or not all(is_instance(x, (int, float)) for x in v):
            raise ConfigError(f"{source}: {key} must be a list of numbers, got {v!r}")
        return tuple(float(x) for x in v)

    if isinstance(value, dict):
        return {task: taus(v, f"sweep.thresholds.{task}") for task, v in value.items()}
    return {"*": taus(value, "sweep.thresholds")}


def _endpoints(value: Any, source: str) -> dict[str, int]:
    if not isinstance(value, list):
        raise ConfigError(f"{source}: endpoints must be an array of tables ([[endpoints]])")
    limits: dict[str, int] = {}
    for i, ep in enumerate(value):
        ep = as_table(ep, f"endpoints[{i}]", source)
        known_keys(ep, ENDPOINT_KEYS, f"endpoints[{i}].", source)
        url = ep.get("base_url")
        if not isinstance(url, str) or not url:
            raise ConfigError(f"{source}: endpoints[{i}].base_url must be a URL string")
        limit = ep.get("limit", DEFAULT_ENDPOINT_LIMIT)
        positive_int(limit, f"endpoints[{i}].limit", source)
        limits[url.rstrip("/")] = limit
    return limits


def _block_keys(block: dict[str, Any], where: str, source: str) -> None:
    known_keys(block, RUN_KEYS + EXTRA_KEYS, f"{where}.", source)


def cell_label(cell: tuple[tuple[str, Any], ...]) -> str:
    """``task=cp model=m C=8 T=2`` -- a cell's coordinates, short names for C/T/N."""
    short = {"budget": "C", "depth": "T", "arms": "K"}
    return " ".join(f"{short.get(k, k)}={v}" for k, v in cell)


__all__ = ["MAX_RUNS", "NOT_IDENTITY", "POWERS_OF_2", "SweepConfig", "SweepRun", "cell_label",
           "endpoint_key", "load_sweep", "parse_sweep", "powers_of_two"]
