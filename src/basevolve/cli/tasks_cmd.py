"""``basevolve tasks`` and ``basevolve evaluate`` (issue 2, part 4).

``evaluate`` runs every program file through **one** sandbox pool (concurrently, one
evaluation per warm worker) and scores each in this trusted process.  A failing or
hostile program is just a line with score 0 and a reason; it never stops the others, and
the command still exits 0.  Bad usage (unknown task, missing file, non-positive timeout)
is a :class:`~basevolve.errors.BasevolveError`: one line on stderr, exit 2, nothing run.

``--json`` prints one object per file per line, in the order the files were given:
``program, task, score, valid, metrics, error, isolation, seconds, strict_score,
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
import sys
from dataclasses import dataclass
from typing import Any

from basevolve.cli.program_sources import read_programs
from basevolve.errors import ConfigError, SandboxError
from basevolve.records import Evaluation, ExecResult, ExecStatus, Trust
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
    p.add_argument("--json", action="store_true", help="one JSON object per task per line")
    p.set_defaults(func=cmd_tasks)

    e = subparsers.add_parser(
        "evaluate",
        help="score program files on a task in the sandbox",
        description="Evaluate one or many program files on a task, each in the sandbox.",
    )
    e.add_argument("--task", required=True, help="registered task name, path to a task .py "
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
    e.add_argument("--json", action="store_true", help="one JSON object per file per line")
    e.set_defaults(func=cmd_evaluate)


# --------------------------------------------------------------------------- tasks


def task_details(spec: str) -> dict[str, Any]:
    """What ``tasks --show`` prints: everything a run of this task starts from."""
    from basevolve.sandbox.config import SandboxConfig
    from basevolve.tasks.identity import resolve_task_spec

    task = load_task(spec)
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
    }


def _trust(task: Task) -> Trust:
    """The trust level a run of ``task`` records (by the evaluator that scores it)."""
    if answered_by_llm(task):
        return Trust.NOT_RUN
    from basevolve.engine.evaluators import EVALUATORS

    return getattr(EVALUATORS.get(task.evaluation), "trust", Trust.SCORER)


def directory_details(task: Any) -> dict[str, Any]:
    """What ``tasks --show DIR`` lists for an OpenEvolve task directory (issue 21, part 2).

    Found without importing evaluator.py: its stage functions by parsing it
    (:func:`basevolve.tasks.openevolve_dir.evaluator_functions`).
    """
    d, st = task.directory, task.settings
    files = {**{k: len(v.encode()) for k, v in d.text_files.items()},
             **{k: len(v) for k, v in d.binary_files.items()}}
    return {
        "path": str(d.path),
        "files": [{"path": k, "bytes": files[k], "binary": k in d.binary_files}
                  for k in sorted(files)],
        "total_bytes": d.total_bytes,
        "skipped": list(d.skipped),
        "functions": list(st.functions),
        "cascade": st.cascade,
        "cascade_evaluation": st.cascade_evaluation,
        "cascade_thresholds": list(st.cascade_thresholds),
        "stages": list(st.stages),
        "timeout_s": st.timeout_s,
        "evaluator_args": sorted(st.evaluator_args),
        "program": getattr(task, "program_note", None),  # a folder or a prompt (issue 31)
        "system_message_from": ("config.yaml prompt.system_message"
                                if task.config_system_message else "basevolve's default"),
    }


def _show(spec: str, as_json: bool) -> int:
    d = task_details(spec)
    if as_json:
        print(json.dumps(d))
        return 0
    d = _printable(d)  # a task file's name, description and texts are outside text
    print(f"task            {d['name']} ({d['source']})")
    if d["description"]:
        print(f"description     {d['description']}")
    if d["evaluation"] == "openevolve":
        _show_directory(d)
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


def _show_directory(d: dict[str, Any]) -> None:
    """The OpenEvolve-directory part of ``tasks --show`` (plain text)."""
    x = d["directory"]
    print("kind            OpenEvolve task directory: its evaluator.py runs inside the sandbox, "
          "next to the program")
    print(f"trust           {d['trust']} -- the program can tamper with the evaluator beside "
          "it (it cannot reach anything outside the sandbox)")
    print(f"functions       {', '.join(x['functions'])} (found in evaluator.py, not imported)")
    if x["cascade"]:
        stages = " -> ".join(x["stages"])
        print(f"evaluation      cascade: {stages}; thresholds "
              f"{', '.join(f'{t:g}' for t in x['cascade_thresholds'])} (config.yaml)")
    else:
        why = ("cascade_evaluation is false" if not x["cascade_evaluation"]
               else "no evaluate_stage1")
        print(f"evaluation      direct: evaluate(program_path) ({why})")
    if x["evaluator_args"]:
        print(f"evaluator args  {', '.join(x['evaluator_args'])} (passed to evaluate)")
    print(f"limits          {x['timeout_s']:g} s per evaluate/stage call (evaluator.timeout), "
          f"{d['memory_mb']} MB memory, {d['max_processes']} processes, {d['max_file_mb']} MB "
          "per file, no network")
    print(f"program         {x['program']}" if x.get("program") else  # issue 31
          f"entry function  {d['entry']}() -- the program's main function (first def of the "
          "EVOLVE block); it picks the program out of an LLM reply")
    print(f"system message  from {x['system_message_from']}")
    print(f"files           {len(x['files'])} sent to each evaluation's sandbox "
          f"({x['total_bytes']:,} bytes):")
    for f in x["files"]:
        print(f"  {f['path']}  {f['bytes']:,} bytes{' (binary)' if f['binary'] else ''}")
    for skipped in x["skipped"]:
        print(f"  skipped: {skipped}")


def cmd_tasks(args: argparse.Namespace) -> int:
    if args.show is not None:
        return _show(args.show, args.json)
    rows = [
        {
            "name": name,
            "entry": cls.entry,
            "timeout_s": cls.timeout_s,
            "description": cls.description,
        }
        for name, cls in TASKS.items()
    ]
    if args.json:
        for row in rows:
            print(json.dumps(row))
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


@dataclass(frozen=True, slots=True)
class _Outcome:
    program: str
    evaluation: Evaluation
    strict_error: str | None


def cmd_evaluate(args: argparse.Namespace) -> int:
    task = load_task(args.task)
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
    emit = _print_json if args.json else _TablePrinter(task, args.strict).row
    asyncio.run(_evaluate_all(task, sources, timeout, emit, strict=args.strict))
    return 0


async def _evaluate_all(
    task: Task, sources: list[tuple[str, str]], timeout: float, emit: Any, *, strict: bool
) -> None:
    try:
        from basevolve.sandbox import SandboxConfig, SandboxPool
    except ImportError as exc:  # pragma: no cover - only while the sandbox is missing
        raise SandboxError(f"the sandbox is not available ({exc}); reinstall basevolve") from None

    workers = max(1, min(len(sources), os.cpu_count() or 1))
    with SandboxPool(SandboxConfig(workers=workers, isolation="auto")) as pool:
        one = _one if task.evaluation == "entry" else _called
        jobs = [
            asyncio.ensure_future(one(pool, task, name, code, timeout)) for name, code in sources
        ]
        for job in jobs:  # in argument order, each as soon as it (and those before it) is done
            outcome = await job
            emit(task, outcome, strict)


async def _one(pool: Any, task: Task, name: str, code: str, timeout: float) -> _Outcome:
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
    return _Outcome(name, evaluation, strict_error)


async def _called(pool: Any, task: Task, name: str, code: str, timeout: float) -> _Outcome:
    """A program of a task scored by calling it (a function task, a task directory):
    the run's own evaluator, with the first scorer error raised as one line."""
    from basevolve.engine.evaluators import evaluator_for
    from basevolve.tasks.scoring import ScorerGuard, default_log_path

    evaluator = evaluator_for(task, pool)
    evaluator.scorer = ScorerGuard(task, default_log_path(), max_in_row=1)
    loop = asyncio.get_running_loop()
    evaluation = await loop.run_in_executor(None, evaluator.evaluate_sync, code, timeout)
    return _Outcome(name, evaluation, evaluation.error)


