"""``basevolve advise``: recommend depth, breadth and an allocator for a budget C.

``basevolve advise --store FILE --task T --model M --budget C [--json]`` fits the
store's depth-breadth sweep of (T, M) and prints T*(C) with its plateau, the expected
fitness with a bootstrap CI, the empirical best cell at C, and -- when BaSE runs or
logged greedy N = 1 runs exist -- K and an allocator (:mod:`basevolve.analysis.advise`).
When the sweep cannot carry advice it says why and exits with status 3.

``basevolve advise --pilot --task T --model M --budget C [--base-url URL] [--params P]
[--out FILE]`` writes a small sweep config (budgets 8, 16, 32 up to C x all power-of-2
depths x seeds) in the format of ``basevolve sweep`` and prints its cost in calls; the
file runs as written (a model that needs an endpoint or a parameter count is refused
without them, issue 24, item 6).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from basevolve.errors import BasevolveError, ConfigError

#: exit status when the store cannot carry advice (not a user mistake: no traceback, no 2)
CANNOT_ADVISE = 3


def _int_list(text: str) -> tuple[int, ...]:
    try:
        vals = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"expected integers >= 1, got {text!r}")
    return vals


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "advise", help="recommend depth/breadth (and K, allocator) for a budget C",
        description="Fit Eq. 2 to the store's depth-breadth sweep and recommend T*(C) with "
                    "its plateau, the expected fitness (bootstrap CI), the empirical best "
                    "cell, and K/allocator by offline replay; exit 3 when it cannot advise. "
                    "--pilot writes a small sweep config instead.")
    p.add_argument("--store", help="run store holding the sweep (not needed with --pilot)")
    p.add_argument("--task", required=True)
    p.add_argument("--model", required=True)
    p.add_argument("--budget", type=int, required=True, help="C, the LLM calls you have")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--delta", type=float, default=0.1,
                   help="plateau tolerance in log fitness gap (default 0.1)")
    p.add_argument("--seed", type=int, default=0, help="seed of bootstrap and replay (default 0)")
    p.add_argument("--arms", type=_int_list, default=(2, 5, 10),
                   help="K values to replay (default 2,5,10)")
    p.add_argument("--repeats", type=int, default=20, help="replay repeats per allocator and K")
    p.add_argument("--pilot", action="store_true", help="write a small sweep config (TOML)")
    p.add_argument("--out", help="with --pilot: the file to write (default pilot-TASK-MODEL.toml)")
    p.add_argument("--pilot-budgets", type=_int_list, default=None,
                   help="with --pilot: budgets to sweep (default: 8, 16, 32 capped at C)")
    p.add_argument("--pilot-seeds", type=int, default=3, help="with --pilot: seeds (default 3)")
    p.add_argument("--base-url", default=None, help="with --pilot: the model's endpoint, "
                   "written into it (needed for a model served over HTTP)")
    p.add_argument("--params", default=None, help="with --pilot: active parameters of a model "
                   "outside the catalog, e.g. 8e9 or 8B, written into it (FLOPs)")
    p.set_defaults(func=run)


def _pilot_model(args: argparse.Namespace) -> float | None:
    """Refuse a model the written sweep could not run (issue 24, item 6); its ``params``.

    Checked as ``basevolve sweep`` checks the file, but named by this command's flags."""
    from basevolve.llm.catalog import parse_params, resolve_model

    params = None if args.params is None else parse_params(args.params)
    spec = resolve_model(args.model, params)  # unknown without --params: names --params
    if spec.backend != "embedded" and not args.base_url:
        raise ConfigError(f"--model {args.model} is served over HTTP: pass its endpoint with "
                          "--base-url URL (written into the pilot file), or use --model "
                          "embedded to run the pilot offline")
    if args.base_url:
        from basevolve.llm.openai_backend import validate_base_url

        validate_base_url(args.base_url)
    return params


def _pilot(args: argparse.Namespace) -> int:
    # imported when used, not at the top: --help and errors import no analysis (issue 24, item 8)
    from basevolve.analysis.pilot import pilot_budgets, pilot_calls, pilot_toml

    budgets = args.pilot_budgets or pilot_budgets(args.budget)
    if args.pilot_seeds < 1:
        raise ConfigError(f"--pilot-seeds must be >= 1, got {args.pilot_seeds}")
    params = _pilot_model(args)
    text = pilot_toml(args.task, args.model, budgets, args.pilot_seeds, args.base_url, params)
    out = Path(args.out or f"pilot-{args.task}-{args.model}.toml")
    if out.exists():
        raise ConfigError(f"{str(out)!r} exists; choose another --out (nothing was overwritten)")
    try:
        out.write_text(text)
    except OSError as exc:
        raise ConfigError(f"cannot write {str(out)!r}: {exc.strerror or exc}; choose another --out") from None
    calls = pilot_calls(budgets, args.pilot_seeds)
    doc = {"pilot": str(out), "budgets": list(budgets), "seeds": args.pilot_seeds, "calls": calls}
    if args.json:
        print(json.dumps(doc))
    else:
        print(f"wrote {out}: budgets {list(budgets)} x all power-of-2 depths x "
              f"{args.pilot_seeds} seeds = {calls} LLM calls; run it with "
              f"`basevolve sweep {out} --store FILE`, then `basevolve advise --store FILE ...`")
    return 0


