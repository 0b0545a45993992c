"""``basevolve tasks`` and ``basevolve evaluate`` (issue 2, part 4).

``evaluate`` runs every program file through **one** sandbox pool (concurrently, one
evaluation per warm worker) and scores each in this trusted process.  A failing or
hostile program is just a line with score 0 and a reason; it never stops the others, and
the command still exits 0.  Bad usage (unknown task, missing file, non-positive timeout)
is a :class:`~basevolve.errors.BasevolveError`: one line on stderr, exit 2, nothing run.

``--json`` prints one JSON list, one object per file in the order the files were given
(:mod:`basevolve.cli.evaluate_output`): ``program, task, score, valid, metrics, error,
isolation, seconds, strict_score,
strict_valid, reference_score, reference_valid, mode, trust, artifacts``.  ``--strict``
makes ``score``/``valid``/``error`` the tolerance-0 ones (paper's evaluators use 1e-6).

``tasks --show`` takes a built-in name, a task file or an OpenEvolve task directory
(issue 21, part 2): for a directory it lists the files sent to the sandbox, the stage
functions found by parsing evaluator.py (never importing it here), the cascade and its
thresholds, the timeout, where the system message comes from and the trust level.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
from functools import partial
from typing import Any

from basevolve.cli.evaluate_output import Outcome, TablePrinter, collect
from basevolve.cli.openevolve_flags import add_file_flags, task_and_params
from basevolve.cli.openevolve_show import directory_details, show_directory
from basevolve.cli.program_sources import read_programs
from basevolve.errors import ConfigError, SandboxError
from basevolve.records import ExecResult, ExecStatus, Trust
from basevolve.sandbox.config import MAX_TIMEOUT_S
from basevolve.tasks import STRICT_TOL, TASKS, Task, load_task
from basevolve.tasks.scoring import score_or_raise
from basevolve.tasks.text import answered_by_llm


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "tasks",
        help="list the built-in tasks, or --show one",
        description="List the built-in tasks (name, entry function, time limit), or show one "
        "task -- built-in, a task file or an OpenEvolve task directory -- in full with --show: "
        "its initial program, system message, entry function and limits. Writing your own "
        "task: docs/tasks.md.",
    )
    p.add_argument("--show", metavar="NAME",
                   help="a task name, the path of a task .py file or of an OpenEvolve task "
                        "directory")
    p.add_argument("--json", action="store_true", help="print one JSON list (one object per task)")
    add_file_flags(p)
    p.set_defaults(func=cmd_tasks)

    e = subparsers.add_parser(
        "evaluate",
        help="score program files on a task in the sandbox",
        description="Evaluate one or many program files on a task, each in the sandbox.",
    )
    e.add_argument("--task", help="registered task name, path to a task .py "
                   "file or to an OpenEvolve task directory")
    e.add_argument("files", nargs="+", metavar="FILE", help="program file(s) to evaluate")
    e.add_argument("--strict", action="store_true", help="report the tolerance-0 score as `score`")
    e.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="wall-clock limit per program (default: the task's; for an OpenEvolve task "
        "directory: per evaluate/stage call)",
    )
    e.add_argument("--json", action="store_true",
                   help="print one JSON list (one object per file, in argument order)")
    add_file_flags(e)
    e.set_defaults(func=cmd_evaluate)


# --------------------------------------------------------------------------- tasks


def task_details(spec: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """What ``tasks --show`` prints: everything a run of this task starts from."""
    from basevolve.sandbox.config import SandboxConfig
    from basevolve.tasks.identity import resolve_task_spec

    task = load_task(spec, params)
    limits = SandboxConfig()
    return {
        "name": task.name,
        "source": "built-in" if spec in TASKS else resolve_task_spec(spec),
        "description": task.description,
        "entry": task.entry,
        "timeout_s": task.timeout_s,
        "memory_mb": limits.memory_mb,
        "max_processes": limits.max_processes,
        "max_file_mb": limits.max_file_mb,
        "network": False,
        "system_message": task.system_message,
        "initial_program": task.initial_program,
        "artifact": task.artifact,
        "evaluation": task.evaluation,
        "call_timeout_s": getattr(task, "call_timeout_s", None),
        "params": [{"name": p.name, "kind": p.kind.__name__, "default": p.default,
                    "help": p.help, **({"choices": list(p.choices)} if p.choices else {})}
                   for p in task.PARAMS],
        "trust": str(_trust(task)),
        **({"directory": directory_details(task)} if task.evaluation == "openevolve" else {}),
        # several objectives (issue 36), only where the task declares them
        **({"objectives": dict(task.objectives),
            "reference_point": list(getattr(task, "reference_point", ()) or ())}
           if getattr(task, "objectives", None) else {}),
    }


def _trust(task: Task) -> Trust:
    """The trust level a run of ``task`` records (by the evaluator that scores it)."""
    if answered_by_llm(task):
        return Trust.NOT_RUN
    from basevolve.engine.evaluators import EVALUATORS

    return getattr(EVALUATORS.get(task.evaluation), "trust", Trust.SCORER)


def _show(spec: str, as_json: bool, params: dict[str, Any] | None = None) -> int:
    d = task_details(spec, params)
    if as_json:
        print(json.dumps(d))
        return 0
    d = _printable(d)  # a task file's name, description and texts are outside text
    print(f"task            {d['name']} ({d['source']})")
    if d["description"]:
        print(f"description     {d['description']}")
    if d["evaluation"] == "openevolve":
        show_directory(d)
    elif d["artifact"] == "text":
        print("artifact        text (a prompt template; never executed, scored by an "
              "answering LLM)")
    elif d["evaluation"] == "calls":
        print(f"entry function  {d['entry']}() -- called with arguments by the task's trusted "
              "evaluator (evaluate_program), which scores what it returns")
        print(f"limits          {d['call_timeout_s']:g} s per call, {d['timeout_s']:g} s for the "
              f"import and all calls, {d['memory_mb']} MB memory, {d['max_processes']} "
              f"processes, {d['max_file_mb']} MB per file, no network")
    else:
        print(f"entry function  {d['entry']}() -- called with no arguments; returns the solution")
        print(f"limits          {d['timeout_s']:g} s wall clock, {d['memory_mb']} MB memory, "
              f"{d['max_processes']} processes, {d['max_file_mb']} MB per file, no network")
    if d.get("objectives"):
        point = d["reference_point"] or "derived from the initial program"
        print(f"objectives      {', '.join(f'{k} {v}' for k, v in d['objectives'].items())} "
              f"(reference point: {point}; --objectives overrides)")
    if d["params"]:
        print("parameters      --task-param KEY=VALUE:")
        width = max(len(p["name"]) for p in d["params"])
        for p in d["params"]:
            default = "" if p["default"] in ("", None) else f" (default {p['default']})"
            print(f"  {p['name']:<{width}}  {p['help']}{default}")
    print("\n--- system message ---")
    print(d["system_message"].rstrip())
    print("\n--- initial " + ("template" if d["artifact"] == "text" else "program") + " ---")
    print(d["initial_program"].rstrip())
    return 0


def _printable(value: Any, key: str = "") -> Any:
    """``value`` with every string made safe for the terminal (:mod:`basevolve.terminal`);
    the system message and the initial program keep their line breaks."""
    from basevolve.terminal import clean, clean_lines

    if isinstance(value, str):
        return clean_lines(value) if key in ("system_message", "initial_program") else clean(value)
    if isinstance(value, dict):
        return {k: _printable(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_printable(v) for v in value]
    return value


def cmd_tasks(args: argparse.Namespace) -> int:
    spec, params = task_and_params(args.show, args)  # --program/--evaluator/--config
    if spec is not None:
        return _show(spec, args.json, params)
    rows = [
        {
            "name": name,
            "entry": cls.entry,
            "timeout_s": cls.timeout_s,
            "description": cls.description,
        }
        for name, cls in TASKS.items()
    ]
    if args.json:  # one JSON document, as every --json (docs/running.md; issue 37)
        print(json.dumps(rows))
        return 0
    width = max(len(r["name"]) for r in rows)
    entry_w = max(len(r["entry"]) for r in rows)
    print(f"{'name':<{width}}  {'entry':<{entry_w}}  timeout  description")
    for r in rows:
        print(
            f"{r['name']:<{width}}  {r['entry']:<{entry_w}}  {r['timeout_s']:>6g}s  {r['description']}"
        )
    return 0


# ------------------------------------------------------------------------ evaluate


def cmd_evaluate(args: argparse.Namespace) -> int:
    spec, params = task_and_params(args.task, args)
    if spec is None:
        raise ConfigError("missing --task (a task name, a task file or an OpenEvolve task "
                          "directory; or --program and --evaluator)")
    task = load_task(spec, params)
    if answered_by_llm(task):
        raise ConfigError(f"task {task.name!r} evolves text that an answering LLM scores; "
                          "`evaluate` runs programs in the sandbox. Score a template with "
                          f"`basevolve run --task {args.task} --task-param template=FILE "
                          "--budget 1` (its initial evaluation is the score)")
    timeout = task.timeout_s if args.timeout is None else args.timeout
    if not (math.isfinite(timeout) and timeout > 0):
        raise ConfigError(f"--timeout {args.timeout!r} must be a positive number of seconds")
    if timeout > MAX_TIMEOUT_S:
        raise ConfigError(
            f"--timeout {args.timeout!r} is too long; the sandbox allows at most {MAX_TIMEOUT_S:g} s"
        )
    sources = read_programs(task, args.files)
    records: list[dict[str, Any]] = []
    emit = partial(collect, records) if args.json else TablePrinter(task, args.strict).row
    asyncio.run(_evaluate_all(task, sources, timeout, emit, strict=args.strict))
    if args.json:  # one JSON document, as every --json (docs/running.md; issue 37)
        print(json.dumps(records))
    return 0


async def _evaluate_all(
    task: Task, sources: list[tuple[str, str]], timeout: float, emit: Any, *, strict: bool
) -> None:
    try:
        from basevolve.engine.evaluator import open_pool  # toolchains (issue 31)
    except ImportError as exc:  # pragma: no cover - only while the sandbox is missing
        raise SandboxError(f"the sandbox is not available ({exc}); reinstall basevolve") from None

    workers = max(1, min(len(sources), os.cpu_count() or 1))
    with open_pool(task, workers=workers, isolation="auto") as pool:
        one = _one if task.evaluation == "entry" else _called
        jobs = [
            asyncio.ensure_future(one(pool, task, name, code, timeout)) for name, code in sources
        ]
        for job in jobs:  # in argument order, each as soon as it (and those before it) is done
            outcome = await job
            emit(task, outcome, strict)


async def _one(pool: Any, task: Task, name: str, code: str, timeout: float) -> Outcome:
    try:
        result: ExecResult = await pool.arun(code, task.entry, timeout_s=timeout)
    except Exception as exc:  # the pool failing on one program must not stop the others
        result = ExecResult(
            status=ExecStatus.CRASHED, error=f"sandbox failure: {type(exc).__name__}: {exc}"
        )
    evaluation = score_or_raise(task, result)  # a raising scorer: one line + a log file
    strict_error = evaluation.error
    if result.status is ExecStatus.OK:
        strict_error = task.score_value(result.value, tol=STRICT_TOL).error
    return Outcome(name, evaluation, strict_error)


async def _called(pool: Any, task: Task, name: str, code: str, timeout: float) -> Outcome:
    """A program of a task scored by calling it (a function task, a task directory):
    the run's own evaluator, with the first scorer error raised as one line."""
    from basevolve.engine.evaluators import evaluator_for
    from basevolve.tasks.scoring import ScorerGuard, default_log_path

    evaluator = evaluator_for(task, pool)
    evaluator.scorer = ScorerGuard(task, default_log_path(), max_in_row=1)
    loop = asyncio.get_running_loop()
    evaluation = await loop.run_in_executor(None, evaluator.evaluate_sync, code, timeout)
    return Outcome(name, evaluation, evaluation.error)