def outcome_record(task: Task, outcome: _Outcome, strict: bool) -> dict[str, Any]:
    """The JSON object of one evaluated file (field names fixed by issue 2, part 4)."""
    ev = outcome.evaluation
    return {
        "program": outcome.program,
        "task": task.name,
        "score": ev.strict_score if strict else ev.score,
        "valid": ev.strict_valid if strict else ev.valid,
        "metrics": _finite(ev.metrics),
        "error": outcome.strict_error if strict else ev.error,
        "isolation": str(ev.isolation),
        "seconds": round(ev.seconds, 6),
        "strict_score": ev.strict_score,
        "strict_valid": ev.strict_valid,
        "reference_score": ev.score,
        "reference_valid": ev.valid,
        "mode": "strict" if strict else "reference",
        "trust": str(ev.trust),
        "artifacts": dict(ev.artifacts),
    }


def _finite(metrics: dict[str, float]) -> dict[str, float | None]:
    # JSON has no NaN/inf; a metric that is not finite is written as null.
    return {
        k: (v if isinstance(v, int | float) and math.isfinite(v) else None)
        for k, v in metrics.items()
    }


def _print_json(task: Task, outcome: _Outcome, strict: bool) -> None:
    print(json.dumps(outcome_record(task, outcome, strict)), flush=True)


class _TablePrinter:
    """Readable one-line-per-file output, header printed before the first row."""

    def __init__(self, task: Task, strict: bool) -> None:
        self._header_done = False
        mode = "strict, tol 0" if strict else "reference, tol 1e-6"
        self._title = f"task {task.name} ({mode})"

    def row(self, task: Task, outcome: _Outcome, strict: bool) -> None:
        rec = outcome_record(task, outcome, strict)
        if not self._header_done:
            print(self._title)
            print(
                f"{'score':>9}  {'valid':<5}  {'strict':>9}  {'secs':>6}  {'isolation':<9}  program / metrics or error"
            )
            self._header_done = True
        detail = rec["error"] or ", ".join(
            f"{k}={v:.6g}" for k, v in rec["metrics"].items() if v is not None
        )
        from basevolve.terminal import clean  # the program's own error text

        detail, program = clean(detail), clean(rec["program"])
        print(
            f"{rec['score']:>9.6f}  {'yes' if rec['valid'] else 'no':<5}  {rec['strict_score']:>9.6f}"
            f"  {rec['seconds']:>6.2f}  {rec['isolation']:<9}  {program}: {detail}",
            flush=True,
        )
        sys.stdout.flush()