def _fmt(v: float, digits: int = 4) -> str:
    return f"{v:.{digits}f}"


def _text(a: dict[str, Any]) -> str:
    lines = [f"advice for {a['task']} / {a['model']} at C = {a['budget']} "
             f"(swept budgets: {a['swept_budgets'] or 'none'})"]
    if "fit" in a:
        f = a["fit"]
        lines.append(f"  Eq. 2 fit: beta0 {f['beta0']:.3f}  a {f['a']:.3f}  b {f['b']:.3f}  "
                     f"c {f['c']:.3f} (permutation p {f['p_c']:.2g})  R^2 {f['r2']:.3f}  "
                     f"({f['cells']} sub-ceiling cells)")
    if "gate" in a:
        g = a["gate"]
        lines.append(f"  capability gate at C={g['budget']}: penBoN {g['pen_bon']:.4f}, "
                     f"p = {g['p']:.4f}; envelope collapse {g['envelope_collapse']}")
    lines += [f"  note: {n}" for n in a.get("notes", [])]
    if not a["can_advise"]:
        lines.append("  CANNOT ADVISE:")
        lines += [f"    - {r['message']}" for r in a["refusals"]]
        lines.append(f"  pilot: basevolve advise --pilot --task {a['task']} --model "
                     f"{a['model']} --budget {a['budget']}  (writes a small sweep config)")
    else:
        d, e = a["depth"], a["expected_fitness"]
        tag = "  [EXTRAPOLATION beyond the swept budgets]" if a["extrapolation"] else ""
        lines.append(f"  T*(C) = {d['t_star']:.2f} ({d['location']}), 95% CI "
                     f"[{d['t_star_ci'][0]:.2f}, {d['t_star_ci'][1]:.2f}]{tag}")
        lines.append(f"  plateau (within Delta = {d['delta']} of the optimal log gap): T in "
                     f"[{d['plateau'][0]:.2f}, {d['plateau'][1]:.2f}]")
        lines.append(f"  run: --depth {d['recommended_depth']} (N = {d['recommended_breadth']})"
                     f"  expected fitness {_fmt(e['value'])}, 95% CI [{_fmt(e['ci_low'])}, "
                     f"{_fmt(e['ci_high'])}] (bootstrap over runs){tag}")
    emp = a.get("empirical_best")
    if emp:
        diff = ""
        if "differs" in emp:
            diff = (" -- differs from the recommendation" if emp["differs"] else
                    " -- same as the recommendation")
            diff += ", inside the plateau" if emp["in_plateau"] else ", outside the plateau"
        lines.append(f"  empirical best cell at C: T = {emp['depth']} (N = {emp['breadth']}), "
                     f"mean fitness {_fmt(emp['fitness'])} over {emp['runs']} runs{diff}")
    for r in a.get("base_measured", [])[:3]:
        lines.append(f"  measured BaSE at C: {r['allocator']} K={r['arms']} ({r['protocol']}): "
                     f"mean {_fmt(r['mean'])} over {r['runs']} runs")
    rep = a.get("replay")
    if rep and rep["best"]:
        b = rep["best"]
        lines.append(f"  offline replay ({rep['logged_runs']} logged N=1 runs, {rep['repeats']} "
                     f"repeats): best {b['allocator']} with K = {b['arms']}, mean final "
                     f"{_fmt(b['mean'])}")
    elif rep:
        lines.append(f"  offline replay not possible at C: {'; '.join(rep['skipped'])}")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    if args.budget < 1:
        raise ConfigError(f"--budget must be >= 1, got {args.budget}")
    if args.pilot:
        return _pilot(args)
    if not args.store:
        raise ConfigError("--store FILE is required (or --pilot to write a pilot sweep config)")
    if args.repeats < 1 or args.seed < 0 or not args.delta > 0:
        raise ConfigError(f"need --repeats >= 1, --seed >= 0 and --delta > 0, got "
                          f"{args.repeats}, {args.seed}, {args.delta}")
    from basevolve.allocators import ALLOCATORS
    from basevolve.analysis.replay import load_scores
    from basevolve.analysis.tables import load_tables

    tables = load_tables(store=args.store)
    # after the tables: a wrong --store is one line without statsmodels (issue 24, item 8)
    from basevolve.analysis.advise import AdviceConfig, advise, jsonable

    try:
        logged = load_scores(args.store, args.task, args.model)
    except BasevolveError:
        logged = None  # no N = 1 logs: no replay advice (said in the output)
    cfg = AdviceConfig(delta=args.delta, seed=args.seed, arms=args.arms,
                       replay_repeats=args.repeats)
    names = [n for n in ALLOCATORS.names() if n != "single"]
    a = advise(tables, args.task, args.model, args.budget, cfg, logged, names)
    if args.json:
        json.dump(jsonable(a), sys.stdout, allow_nan=False)
        sys.stdout.write("\n")
    else:
        from basevolve.terminal import clean_lines  # names read from the store

        print(clean_lines(_text(a)))
    return 0 if a["can_advise"] else CANNOT_ADVISE
