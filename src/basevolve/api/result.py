"""What :func:`basevolve.run` returns: the ``--json`` summary plus tables from the store.

The store is the ledger (paper Section 3: a run is C LLM calls; Appendix A: effective
FLOPs per call), so every number here is read back from it -- a resumed run and an
uninterrupted one report the same way.  The DataFrame accessors read the store when
called, not when the run ends, so a result stays cheap to keep in a notebook.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class RunResult:
    """One finished run: what ``basevolve run --json`` prints, plus its tables.

    Attributes:
        run_id: Name of the run in the store (pass it to :func:`basevolve.resume`).
        status: ``"finished"`` after a complete run.
        task: Task name.
        best_score: Best normalised score, the initial program included (1.0 = best
            published value for the built-in tasks).
        best_code: Source of the best program (``None`` if no program was scored).
        best_program: Path of ``best_program.py`` when the run was given ``out=``.
        flops: Effective FLOPs of every stored call and retry (paper, Appendix A).
        prompt_tokens: Prompt tokens over all calls.
        cached_tokens: Prompt tokens the server reported as served from its cache.
        completion_tokens: Completion tokens over all calls.
        calls_completed: LLM calls charged to the budget; equals the budget C.
        calls_lost: Calls that were in flight when a process died (re-issued on resume).
        store: Path of the SQLite store holding the whole record.
        resumed: True when this result comes from :func:`basevolve.resume` continuing
            an unfinished run.
        summary: The complete ``basevolve run --json`` document (allocator, arms,
            pulls per arm, valid rate, ...).
    """

    run_id: str
    status: str
    task: str
    best_score: float | None
    best_code: str | None = field(repr=False)
    best_program: str | None
    flops: float
    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    calls_completed: int
    calls_lost: int
    store: str
    resumed: bool = False
    summary: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_summary(cls, summary: dict[str, Any]) -> RunResult:
        """Build from the engine's summary dict (:mod:`basevolve.engine.summary`)."""
        doc = {k: v for k, v in summary.items() if k != "best_code"}
        return cls(
            run_id=summary["run_id"], status=summary["status"], task=summary["task"],
            best_score=summary["best_score"], best_code=summary.get("best_code"),
            best_program=summary.get("best_program"), flops=float(summary["flops"]),
            prompt_tokens=int(summary["prompt_tokens"]),
            cached_tokens=int(summary["cached_tokens"]),
            completion_tokens=int(summary["completion_tokens"]),
            calls_completed=int(summary["calls_completed"]),
            calls_lost=int(summary["calls_lost"]), store=str(summary["store"]),
            resumed=bool(summary.get("resumed", False)), summary=doc,
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``basevolve run --json`` document of this run (a copy)."""
        return dict(self.summary)

    def run_row(self) -> dict[str, Any]:
        """This run as one row of the analysis runs table (:mod:`basevolve.analysis.tables`).

        ``pd.DataFrame([r.run_row() for r in results])`` is a ``runs=`` input for
        :func:`basevolve.analyze`, next to ``trajectories=`` built from
        :meth:`trajectories`.
        """
        s = self.summary
        return {"run_id": self.run_id, "task": self.task, "model": s["model"],
                "protocol": s["protocol"], "allocator": s["allocator"], "arms": s["arms"],
                "budget": s["budget"], "depth": s["depth"], "breadth": s["breadth"],
                "seed": s["seed"], "fitness": self.best_score, "flops": self.flops}

    def trajectories(self) -> pd.DataFrame:
        """Running best after every charged call of this run.

        Columns ``run_id, step, calls, generation, best_fitness, cumulative_flops``
        (``basevolve.store.export.TRAJECTORY_COLUMNS``) -- the analysis trajectory
        contract, so frames of several runs concatenate into a ``trajectories=`` input
        of `basevolve.analyze`.
        """
        from basevolve.store.export import trajectories_table

        df = trajectories_table(self.store)
        return df[df["run_id"] == self.run_id].reset_index(drop=True)

    def calls(self) -> pd.DataFrame:
        """Every LLM call of this run as stored: prompt, reply, tokens, FLOPs, status."""
        return self.table("calls")

    def programs(self) -> pd.DataFrame:
        """Every scored program of this run (the initial one included): code, score, validity."""
        return self.table("programs")

    def table(self, name: str) -> pd.DataFrame:
        """A stored table of this run: ``runs``, ``calls``, ``attempts``, ``programs``,
        ``allocations`` or ``trajectories`` (per-arm pulls of BaSE).

        Raises:
            ConfigError: ``name`` is not one of these tables.
        """
        from basevolve.store.export import raw_table

        return raw_table(self.store, name, self.run_id)

    def __str__(self) -> str:
        from basevolve.cli.run_cmd import summary_table

        return summary_table({**self.summary, "store": str(Path(self.store))})
