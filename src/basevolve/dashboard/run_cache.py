"""The rows a run page is computed from, kept between requests and read again only where
they can have changed (issue 22, item 11).

Why: the run page of a live 20,000-call run was rebuilt from every row of the run on
each refresh (a call's row spills to overflow pages, so reading its status reads its
prompt).  The store's contract (:mod:`basevolve.store`,
"no rewriting") says what can change:

* ``programs`` and ``allocations`` are only inserted, each with the run's next ``seq``:
  the rows after the largest ``seq`` already read are the new ones (an indexed range);
* a ``calls`` row changes only while it is ``pending`` (finished, failed or lost once),
  so the rows from the first call pending at the last read onwards are read again --
  the calls in flight plus the new ones;
* the run row, its trajectories' pull counters, its solutions and evaluation calls are
  a few rows, read every time (and the model bandit's last event, issue 25).

Counts are checked after each read (the covering indexes make them cheap); any
mismatch -- a store replaced under the dashboard, a rewritten row -- reads everything
again.  :meth:`RunRows.refresh` says whether anything changed, so a page is rebuilt
only then.

The first read of a run is the cost of its first view (issue 22, item 11; measured on a
20,000-call run: SQLite's part ~30-50 ms of the calls' scan, then about 0.1 us per value
handed to Python).  So each row is read narrowly: flags as bits of one integer, a status
read once (``CASE``), no per-call subquery, events without their seqs, rows as plain
tuples; ``tests/dashboard/test_run_page_reads.py`` holds the widths.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from basevolve.dashboard.db import ReadOnlyStore, columns

CALLS = ("call_id", "call_index", "seq", "trajectory", "parent_id", "flags", "flops",
         "prompt_tokens", "cached_tokens", "completion_tokens")
#: the bits of a call's ``flags`` (one integer per row: six flag columns were six Python
#: objects per call to create and convert, a fifth of the first read of a long run)
CALL_FLAGS = ("pending", "lost", "failed", "counted", "has_error", "truncated",
              # issue 25: a priced call, and one answered by another model than the run's
              # first (these two decide whether the page has a per-model section)
              "priced", "other_model")
PROGRAMS = ("program_id", "call_id", "is_initial", "seq", "trajectory", "generation",
            "parent_id", "score", "valid", "has_error", "eval_flops", "eval_tokens")
#: the bits of an allocation event's kind (its trajectory is the code above them)
EVENT_FLAGS = ("pull", "ask", "tell", "choice")
EVENTS = ("trajectory", "reward", *EVENT_FLAGS)
#: trajectories from 0 up to this are read as they are; others (impossible in a store
#: the engine wrote) as -1, which the page counts as trajectory 0 like any out of range
MAX_TRAJECTORY = 2**40
#: nullable columns (NULL -> nan) of each table; the others are integers or flags
CALL_FLOATS = frozenset({"parent_id", "flops"})
PROGRAM_FLOATS = frozenset({"call_id", "seq", "trajectory", "parent_id", "score",
                            "eval_flops", "eval_tokens"})
EVENT_FLOATS = frozenset({"reward"})
_BOOLS = frozenset({"is_initial", "valid", "has_error"})


def _cols(rows: list[Any], names: tuple[str, ...], floats: frozenset[str]) -> dict[str, Any]:
    return columns(rows, names, floats=floats, bools=_BOOLS & set(names))


def _unpack(cols: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """``cols["flags"]`` as one boolean column per name (bit i is ``names[i]``)."""
    flags = cols.pop("flags")
    for bit, name in enumerate(names):
        cols[name] = (flags >> bit) & 1 == 1
    return cols


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
        self.events_seq = -(2**62)  # the last allocation event read (its seq)
        self.small: Any = None  # the run row, pulls, solutions, evaluation calls
        self.models_memo: dict[str, Any] = {}  # the per-model section (run_models.py)

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
        if store.has("model_events"):  # the model bandit's last event (issue 25): one seek
            parts.append(store.one("SELECT max(seq) FROM model_events WHERE run_id = ?", (r,)))
        return tuple(None if p is None else tuple(p) for p in parts)

    def _calls_from(self, store: ReadOnlyStore, first: int) -> dict[str, np.ndarray]:
        """The run's calls from ``call_index`` ``first`` on, in call order.

        Only what the page computes with, and each flag as one bit of one integer: a
        row read is the cost of the first view of a long run (issue 22, item 11).  Who
        was retried comes from the attempts' own index, grouped, instead of a count
        per call: most calls have one attempt, so only the few retried ones come back.
        """
        # several models (issue 25): two more bits, read in the same pass (the row's
        # overflow pages are walked for its error anyway; a second scan would cost it again)
        models = ("| ((c.cost_usd IS NOT NULL) << 6) | (coalesce(c.model != (SELECT model "
                  "FROM runs WHERE run_id = :r), 0) << 7)") if store.has("calls", "model") else ""
        rows = store.query(f"""
            SELECT c.call_id, c.call_index, c.seq, c.trajectory, c.parent_id,
                   (CASE c.status WHEN 'pending' THEN 1 WHEN 'lost' THEN 2
                                   WHEN 'failed' THEN 4 ELSE 0 END)
                   | ((c.counted != 0) << 3) | (coalesce(c.error != '', 0) << 4)
                   | (coalesce(c.finish_reason = 'length', 0) << 5) {models},
                   coalesce(c.flops, 0.0), coalesce(c.prompt_tokens, 0),
                   coalesce(c.cached_tokens, 0), coalesce(c.completion_tokens, 0)
            FROM calls c WHERE c.run_id = :r AND c.call_index >= :f
            ORDER BY c.call_index""", {"r": self.run_id, "f": first}, plain=True)
        calls = _unpack(_cols(rows, CALLS, CALL_FLOATS), CALL_FLAGS)
        retried = store.query("""
            SELECT call_id, count(*) - 1 FROM attempts WHERE call_id IN (
                SELECT call_id FROM calls WHERE run_id = ? AND call_index >= ?)
            GROUP BY call_id HAVING count(*) > 1""", (self.run_id, first), plain=True)
        calls["retries"] = np.zeros(calls["call_id"].size, dtype=np.int64)
        if retried:
            ids = calls["call_id"]
            order = np.argsort(ids, kind="stable")
            want, n = np.array(retried, dtype=np.int64).T
            pos = np.minimum(np.searchsorted(ids[order], want), ids.size - 1)
            hit = ids[order][pos] == want  # a call inserted after the first read: next time
            calls["retries"][order[pos[hit]]] = n[hit]
        return calls

    def _programs_after(self, store: ReadOnlyStore, seq: float) -> list[Any]:
        cost = "eval_flops, eval_tokens" if store.has("programs", "eval_flops") else "0.0, 0"
        after = "" if seq != seq else "AND seq > :s"  # NaN: nothing read yet
        # Told order: the initial program (seq NULL: first in SQLite's order) then by seq,
        # read in the order of the (run_id, seq) index, so SQLite sorts nothing.
        return store.query(f"""
            SELECT program_id, call_id, is_initial, seq, trajectory, generation, parent_id,
                   score, valid, coalesce(error != '', 0), {cost}
            FROM programs WHERE run_id = :r {after}
            ORDER BY seq, program_id""", {"r": self.run_id, "s": seq}, plain=True)

    def _events_after(self, store: ReadOnlyStore, seq: int) -> tuple[dict[str, np.ndarray], int]:
        """Allocation events after ``seq`` and the seq of the last one.

        One small integer per event (trajectory * 16 + kind bits; Python keeps integers up
        to 256 as shared objects, so K <= 16 trajectories cost no allocation) and the
        reward; the events are bounded by the largest seq taken first rather than read
        with their seqs.  (``CASE x WHEN ..`` reads a column once, ``x = .. | x = ..``
        once per test: for a call's status that is one more read of its overflow pages.)
        The choice bit is only set on asks, the only events it is counted for.
        """
        top = store.one("SELECT max(seq) FROM allocations WHERE run_id = ?", (self.run_id,))
        last = seq if top is None or top[0] is None else max(seq, int(top[0]))
        choice = "n_eligible > 1" if store.has("allocations", "n_eligible") else "0"
        rows = [] if last == seq else store.query(f"""
            SELECT (CASE WHEN trajectory BETWEEN 0 AND {MAX_TRAJECTORY} THEN trajectory
                    ELSE -1 END) * 16
                   + (CASE kind WHEN 'assign' THEN 1 WHEN 'ask' THEN 3 + (coalesce({choice}, 0) << 3)
                                WHEN 'tell' THEN 4 ELSE 0 END),
                   reward
            FROM allocations WHERE run_id = ? AND seq > ? AND seq <= ? ORDER BY seq""",
                                           (self.run_id, seq, last), plain=True)
        cols = columns(rows, ("code", "reward"), floats=EVENT_FLOATS)
        code = cols.pop("code")
        cols["flags"], cols["trajectory"] = code & 15, code >> 4
        return _unpack(cols, EVENT_FLAGS), last

    def _read_all(self, store: ReadOnlyStore) -> bool:
        self.calls = self._calls_from(store, -(2**62))
        self.program_rows = self._programs_after(store, float("nan"))
        self.programs = _cols(self.program_rows, PROGRAMS, PROGRAM_FLOATS)
        self.events, self.events_seq = self._events_after(store, -(2**62))
        return True

    def _read_new(self, store: ReadOnlyStore) -> bool:
        assert self.calls is not None and self.programs is not None and self.events is not None
        calls, pending = self.calls, np.flatnonzero(self.calls["pending"])
        keep = int(pending[0]) if pending.size else calls["call_index"].size
        first = int(calls["call_index"][keep]) if keep < calls["call_index"].size else (
            int(calls["call_index"][-1]) + 1 if calls["call_index"].size else -(2**62))
        fresh = self._calls_from(store, first)
        changed = any(not np.array_equal(calls[k][keep:], fresh[k], equal_nan=True)
                      for k in fresh)
        self.calls = _join(calls, keep, fresh)
        told = self.programs["seq"][~np.isnan(self.programs["seq"])]
        # NaN: nothing read yet; -1: only the initial program (whose seq is NULL)
        last = float(told.max()) if told.size else (-1.0 if self.program_rows else float("nan"))
        new = self._programs_after(store, last)
        if new:
            self.program_rows += new
            self.programs = _join(self.programs, len(self.program_rows) - len(new),
                                  _cols(new, PROGRAMS, PROGRAM_FLOATS))
        events, self.events_seq = self._events_after(store, self.events_seq)
        if events["trajectory"].size:
            self.events = _join(self.events, self.events["trajectory"].size, events)
        return changed or bool(new) or bool(events["trajectory"].size)

    def _consistent(self, store: ReadOnlyStore) -> bool:
        """Row counts as the indexes give them agree with what was read."""
        assert self.calls is not None and self.events is not None
        r = (self.run_id,)
        return (store.one("SELECT count(*) FROM calls WHERE run_id = ?", r)[0]  # type: ignore[index]
                == self.calls["call_id"].size
                and store.one("SELECT count(*) FROM programs WHERE run_id = ?", r)[0]  # type: ignore[index]
                == len(self.program_rows)
                and store.one("SELECT count(*) FROM allocations WHERE run_id = ?", r)[0]  # type: ignore[index]
                == self.events["trajectory"].size)


__all__ = ["CALLS", "CALL_FLAGS", "EVENTS", "PROGRAMS", "RunRows"]
