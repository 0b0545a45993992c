"""Synthetic studies with a known ground truth (tests, benchmark, example report).

Each (model, task) has true Eq. 2 coefficients ``(beta0, a, b, c)``; a run at
(C, T, N = C / T) scores ``V = 1 - exp(beta0 + a log T + b log N + c log T log N + e)``
with ``e ~ Normal(0, noise)`` per run, so fitness stays below 1 and the log fitness gap
is exactly Eq. 2 plus noise.  Effective FLOPs follow Appendix A's shape:
``C * 2 * P_active * tokens``, with a small depth dependence of tokens per call.
Trajectories rise monotonically to the final fitness; children at T = 1 spread over
[0, 1] (Appendix "Distribution").  Nothing here is used by the analysis itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class Truth:
    """Ground-truth Eq. 2 coefficients and per-call size of one (model, task)."""

    beta0: float
    a: float
    b: float
    c: float
    active_params: float


PAPER_BUDGETS: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512)
MODEL_PARAMS: dict[str, float] = {
    "qwen3-1.7b": 1.7e9,
    "qwen3-4b": 4e9,
    "qwen3-8b": 8e9,
    "qwen3-14b": 14e9,
    "llama-3.1-8b": 8e9,
}


def default_truths(
    tasks: Sequence[str], models: Sequence[str], rng: np.random.Generator
) -> dict[tuple[str, str], Truth]:
    """Plausible coefficients (Table 2's ranges) drawn once per (task, model)."""
    out = {}
    for i, task in enumerate(tasks):
        for j, model in enumerate(models):
            out[(task, model)] = Truth(
                beta0=float(rng.uniform(-0.6, 0.3)),
                a=float(rng.uniform(-0.6, -0.2)),
                b=float(rng.uniform(-0.5, -0.15)),
                c=float([-0.1, -0.01, 0.005][i % 3] * (1 + 0.1 * j)),
                active_params=MODEL_PARAMS.get(model, 8e9),
            )
    return out


def depths_for(budget: int) -> list[int]:
    """All powers of two from 1 up to C (the paper's T grid)."""
    return [2**k for k in range(int(np.log2(budget)) + 1)]


def _trajectory(
    final: float, budget: int, flops: float, rng: np.random.Generator
) -> tuple[np.ndarray, ...]:
    steps = np.arange(1, budget + 1)
    start = 0.3 * final
    progress = (steps / budget) ** rng.uniform(0.3, 1.0)
    noisy = start + (final - start) * progress + rng.normal(0, 0.01, budget)
    best = np.minimum(np.maximum.accumulate(noisy), final)
    best[-1] = final
    return steps, best, flops * steps / budget


def synthetic_study(
    rng: np.random.Generator,
    tasks: Sequence[str] = ("circle_packing", "min_max_distance"),
    models: Sequence[str] = ("qwen3-8b", "qwen3-14b"),
    budgets: Sequence[int] = (8, 16, 32, 64),
    seeds: int = 5,
    noise: float = 0.15,
    truths: dict[tuple[str, str], Truth] | None = None,
    trajectories: bool = True,
    children: bool = True,
    base_arms: Sequence[int] = (5, 10),
    base_allocators: Sequence[str] = ("ucb", "thompson"),
    islands: Sequence[str] = ("openevolve",),
) -> dict[str, pd.DataFrame]:
    """Runs (+ trajectories, children) of a greedy sweep plus BaSE/island runs at max C.

    Returns ``{"runs": ..., "trajectories": ... or None, "children": ... or None,
    "truth": one row per (task, model)}``.
    """
    truths = truths or default_truths(tasks, models, rng)
    rows: list[tuple] = []
    top = max(budgets)

    def add(
        task: str,
        model: str,
        protocol: str,
        allocator: str,
        arms: int,
        c: int,
        t: int,
        shift: float,
    ) -> None:
        tr = truths[(task, model)]
        n = c // t
        mu = tr.beta0 + tr.a * np.log(t) + tr.b * np.log(n) + tr.c * np.log(t) * np.log(n) + shift
        for s in range(seeds):
            fit = float(1.0 - np.exp(mu + rng.normal(0.0, noise)))
            tokens = 3000.0 * (1 + 0.02 * np.log2(t)) * rng.lognormal(0.0, 0.03)
            rows.append(
                (
                    task,
                    model,
                    protocol,
                    allocator,
                    arms,
                    c,
                    t,
                    n,
                    s,
                    max(fit, 0.0),
                    c * 2.0 * tr.active_params * tokens,
                )
            )

    for task in tasks:
        for model in models:
            for c in budgets:
                for t in depths_for(c):
                    add(task, model, "greedy", "single", 1, c, t, 0.0)
            for i, proto in enumerate(islands):
                add(task, model, proto, "single", 1, top, top, 0.2 + 0.1 * i)
            for alloc in base_allocators:
                for k in base_arms:
                    add(task, model, "greedy", alloc, k, top, top, -0.15 - 0.01 * k)
    cols = [
        "task",
        "model",
        "protocol",
        "allocator",
        "arms",
        "budget",
        "depth",
        "breadth",
        "seed",
        "fitness",
        "flops",
    ]
    runs = pd.DataFrame(rows, columns=cols)
    runs.insert(0, "run_id", np.arange(len(runs)))
    out: dict[str, pd.DataFrame | None] = {"runs": runs, "trajectories": None, "children": None}
    if trajectories:
        parts = [
            _trajectory(f, c, fl, rng)
            for f, c, fl in zip(runs["fitness"], runs["budget"], runs["flops"], strict=True)
        ]
        lengths = np.array([len(p[0]) for p in parts])
        steps = np.concatenate([p[0] for p in parts])
        out["trajectories"] = pd.DataFrame(
            {
                "run_id": np.repeat(runs["run_id"].to_numpy(), lengths),
                "step": steps,
                "calls": steps,
                # greedy T x N: generation ceil(step / N) (Table 3's "Gen.")
                "generation": -(-steps // np.repeat(runs["breadth"].to_numpy(), lengths)),
                "best_fitness": np.concatenate([p[1] for p in parts]),
                "cumulative_flops": np.concatenate([p[2] for p in parts]),
            }
        )
    if children:
        t1 = runs[(runs["depth"] == 1) & (runs["protocol"] == "greedy")]
        n_child = t1["budget"].to_numpy()
        ids = np.repeat(t1["run_id"].to_numpy(), n_child)
        scale = np.repeat(np.clip(t1["fitness"].to_numpy(), 0.05, 1.0), n_child)
        fit = np.where(rng.random(ids.size) < 0.2, 0.0, scale * rng.beta(2.0, 2.0, ids.size))
        out["children"] = pd.DataFrame({"run_id": ids, "step": 1, "fitness": fit})
    out["truth"] = pd.DataFrame(
        [{"task": k[0], "model": k[1], **vars(v)} for k, v in truths.items()]
    )
    return out  # type: ignore[return-value]


__all__ = [
    "MODEL_PARAMS",
    "PAPER_BUDGETS",
    "Truth",
    "default_truths",
    "depths_for",
    "synthetic_study",
]
