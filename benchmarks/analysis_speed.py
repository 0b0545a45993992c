"""Benchmark: the full analysis of a paper-sized synthetic sweep, end to end.

Grid: 3 tasks x 5 models x 7 budgets (8..512) x all depths (powers of 2 up to C) x 10
seeds = 7,350 runs, each with a per-call running-best trajectory (1.38 M rows), plus
children at T = 1.  Analysed with the paper's counts: 20,000-shuffle gate
permutations, 10,000-shuffle permutations for c, and 10,000-resample bootstraps
(summary SE/CI and time-to-threshold).  Target: <= 60 s on 2 cores.

    python benchmarks/analysis_speed.py [--resamples 10000] [--shuffles 10000] [--gate-shuffles 20000]

Prints the time of each stage and the ratio to the target (ratio < 1 = faster).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from basevolve.analysis import AnalysisConfig, analyze, load_tables
from basevolve.analysis.synthetic import MODEL_PARAMS, PAPER_BUDGETS, synthetic_study

TARGET_S = 60.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--shuffles", type=int, default=10_000)
    p.add_argument("--gate-shuffles", type=int, default=20_000)
    p.add_argument(
        "--no-trajectories", action="store_true", help="skip the time-to-threshold stage"
    )
    args = p.parse_args()

    t0 = time.perf_counter()
    study = synthetic_study(
        np.random.default_rng(0),
        tasks=("circle_packing", "min_max_distance", "heilbronn_triangle"),
        models=tuple(MODEL_PARAMS),
        budgets=PAPER_BUDGETS,
        seeds=10,
        trajectories=not args.no_trajectories,
        children=True,
        base_arms=(),
        islands=(),
    )
    t_gen = time.perf_counter() - t0
    t1 = time.perf_counter()
    tables = load_tables(
        input=study["runs"], trajectories=study["trajectories"], children=study["children"]
    )
    t_load = time.perf_counter() - t1
    cfg = AnalysisConfig(
        resamples=args.resamples,
        shuffles=args.shuffles,
        gate_shuffles=args.gate_shuffles,
        thresholds=(0.5, 0.8, 0.9, 0.95, 0.99),
    )
    t2 = time.perf_counter()
    res = analyze(tables, cfg)
    t_analyze = time.perf_counter() - t2
    total = t_load + t_analyze
    n_traj = 0 if tables.trajectories is None else len(tables.trajectories)
    print(
        f"runs={len(tables.runs)} trajectory_rows={n_traj} cells={len(res['cells'])} "
        f"gate_rows={len(res['gate'])} bilinear_rows={len(res['bilinear'])} threshold_rows={len(res['thresholds'])}"
    )
    print(
        f"resamples={args.resamples} shuffles={args.shuffles} gate_shuffles={args.gate_shuffles} "
        f"cpus={os.cpu_count()}"
    )
    print(f"generate (not timed against the target): {t_gen:.1f} s")
    print(f"validate: {t_load:.1f} s   analyze: {t_analyze:.1f} s")
    print(f"end-to-end {total:.1f} s vs target {TARGET_S:.0f} s -> ratio {total / TARGET_S:.2f}")


if __name__ == "__main__":
    main()
