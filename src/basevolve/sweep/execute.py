"""``run_sweep``: validate everything, then drive the grid to completion (issue 11).

Order matters for "bad input leaves the store untouched": the config is parsed and
every run validated, every task/protocol/allocator/model name checked, the store file
inspected read-only, each endpoint probed and (for Ray) the cluster reached *before*
the store is opened for writing.  Only then are runs started or resumed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from basevolve.errors import BasevolveError, ConfigError
from basevolve.sweep.config import SweepConfig, load_sweep
from basevolve.sweep.cost import check_first_calls
from basevolve.sweep.models import check_run_models, model_endpoints
from basevolve.sweep.plan import PlannedRun, plan
from basevolve.sweep.progress import SweepProgress
from basevolve.sweep.stored import read_state

EXECUTORS = ("local", "ray")


@dataclass
class SweepResult:
    """What a sweep session did; ``outcomes`` maps run ids to status (+ summary/error)."""

    sweep: SweepConfig
    planned: list[PlannedRun]
    outcomes: dict[str, dict[str, Any]]
    endpoints: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def failed(self) -> list[str]:
        return [rid for rid, o in self.outcomes.items() if o["status"] != "finished"]


def check_names(sweep: SweepConfig) -> None:
    """Every task, protocol, allocator and model of the grid exists (one clear error)."""
    from basevolve.allocators import ALLOCATORS
    from basevolve.protocols import PROTOCOLS
    from basevolve.tasks import load_task

    seen: set[tuple[str, Any]] = set()
    for run in sweep.runs.templates:  # one per cell: names do not vary with the seed
        cfg = run.config
        checks = (("task", (cfg.task, json.dumps(cfg.task_params, sort_keys=True)),
                   lambda v: load_task(v[0], json.loads(v[1]))),
                  ("protocol", cfg.protocol, PROTOCOLS.get),
                  ("allocator", cfg.allocator, ALLOCATORS.get),
                  ("model", (cfg.model, cfg.params, cfg.base_url), _check_model),
                  ("models", json.dumps([cfg.models, cfg.base_url, cfg.params,
                                         cfg.budget_kind], sort_keys=True, default=str),
                   lambda _v, cfg=cfg: check_run_models(cfg)),
                  (f"budget_{cfg.budget_kind}", json.dumps(cfg.to_dict(), sort_keys=True, default=str),
                   lambda _v, cfg=cfg: check_first_calls(cfg)))
        for key, value, check in checks:
            if (key, value) in seen:
                continue
            seen.add((key, value))
            try:
                check(value)
            except BasevolveError as exc:  # ConfigError, TaskError: keep the kind
                raise type(exc)(f"{sweep.source}: grid[{run.block}].{key}: {exc}") from None


def _check_model(value: tuple[str, float | None, str | None]) -> None:
    """The model is known (or has ``params``) and, if served over HTTP, has a
    ``base_url``; named by the sweep file's keys, not the CLI's flags (issue 24, item 6:
    a run would otherwise fail only when it starts, naming ``--params``/``--base-url``)."""
    from basevolve.llm import resolve_model

    model, params, base_url = value
    spec = resolve_model(model, params, params_arg="params")
    if base_url is None and spec.backend != "embedded":
        raise ConfigError(f"model {model!r} is served over HTTP; give its endpoint as "
                          'base_url = "http://HOST:PORT/v1" (in [defaults] or the block), '
                          "or use model = \"embedded\" to run offline")


def probe_endpoints(sweep: SweepConfig) -> None:
    """Every endpoint of the grid answers: each run's, then each model's own (issue 25:
    a second endpoint that is down is one line naming the model and its grid block)."""
    from basevolve.engine.endpoints import probe_endpoint
    from basevolve.errors import LLMError

    for url in sorted({t.config.base_url for t in sweep.runs.templates if t.config.base_url}):
        probe_endpoint(url)
    seen: set[str] = set()
    for t in sweep.runs.templates:
        for name, url in model_endpoints(t.config):
            if url.rstrip("/") in seen:
                continue
            seen.add(url.rstrip("/"))
            try:
                probe_endpoint(url, what=f"endpoint of model {name!r}")
            except LLMError as exc:
                raise LLMError(f"{sweep.source}: grid[{t.block}].models: {exc}") from None


def prepare(config: str | Path | SweepConfig, store_path: str | Path) -> tuple[
        SweepConfig, list[PlannedRun], dict[str, dict[str, Any]]]:
    """Validation and planning; reads the store read-only (nothing written yet)."""
    sweep = config if isinstance(config, SweepConfig) else load_sweep(config)
    check_names(sweep)
    stored = read_state(store_path)  # refuses a foreign file without touching it
    return sweep, plan(sweep, stored), stored


def run_sweep(config: str | Path | SweepConfig, store_path: str | Path, *,
              executor: str = "local", address: str | None = None,
              progress: SweepProgress | None = None, live: bool | None = None,
              scratch_dir: str | Path | None = None) -> SweepResult:
    """Run every run of the sweep that is not finished; see the module docstring.

    ``executor="ray"`` runs on the Ray cluster at ``address`` (``"auto"``, ``HOST:PORT``,
    or None to use a Ray already initialised in this process).
    """
    if executor not in EXECUTORS:
        raise ConfigError(f"--executor must be one of {', '.join(EXECUTORS)}, got {executor!r}")
    sweep, planned, stored = prepare(config, store_path)
    probe_endpoints(sweep)
    ray_session = None
    if executor == "ray":
        from basevolve.sweep.ray_executor import connect

        ray_session = connect(address)
    progress = progress or SweepProgress(sweep, live=live)
    for rid, row in stored.items():
        if rid in progress.runs:
            progress.preload(rid, row["status"], row["calls"], row["flops"], row["best"])
    try:
        if executor == "ray":
            from basevolve.sweep.ray_executor import run_ray

            outcomes, endpoints = run_ray(sweep, planned, store_path, progress,
                                          session=ray_session, scratch_dir=scratch_dir)
        else:
            from basevolve.sweep.local import run_local

            outcomes, endpoints = run_local(sweep, planned, store_path, progress)
    finally:
        progress.close()
        if ray_session is not None:
            ray_session.close()
    for p in planned:
        if p.action == "done":
            outcomes.setdefault(p.run.run_id, {"status": "finished", "skipped": True})
    return SweepResult(sweep, planned, outcomes, endpoints)


__all__ = ["EXECUTORS", "SweepResult", "check_names", "prepare", "probe_endpoints",
           "run_sweep"]
