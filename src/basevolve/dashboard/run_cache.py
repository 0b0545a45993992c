"""The rows a run page is computed from, kept between requests and read again only where
they can have changed (issue 22, item 11).

Why: the run page of a live 20,000-call run was rebuilt from every row of the run on
each refresh (~200 ms of CPU in SQLite alone: a call's row spills to overflow pages, so
reading its status reads its prompt).  The store's contract (:mod:`basevolve.store`,
"no rewriting") says what can change:

* ``programs`` and ``allocations`` are only inserted, each with the run's next ``seq``:
  the rows after the largest ``seq`` already read are the new ones (an indexed range);
* a ``calls`` row changes only while it is ``pending`` (finished, failed or lost once),
  so the rows from the first call pending at the last read onwards are read again --
  the calls in flight plus the new ones;
* the run row, its trajectories' pull counters, its solutions and evaluation calls are
  a few rows, read every time.

Counts are checked after each read (the covering indexes make them cheap); any
mismatch -- a store replaced under the dashboard, a rewritten row -- reads everything
again.  :meth:`RunRows.refresh` says whether anything changed, so a page is rebuilt
only then.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from basevolve.dashboard.db import ReadOnlyStore, columns

CALLS = ("call_id", "call_index", "seq", "trajectory", "parent_id", "pending", "lost",
         "failed", "counted", "has_error", "flops", "prompt_tokens", "cached_tokens",
         "completion_tokens", "attempts", "truncated")
PROGRAMS = ("program_id", "call_id", "is_initial", "seq", "trajectory", "generation",
            "parent_id", "score", "valid", "has_error", "eval_flops", "eval_tokens")
EVENTS = ("seq", "pull", "ask", "tell", "trajectory", "reward", "choice")
#: nullable columns (NULL -> nan) of each table; the others are integers or flags
CALL_FLOATS = frozenset({"parent_id", "flops"})
PROGRAM_FLOATS = frozenset({"call_id", "seq", "trajectory", "parent_id", "score",
                            "eval_flops", "eval_tokens"})
EVENT_FLOATS = frozenset({"reward"})
_BOOLS = frozenset({"pending", "lost", "failed", "counted", "has_error", "is_initial",
                    "valid", "pull", "ask", "tell", "choice", "truncated"})


def _cols(rows: list[Any], names: tuple[str, ...], floats: frozenset[str]) -> dict[str, Any]:
    return columns(rows, names, floats=floats, bools=_BOOLS & set(names))


def _join(old: dict[str, np.ndarray] | None, keep: int, new: dict[str, np.ndarray]
          ) -> dict[str, np.ndarray]:
    """``old``'s first ``keep`` rows, then ``new`` (column by column)."""
    if old is None:
        return new
    return {k: np.concatenate([old[k][:keep], new[k]]) for k in new}


