"""``basevolve replay``: offline BaSE over logged greedy N = 1 runs (no LLM calls).

``basevolve replay --store FILE --task NAME --allocator NAME|all|a,b --arms K --budget C
--repeats R [--seed S] [--model M] [--reward-mode best|improvement] [--json]`` prints, for
each allocator side by side, the mean, IQM and bootstrap 95% CI of the final best fitness
over R bandit seeds and the running-max curve.  It is an offline estimate: the paper ran
BaSE end to end (online).  Runs with breadth N > 1 are refused (left out, and counted
in ``runs_left_out``); see :mod:`basevolve.analysis.replay` for the exact protocol.
"""

from __future__ import annotations

import argparse
import json
import sys

from basevolve.errors import ConfigError


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "replay", help="offline BaSE: bandits over logged greedy N=1 runs",
        description="Estimate offline what BaSE would reach by replaying K logged "
                    "single-trajectory greedy N=1 runs as the bandit's arms (pulling an arm "
                    "reveals its next logged step).  Runs with N > 1 are not used.")
    p.add_argument("--store", required=True, help="run store (SQLite file)")
    p.add_argument("--task", required=True, help="task whose logged runs become the arms")
    p.add_argument("--allocator", default="all",
                   help="allocator name, comma list, or 'all' (default: all that fit K)")
    p.add_argument("--arms", type=int, required=True, help="K, the number of arms")
    p.add_argument("--budget", type=int, required=True, help="C, calls incl. the K initial ones")
    p.add_argument("--repeats", type=int, default=100, help="R bandit seeds (default 100)")
    p.add_argument("--seed", type=int, default=0, help="base seed (default 0)")
    p.add_argument("--model", default=None, help="model of the logged runs (needed if several)")
    p.add_argument("--reward-mode", default="best", choices=("best", "improvement"))
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def allocator_names(spec: str, arms: int) -> list[str]:
    """'all' = every registered allocator that accepts K arms; else a comma list."""
    from basevolve.allocators import ALLOCATORS  # imported per command (issue 24, item 8)

    if spec == "all":
        return [n for n in ALLOCATORS.names() if n != "single" or arms == 1]
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise ConfigError(f"--allocator {spec!r} names no allocator; known: "
                          f"{', '.join(ALLOCATORS.names())}, or 'all'")
    for n in names:
        ALLOCATORS.get(n)
    return names


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from basevolve.analysis.replay import check_replayable, load_scores, replay

    names = allocator_names(args.allocator, args.arms)
    if args.repeats < 1:
        raise ConfigError(f"--repeats must be >= 1, got {args.repeats}")
    if args.seed < 0:  # numpy seeds must be >= 0; caught here, not as a traceback later
        raise ConfigError(f"--seed must be >= 0, got {args.seed}")
    logged = load_scores(args.store, args.task, args.model)
    run_ids, scores, model = logged.run_ids, logged.scores, logged.model
    check_replayable(scores, args.arms, args.budget)
    out = {"task": args.task, "model": model, "arms": args.arms, "budget": args.budget,
           "repeats": args.repeats, "seed": args.seed, "reward_mode": args.reward_mode,
           "runs_available": len(run_ids), "runs_left_out": logged.left_out, "allocators": {}}
    for name in names:
        res = replay(scores, name, args.arms, args.budget, args.repeats, seed=args.seed,
                     reward_mode=args.reward_mode, initial=logged.initial)
        out["allocators"][name] = res.summary(np.random.default_rng([args.seed, 99]))
    if args.json:
        json.dump(out, sys.stdout)
        sys.stdout.write("\n")
        return 0
    left = f" ({logged.left_out} runs with N > 1 left out)" if logged.left_out else ""
    from basevolve.terminal import clean  # the model id is read from the store

    print(f"offline BaSE replay: task {clean(args.task)}, model {clean(model or '?')}, "
          f"K={args.arms}, "
          f"C={args.budget}, R={args.repeats}, {len(run_ids)} logged N=1 runs{left}")
    marks = sorted({args.arms, args.budget // 4, args.budget // 2, args.budget} - {0})
    header = ["allocator", "mean", "IQM", "95% CI", *(f"@{m}" for m in marks)]
    rows = [[name, f"{s['mean']:.4f}", f"{s['iqm']:.4f}", f"[{s['ci_low']:.4f}, {s['ci_high']:.4f}]",
             *(f"{s['curve'][m - 1]:.4f}" for m in marks)] for name, s in out["allocators"].items()]
    print(aligned([header, *rows], left=(0, 3)))
    print(f"@n: mean best fitness after n calls (curve); CI over the R={args.repeats} seeds")
    return 0


def aligned(rows: list[list[str]], left: tuple[int, ...] = (0,)) -> str:
    """Rows as columns as wide as their widest cell (issue 24, item 14: long allocator
    names such as ``successive_halving`` and wide numbers pushed later columns out of
    line).  Columns in ``left`` are left-aligned, the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(cell.ljust(w) if i in left else cell.rjust(w)
                  for i, (cell, w) in enumerate(zip(row, widths, strict=True))).rstrip()
        for row in rows)
