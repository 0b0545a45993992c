"""Score one program of an OpenEvolve task with OpenEvolve's own ``Evaluator`` and with
basevolve (issue 31, "Done when"): the two scores and the wall time of each.

OpenEvolve is never a dependency of basevolve: install it into a throwaway virtual
environment and name that environment's Python::

    python -m venv /tmp/oe-venv && /tmp/oe-venv/bin/pip install openevolve==0.4.0
    python benchmarks/openevolve_reference.py --openevolve-python /tmp/oe-venv/bin/python \\
        --task EXAMPLES/circle_packing --config config_phase_2.yaml [--program FILE] \\
        [--evaluator FILE] [--score FILE]

``--score`` is the program to score (default: the task's initial program).  OpenEvolve's
side: ``load_config(config)``, ``Evaluator(config.evaluator, evaluator)``,
``evaluate_program(code)`` and ``get_fitness_score(metrics, feature_dimensions)``.
basevolve's side: ``basevolve evaluate --task DIR [--program/--evaluator/--config] FILE
--json`` in a fresh process (the sandbox included).  One JSON line is printed.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

OPENEVOLVE_SIDE = r"""
import asyncio, json, sys, time
from openevolve.config import load_config
from openevolve.evaluator import Evaluator
from openevolve.utils.metrics_utils import get_fitness_score
config_path, evaluator_path, program_path = sys.argv[1:4]
config = load_config(config_path or None)
code = open(program_path, encoding="utf-8").read()
t0 = time.monotonic()
evaluator = Evaluator(config.evaluator, evaluator_path)
metrics = asyncio.run(evaluator.evaluate_program(code, "reference"))
seconds = time.monotonic() - t0
fitness = get_fitness_score(metrics, config.database.feature_dimensions)
print(json.dumps({"fitness": fitness, "seconds": seconds,
                  "metrics": {k: v for k, v in metrics.items()
                              if isinstance(v, (int, float, str, bool))}}))
"""


def locate(task: Path, name: str | None, default: str | None) -> Path | None:
    if name is None:
        return None if default is None else task / default
    path = Path(name)
    return path if path.is_absolute() or not (task / path).exists() else task / path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--openevolve-python", required=True)
    ap.add_argument("--task", required=True, type=Path)
    ap.add_argument("--program")
    ap.add_argument("--evaluator")
    ap.add_argument("--config")
    ap.add_argument("--score", help="the program to score (default: the initial program)")
    args = ap.parse_args()
    task = args.task.resolve()
    program = locate(task, args.program, "initial_program.py")
    evaluator = locate(task, args.evaluator, "evaluator.py")
    config = locate(task, args.config, None)
    scored = Path(args.score).resolve() if args.score else program
    assert program is not None and evaluator is not None and scored is not None
    ref = subprocess.run([args.openevolve_python, "-c", OPENEVOLVE_SIDE, str(config or ""),
                          str(evaluator), str(scored)], capture_output=True, text=True,
                         cwd=task, check=False)
    if ref.returncode != 0:
        print(ref.stderr[-2000:], file=sys.stderr)
        return 1
    reference = json.loads(ref.stdout.strip().splitlines()[-1])
    flags = [f for name, value in (("--program", args.program), ("--evaluator", args.evaluator),
                                   ("--config", args.config)) if value
             for f in (name, str(locate(task, value, None)))]
    t0 = time.monotonic()
    ours = subprocess.run([sys.executable, "-m", "basevolve", "evaluate", "--task", str(task),
                           *flags, str(scored), "--json"], capture_output=True, text=True,
                          check=False)
    seconds = time.monotonic() - t0
    if ours.returncode != 0:
        print(ours.stderr[-2000:], file=sys.stderr)
        return 1
    row = json.loads(ours.stdout.strip().splitlines()[-1])
    row = row[0] if isinstance(row, list) else row  # evaluate --json: one list (issue 37)
    print(json.dumps({"task": task.name, "config": args.config, "program": scored.name,
                      "openevolve": reference["fitness"],
                      "openevolve_s": round(reference["seconds"], 2),
                      "basevolve": row["score"], "basevolve_valid": row["valid"],
                      "basevolve_s": round(seconds, 2),
                      "basevolve_eval_s": round(row["seconds"] or 0.0, 2),
                      "basevolve_error": row["error"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