class RunRows:
    """One run's calls, programs and allocation events as numpy columns (module doc)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.lock = threading.Lock()  # one refresh and page build at a time (thread pool)
        self._reset()

    def _reset(self) -> None:
        self.calls: dict[str, np.ndarray] | None = None
        self.programs: dict[str, np.ndarray] | None = None
        self.program_rows: list[Any] = []  # tuples, for the lineage the page lists
        self.events: dict[str, np.ndarray] | None = None
        self.small: Any = None  # the run row, pulls, solutions, evaluation calls

    def refresh(self, store: ReadOnlyStore) -> bool:
        """Read what can have changed since the last call; True when something did."""
        small = self._small(store)
        if self.calls is None:
            changed = self._read_all(store)
        else:
            changed = self._read_new(store)
            if not self._consistent(store):
                self._reset()
                changed = self._read_all(store)
        changed = changed or small != self.small
        self.small = small
        return changed

    # ------------------------------------------------------------------ reads
    def _small(self, store: ReadOnlyStore) -> tuple[Any, ...]:
        r = self.run_id
        parts = [store.one("SELECT * FROM runs WHERE run_id = ?", (r,)),
                 tuple(map(tuple, store.query("SELECT trajectory, protocol, pulls FROM "
                                              "trajectories WHERE run_id = ?", (r,))))]
        if store.has("solutions"):
            parts.append(store.one("SELECT count(*) FROM solutions WHERE run_id = ?", (r,)))
        if store.has("eval_calls"):
            parts.append(store.one("SELECT count(*) FROM eval_calls WHERE run_id = ?", (r,)))
        return tuple(None if p is None else tuple(p) for p in parts)

    def _calls_from(self, store: ReadOnlyStore, first: int) -> dict[str, np.ndarray]:
        rows = store.query("""
            SELECT c.call_id, c.call_index, c.seq, c.trajectory, c.parent_id,
                   c.status = 'pending', c.status = 'lost', c.status = 'failed', c.counted,
                   coalesce(c.error != '', 0), coalesce(c.flops, 0.0),
                   coalesce(c.prompt_tokens, 0), coalesce(c.cached_tokens, 0),
                   coalesce(c.completion_tokens, 0),
                   (SELECT count(*) FROM attempts a WHERE a.call_id = c.call_id),
                   coalesce(c.finish_reason = 'length', 0)
            FROM calls c WHERE c.run_id = ? AND c.call_index >= ?
            ORDER BY c.call_index""", (self.run_id, first))
        return _cols(rows, CALLS, CALL_FLOATS)

    def _programs_after(self, store: ReadOnlyStore, seq: float) -> list[Any]:
        cost = "eval_flops, eval_tokens" if store.has("programs", "eval_flops") else "0.0, 0"
        after = "" if seq != seq else "AND seq > :s"  # NaN: nothing read yet
        return [tuple(r) for r in store.query(f"""
            SELECT program_id, call_id, is_initial, seq, trajectory, generation, parent_id,
                   score, valid, coalesce(error != '', 0), {cost}
            FROM programs WHERE run_id = :r {after}
            ORDER BY coalesce(seq, -1), program_id""", {"r": self.run_id, "s": seq})]

    def _events_after(self, store: ReadOnlyStore, seq: int) -> dict[str, np.ndarray]:
        choice = "n_eligible > 1" if store.has("allocations", "n_eligible") else "0"
        rows = store.query(f"""
            SELECT seq, kind IN ('assign', 'ask'), kind = 'ask', kind = 'tell', trajectory,
                   reward, coalesce({choice}, 0)
            FROM allocations WHERE run_id = ? AND seq > ? ORDER BY seq""", (self.run_id, seq))
        return _cols(rows, EVENTS, EVENT_FLOATS)

    def _read_all(self, store: ReadOnlyStore) -> bool:
        self.calls = self._calls_from(store, -(2**62))
        self.program_rows = self._programs_after(store, float("nan"))
        self.programs = _cols(self.program_rows, PROGRAMS, PROGRAM_FLOATS)
        self.events = self._events_after(store, -(2**62))
        return True

    def _read_new(self, store: ReadOnlyStore) -> bool:
        assert self.calls is not None and self.programs is not None and self.events is not None
        calls, pending = self.calls, np.flatnonzero(self.calls["pending"])
        keep = int(pending[0]) if pending.size else calls["call_index"].size
        first = int(calls["call_index"][keep]) if keep < calls["call_index"].size else (
            int(calls["call_index"][-1]) + 1 if calls["call_index"].size else -(2**62))
        fresh = self._calls_from(store, first)
        changed = any(not np.array_equal(calls[k][keep:], fresh[k], equal_nan=True)
                      for k in CALLS)
        self.calls = _join(calls, keep, fresh)
        told = self.programs["seq"][~np.isnan(self.programs["seq"])]
        # NaN: nothing read yet; -1: only the initial program (whose seq is NULL)
        last = float(told.max()) if told.size else (-1.0 if self.program_rows else float("nan"))
        new = self._programs_after(store, last)
        if new:
            self.program_rows += new
            self.programs = _join(self.programs, len(self.program_rows) - len(new),
                                  _cols(new, PROGRAMS, PROGRAM_FLOATS))
        seq = int(self.events["seq"][-1]) if self.events["seq"].size else -(2**62)
        events = self._events_after(store, seq)
        if events["seq"].size:
            self.events = _join(self.events, self.events["seq"].size, events)
        return changed or bool(new) or bool(events["seq"].size)

    def _consistent(self, store: ReadOnlyStore) -> bool:
        """Row counts as the indexes give them agree with what was read."""
        assert self.calls is not None and self.events is not None
        r = (self.run_id,)
        return (store.one("SELECT count(*) FROM calls WHERE run_id = ?", r)[0]  # type: ignore[index]
                == self.calls["call_id"].size
                and store.one("SELECT count(*) FROM programs WHERE run_id = ?", r)[0]  # type: ignore[index]
                == len(self.program_rows)
                and store.one("SELECT count(*) FROM allocations WHERE run_id = ?", r)[0]  # type: ignore[index]
                == self.events["seq"].size)


__all__ = ["CALLS", "EVENTS", "PROGRAMS", "RunRows"]
