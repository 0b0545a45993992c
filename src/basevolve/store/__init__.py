"""The basevolve run store: SQLite (WAL), one file, many runs.

Contract (what every reader and writer may rely on; tests/store checks each point on
a real file):

1. **Identity.** A store is an SQLite file with table ``basevolve_meta`` holding
   ``format = basevolve-store`` and ``PRAGMA user_version`` = number of migrations
   applied (:mod:`basevolve.store.schema`).  Any other file (not SQLite, or SQLite
   without the marker) is refused with :class:`~basevolve.errors.StoreError` and left
   byte-for-byte untouched; a newer schema is refused too.
2. **Durability.** WAL journal, ``synchronous=NORMAL``; each event is one committed
   transaction, so a SIGKILL loses nothing that was written.
3. **Write-ahead of actions.** The engine writes a call row (``pending``) before the
   request, the completion before the evaluation, the program before the protocol's
   ``tell``, and each allocation event before it acts on it.
4. **Ordering.** Per run, one counter ``seq`` orders call asks (``calls.seq``), program
   tells (``programs.seq``) and allocation events (``allocations.seq``): replaying all
   three merged by ``seq`` reproduces the engine's ask/tell order exactly (resume).
5. **Budget ledger.** ``calls.counted = 1`` marks a call charged against the budget C;
   a finished run has exactly C counted calls.  ``lost`` calls were in flight when a
   process died; a lost or uncounted failed call is re-issued as a new row whose
   ``reissue_of`` points at it (at most one re-issue per call).
6. **Uniqueness.** One program per call (``programs.call_id`` unique), one initial
   program per run, unique ``(run_id, call_index)`` and ``(run_id, seq)``: duplicates
   are impossible, not merely avoided.
7. **No rewriting.** Rows are inserted once; the only updates are state transitions
   (call ``pending -> ok|failed|lost``, run status, trajectory pull counters and the
   per-run summary, which is derived data) and an allowed task change (the run's
   current task hash, with the change itself inserted in ``task_changes``).
8. **Task identity.** ``runs.task`` is the task's declared name; ``runs.task_sha256``
   (+ path/source or version) identifies the scorer the run's programs were scored with,
   and a resume with a different task is refused unless allowed and recorded
   (:mod:`basevolve.tasks.identity`).

9. **Evaluation cost.** A text task's answering-LLM calls (issue 15) are stored with
   the program they scored (``eval_calls``, inserted in the program's transaction) and
   summed in ``programs.eval_flops`` / ``eval_tokens``; they are not calls of C
   (``calls`` holds only the mutation/judge/meta calls the budget counts).
10. **Text is valid UTF-8.** Every text value a store writes is made storable first
    (:mod:`basevolve.store.connection`): a surrogate pair becomes its character, a lone
    surrogate becomes U+FFFD (:mod:`basevolve.safe_text`).  Text from outside (a reply,
    a program's output or exception) can therefore never fail a write or a later read.

Tables: ``runs``, ``trajectories``, ``calls``, ``attempts``, ``programs``,
``allocations``, ``run_summary``, ``task_changes``, ``solutions`` (the best program's
returned value, for pictures drawn without running code), ``eval_calls``.  Tidy exports:
:mod:`basevolve.store.export`.
"""

from __future__ import annotations

from basevolve.store.schema import SCHEMA_VERSION
from basevolve.store.sqlite import RunStore

__all__ = ["SCHEMA_VERSION", "RunStore"]
