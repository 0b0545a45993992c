"""The run store's read side: a run's rows and the sums every report is checked against.

Part of :class:`~basevolve.store.sqlite.RunStore` (a mixin over its one connection):
the writes -- one committed transaction per event, the store contract's points 2-3 and
7 -- are :mod:`basevolve.store.sqlite`'s; here are the queries that only read, the
summary sums (``totals``: calls, tokens, FLOPs, estimates; ``decision_quality``;
``eval_totals``) among them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from basevolve.records import IMPOSSIBLE_USAGE


class RunQueries:
    """Read-only queries of a store file (``self.db``: the store's connection)."""

    db: sqlite3.Connection

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """The rows of one read (readers' own queries: export, replay, the dashboard)."""
        return self.db.execute(sql, params).fetchall()

    def get_run(self, run_id: str) -> dict[str, Any] | None:
        """The run's row (None when the store has no such run)."""
        row = self.db.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else dict(row)

    def task_changes(self, run_id: str) -> int:
        """How many task changes a resume of this run was allowed to make."""
        return int(self.db.execute("SELECT count(*) FROM task_changes WHERE run_id=?",
                                   (run_id,)).fetchone()[0])

    def list_runs(self) -> list[dict[str, Any]]:
        """Every run with its stored summary's sums, oldest first."""
        rows = self.query(
            "SELECT r.*, s.calls_completed, s.calls_lost, s.best_score, s.flops "
            "FROM runs r LEFT JOIN run_summary s USING (run_id) ORDER BY r.created_at"
        )
        return [dict(r) for r in rows]

    def eval_totals(self, run_id: str) -> dict[str, Any]:
        """Evaluation cost of a run (text tasks; zeros otherwise): answering calls sent,
        cache hits, and their FLOPs and tokens, as ``programs.eval_*`` sum them."""
        r = self.db.execute(
            "SELECT coalesce(sum(eval_flops), 0) f, coalesce(sum(eval_tokens), 0) t "
            "FROM programs WHERE run_id=?", (run_id,)).fetchone()
        n = self.db.execute(
            "SELECT coalesce(sum(cache_hit = 0), 0) sent, coalesce(sum(cache_hit), 0) hits "
            "FROM eval_calls WHERE run_id=?", (run_id,)).fetchone()
        return {"eval_flops": float(r["f"]), "eval_tokens": int(r["t"]),
                "eval_calls": int(n["sent"]), "eval_cache_hits": int(n["hits"])}

    def totals(self, run_id: str) -> dict[str, Any]:
        """Sums over stored calls: the ledger every report is checked against.

        ``calls.flops`` already sums the call's attempts (retries included, paper
        Appendix "Effective FLOPs"); tokens are the usage of each call's answered attempt.
        """
        r = self.db.execute(
            "SELECT sum(counted) completed, sum(status='lost') lost, "
            "coalesce(sum(finish_reason='length'),0) cut, "
            "coalesce(sum(prompt_tokens),0) p, coalesce(sum(cached_tokens),0) c, "
            "coalesce(sum(completion_tokens),0) o FROM calls WHERE run_id=?", (run_id,)
        ).fetchone()
        flops = self.db.execute(
            "SELECT coalesce(sum(flops), 0) FROM calls WHERE run_id=?", (run_id,)
        ).fetchone()[0]
        # FLOPs charged for attempts that reported no usage (the stated worst case of
        # ``--charge-unanswered``): part of ``flops``, shown apart as an estimate.
        unmeasured = self.db.execute(
            "SELECT coalesce(sum(a.flops), 0) FROM attempts a JOIN calls c USING (call_id) "
            "WHERE c.run_id=? AND a.prompt_tokens IS NULL", (run_id,)).fetchone()[0]
        # attempts whose reported usage was impossible, refused and charged as unmeasured
        # (basevolve.llm.usage: their error starts with IMPOSSIBLE_USAGE)
        impossible = self.db.execute(
            "SELECT count(*) FROM attempts a JOIN calls c USING (call_id) WHERE c.run_id=? "
            "AND substr(a.error, 1, ?) = ?",
            (run_id, len(IMPOSSIBLE_USAGE), IMPOSSIBLE_USAGE)).fetchone()[0]
        # calls lost in flight, charged under --charge-unanswered (issue 24, item 3): part
        # of flops, and an estimate like the charges above
        lost = self.db.execute(
            "SELECT coalesce(sum(flops), 0) f, coalesce(sum(flops > 0), 0) n FROM calls "
            "WHERE run_id=? AND status='lost'", (run_id,)).fetchone()
        unmeasured += float(lost["f"])
        return {"calls_completed": int(r["completed"] or 0), "calls_lost": int(r["lost"] or 0),
                "calls_lost_charged": int(lost["n"]), "flops_lost": float(lost["f"]),
                # replies cut at max_tokens (finish_reason "length"; issue 23, item 8)
                "calls_truncated": int(r["cut"]),
                "prompt_tokens": int(r["p"]), "cached_tokens": int(r["c"]),
                "completion_tokens": int(r["o"]), "flops": float(flops),
                "flops_unmeasured": float(unmeasured), "usage_impossible": int(impossible),
                **self.decision_quality(run_id),
                **self.eval_totals(run_id)}

    def decision_quality(self, run_id: str) -> dict[str, Any]:
        """How often the allocator really chose (issue 9).

        ``decisions_with_choice`` = fraction of bandit decisions (``ask`` events) with at
        least 2 eligible arms; None when the run made no bandit decision (K = 1, or only
        Algorithm 2's initial ``assign`` pulls).
        """
        r = self.db.execute(  # with K = 1 an "ask" picks the only arm: no bandit decision
            "SELECT count(*) n, coalesce(sum(n_eligible >= 2), 0) k FROM allocations "
            "WHERE run_id=:r AND kind='ask' AND (SELECT arms FROM runs WHERE run_id=:r) > 1",
            {"r": run_id}).fetchone()
        return {"bandit_decisions": int(r["n"]),
                "decisions_with_choice": r["k"] / r["n"] if r["n"] else None}


__all__ = ["RunQueries"]
