"""What ``basevolve evaluate`` prints for each program file: a table row or a JSON object.

Kept apart from :mod:`basevolve.cli.tasks_cmd` (which finds, reads and scores the
files) so each stays short.  ``--json`` prints one list of these objects (one JSON
document, as every ``--json``; issue 37, item 8).
"""

from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass
from typing import Any

from basevolve.records import Evaluation
from basevolve.tasks import Task


@dataclass(frozen=True, slots=True)
class Outcome:
    """One evaluated file: its name as given, the evaluation, the tolerance-0 error."""

    program: str
    evaluation: Evaluation
    strict_error: str | None


def outcome_record(task: Task, outcome: Outcome, strict: bool) -> dict[str, Any]:
    """The JSON object of one evaluated file (field names fixed by issue 2, part 4)."""
    ev = outcome.evaluation
    return {
        "program": outcome.program,
        "task": task.name,
        "score": ev.strict_score if strict else ev.score,
        "valid": ev.strict_valid if strict else ev.valid,
        "metrics": _finite(ev.metrics),
        "error": _in_user_file(outcome.strict_error if strict else ev.error,
                               outcome.program),
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


#: The name the sandbox compiles every program under (:mod:`basevolve.sandbox`).
_SANDBOX_FILE = re.compile(r'(?<=\()program\.py(?=, line \d+\))|(?<=File ")program\.py(?=")')


def _in_user_file(error: str | None, name: str) -> str | None:
    """The error as the user's file would give it (issue 37, item 8): a syntax error
    named the sandbox's ``program.py`` instead of the file passed to ``evaluate``."""
    return None if error is None else _SANDBOX_FILE.sub(lambda _m: name, error)


def _finite(metrics: dict[str, float]) -> dict[str, float | None]:
    # JSON has no NaN/inf; a metric that is not finite is written as null.
    return {
        k: (v if isinstance(v, int | float) and math.isfinite(v) else None)
        for k, v in metrics.items()
    }


def collect(records: list[dict[str, Any]], task: Task, outcome: Outcome,
             strict: bool) -> None:
    records.append(outcome_record(task, outcome, strict))


class TablePrinter:
    """Readable one-line-per-file output, header printed before the first row."""

    def __init__(self, task: Task, strict: bool) -> None:
        self._header_done = False
        mode = "strict, tol 0" if strict else "reference, tol 1e-6"
        self._title = f"task {task.name} ({mode})"

    def row(self, task: Task, outcome: Outcome, strict: bool) -> None:
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


__all__ = ["Outcome", "TablePrinter", "collect", "outcome_record"]
