"""The SQLite run store (see :mod:`basevolve.store` for the contract).

One connection per process, autocommit mode with explicit short transactions: every
``insert_*`` / ``complete_*`` method is one committed transaction, so the engine can
follow the rule "write the event, then act on it" and a SIGKILL at any instant leaves
a consistent store (WAL + ``synchronous=NORMAL`` survives a process crash; only a power
loss may drop the last transactions).
"""

from __future__ import annotations

import hashlib
import json
import platform
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from basevolve.errors import StoreError
from basevolve.safe_text import utf8_safe
from basevolve.store.connection import TextSafeConnection
from basevolve.store.decoding import read_leniently
from basevolve.store.queries import RunQueries
from basevolve.store.schema import inspect_file, migrate

#: Largest solution value (JSON text) kept for pictures; bigger values are not stored.
MAX_SOLUTION_BYTES = 1 << 20
#: Columns of an ``eval_calls`` row a text task's evaluation provides (schema version 5).
EVAL_CALL_FIELDS = ("idx", "question_id", "cache_key", "cache_hit", "status", "reply", "answer",
                    "gold", "correct", "prompt_tokens", "cached_tokens", "completion_tokens",
                    "flops", "latency_s", "attempts", "error")


def _versions() -> dict[str, str]:
    import numpy

    from basevolve import __version__

    return {
        "basevolve_version": __version__,
        "python_version": platform.python_version(),
        "numpy_version": numpy.__version__,
    }


class RunStore(RunQueries):
    """A basevolve store file; several runs share one file.  Its writes are here, its
    read-only queries and summary sums in :class:`~basevolve.store.queries.RunQueries`."""

    def __init__(self, path: str | Path, *, create: bool = True) -> None:
        self.path = Path(path)
        kind = inspect_file(self.path)  # refuses foreign files before touching them
        if kind == "new" and not create:
            raise StoreError(f"store {str(self.path)!r} does not exist (or is empty); run `basevolve run` first")
        try:
            if kind == "new":
                self.path.parent.mkdir(parents=True, exist_ok=True)
            # every text bound is made storable first (lone surrogates: basevolve.safe_text)
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0,
                                      factory=TextSafeConnection)
            self.db.row_factory = sqlite3.Row
            read_leniently(self.db)  # invalid UTF-8 in a stored text reads as U+FFFD
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            migrate(self.db)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open store {str(self.path)!r}: {exc}") from None
        self._seq: dict[str, int] = {}

    # -- plumbing -------------------------------------------------------------------
    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One committed transaction, rolled back on any error (a refused row becomes a
        :class:`StoreError`)."""
        try:
            self.db.execute("BEGIN IMMEDIATE")
            yield self.db
            self.db.execute("COMMIT")
        except sqlite3.IntegrityError as exc:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise StoreError(f"store refused a duplicate or inconsistent row: {exc}") from None
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            raise

    def _tx(self, statements: Iterable[tuple[str, Sequence[Any]]]) -> list[int]:
        """Run statements in one transaction; return each statement's lastrowid."""
        with self._transaction() as db:
            return [db.execute(sql, params).lastrowid or 0 for sql, params in statements]

    def next_seq(self, run_id: str) -> int:
        """Next value of the run's event counter (shared by calls, programs, allocations).

        One counter orders every ask, tell and allocation event, which is what resume
        replays; it is recovered from the rows on first use after a restart.
        """
        if run_id not in self._seq:
            row = self.db.execute(
                "SELECT max(s) FROM (SELECT max(seq) s FROM calls WHERE run_id=:r "
                "UNION ALL SELECT max(told_seq) FROM calls WHERE run_id=:r "
                "UNION ALL SELECT max(seq) FROM programs WHERE run_id=:r "
                "UNION ALL SELECT max(seq) FROM allocations WHERE run_id=:r "
                "UNION ALL SELECT max(seq) FROM model_events WHERE run_id=:r)",
                {"r": run_id},
            ).fetchone()
            self._seq[run_id] = -1 if row[0] is None else int(row[0])
        self._seq[run_id] += 1
        return self._seq[run_id]

    # -- runs -----------------------------------------------------------------------
    def create_run(self, run_id: str, config: dict[str, Any], *, active_params: float | None,
                   task: dict[str, Any] | None = None) -> None:
        """Create the run row; ``task`` is a :class:`~basevolve.tasks.identity.TaskIdentity`
        dict whose ``name`` becomes the ``task`` column (else the config's task spec)."""
        if self.get_run(run_id) is not None:
            raise StoreError(
                f"run {run_id!r} already exists in {str(self.path)!r}; pick another --run-id "
                f"or continue it with --resume {run_id}"
            )
        now = time.time()
        cols = {
            "run_id": run_id,
            "task": task["name"] if task else config["task"],
            "model": config["model"],
            "protocol": config["protocol"],
            "allocator": config["allocator"],
            "arms": config["arms"],
            "budget": config["budget"],
            "depth": config["depth"],
            "breadth": config["breadth"],
            "seed": config["seed"],
            "active_params": active_params,
            "config_json": json.dumps(config, sort_keys=True),
            "status": "created",
            "created_at": now,
            "updated_at": now,
            **_versions(),
        }
        if task:
            cols.update({f"task_{k}": task.get(k) for k in ("kind", "path", "sha256", "version",
                                                             "source")})
        stmts: list[tuple[str, Sequence[Any]]] = [
            (
                f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                list(cols.values()),
            )
        ]
        stmts += [
            ("INSERT INTO trajectories (run_id, trajectory, protocol) VALUES (?, ?, ?)",
             (run_id, i, config["protocol"]))
            for i in range(int(config["arms"]))
        ]
        self._tx(stmts)

    def record_task_change(self, run_id: str, task: dict[str, Any]) -> None:
        """Record an allowed task change (``--allow-task-change``) and adopt the new identity."""
        row = self.get_run(run_id)
        old = None if row is None else row.get("task_sha256")
        self._tx([
            ("INSERT INTO task_changes (run_id, changed_at, old_sha256, new_sha256, task_path, "
             "task_source) VALUES (?, ?, ?, ?, ?, ?)",
             (run_id, time.time(), old, task["sha256"], task.get("path"), task.get("source"))),
            ("UPDATE runs SET task_sha256=?, task_source=?, updated_at=? WHERE run_id=?",
             (task["sha256"], task.get("source"), time.time(), run_id)),
        ])

    def set_status(self, run_id: str, status: str, error: str | None = None) -> None:
        self._tx([("UPDATE runs SET status=?, error=?, updated_at=? WHERE run_id=?",
                   (status, error, time.time(), run_id))])

    # -- calls ----------------------------------------------------------------------
    def insert_call(self, run_id: str, **row: Any) -> int:
        """Record an LLM call *before* its request is sent (status ``pending``)."""
        row = {"run_id": run_id, "status": "pending", "created_at": time.time(), **row}
        row["messages_json"] = json.dumps(row.pop("messages"))
        if "meta" in row:
            meta = row.pop("meta")
            row["meta_json"] = None if meta is None else json.dumps(meta, default=_jsonable)
        sql = f"INSERT INTO calls ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"
        return self._tx([(sql, list(row.values()))])[0]

    def finish_call(self, call_id: int, *, status: str, counted: bool,
                    fields: dict[str, Any], attempts: Sequence[dict[str, Any]]) -> None:
        """Record a call's outcome and all its attempts in one transaction.

        Only a ``pending`` row may finish: a second completion of the same call (a bug,
        or a resumed process racing a live one) is refused instead of rewriting history.
        """
        sets = ", ".join(f"{k}=?" for k in fields)
        stmts: list[tuple[str, Sequence[Any]]] = [(
            f"UPDATE calls SET status=?, counted=?, completed_at=?{', ' if sets else ''}{sets} "
            "WHERE call_id=? AND status='pending'",
            (status, int(counted), time.time(), *fields.values(), call_id),
        )]
        for a in attempts:
            a = {"call_id": call_id, **a}
            stmts.append((f"INSERT INTO attempts ({', '.join(a)}) VALUES ({', '.join('?' * len(a))})",
                          list(a.values())))
        self.db.execute("BEGIN IMMEDIATE")
        try:
            cur = self.db.execute(*stmts[0])
            if cur.rowcount != 1:
                raise StoreError(f"call {call_id} is not pending; refusing to overwrite it")
            for sql, params in stmts[1:]:
                self.db.execute(sql, params)
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:  # SQLite itself rolled back a COMMIT the full
                self.db.execute("ROLLBACK")  # disk refused (issue 22, item 9)
            raise

    def mark_told(self, call_id: int, seq: int) -> None:
        """Record (at ``seq``) that a text reply (judge, meta prompt) went to its protocol."""
        self._tx([("UPDATE calls SET told_seq=? WHERE call_id=?", (seq, call_id))])

    def mark_lost(self, run_id: str,
                  charge: Callable[[Mapping[str, Any]], float] | None = None) -> list[int]:
        """Turn the run's ``pending`` calls (in flight when the run stopped) into ``lost``.

        ``charge(row)`` (row: ``call_id, messages_json, meta_json, model``) gives each one's
        ``flops`` (:mod:`basevolve.engine.lost_calls`); without it ``flops`` stays NULL."""
        rows = self.query("SELECT call_id, messages_json, meta_json, model FROM calls WHERE run_id=? "
                          "AND status='pending' ORDER BY seq", (run_id,))
        now = time.time()
        self._tx([("UPDATE calls SET status='lost', completed_at=?, flops=? WHERE call_id=?",
                   (now, None if charge is None else float(charge(r)), r["call_id"]))
                  for r in rows])
        return [r["call_id"] for r in rows]

    # -- programs -------------------------------------------------------------------
    def insert_program(self, run_id: str, *, code: str | None, score: float, valid: bool,
                       generation: int, eval_calls: Sequence[dict[str, Any]] = (),
                       **row: Any) -> int:
        """One program row (and, for a text task, its evaluation calls) in one transaction.

        ``eval_calls``: one dict per answering-LLM request of the evaluation (keys of
        the ``eval_calls`` table); the program's ``eval_flops`` / ``eval_tokens`` columns
        are passed in ``row``.
        """
        row = {
            "run_id": run_id, "code": code, "score": float(score), "valid": int(valid),
            "generation": generation, "created_at": time.time(),
            # the hash of the text as stored (the connection stores it utf8_safe)
            "code_sha256": None if code is None
            else hashlib.sha256(utf8_safe(code).encode()).hexdigest(),
            **row,
        }
        if "metrics" in row:
            row["metrics_json"] = json.dumps(row.pop("metrics"), sort_keys=True)
        sql = f"INSERT INTO programs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"
        with self._transaction() as db:
            pid = int(db.execute(sql, list(row.values())).lastrowid or 0)
            db.executemany(
                f"INSERT INTO eval_calls (run_id, program_id, {', '.join(EVAL_CALL_FIELDS)}) "
                f"VALUES (?, ?, {', '.join('?' * len(EVAL_CALL_FIELDS))})",
                [(run_id, pid, *(c.get(f) for f in EVAL_CALL_FIELDS)) for c in eval_calls])
        return pid

    # -- allocations ----------------------------------------------------------------
    def insert_allocation(self, run_id: str, *, seq: int, kind: str, pull_id: int,
                          trajectory: int, call_index: int | None = None,
                          units: int | None = None,
                          reward: float | None = None, eligible: Sequence[bool] | None = None,
                          n_eligible: int | None = None,
                          summary: dict[str, Any] | None = None) -> None:
        stmts: list[tuple[str, Sequence[Any]]] = [(
            "INSERT INTO allocations (run_id, seq, kind, pull_id, call_index, trajectory, units, "
            "reward, eligible_json, n_eligible, summary_json, created_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, seq, kind, pull_id, call_index, trajectory, units, reward,
             None if eligible is None else json.dumps([bool(e) for e in eligible]),
             n_eligible,
             None if summary is None else json.dumps(summary, default=_jsonable),
             time.time()),
        )]
        if kind in ("assign", "ask", "cancel"):  # a cancelled pull got no call: uncount it
            stmts.append(("UPDATE trajectories SET pulls = pulls + ? WHERE run_id=? AND trajectory=?",
                          (-1 if kind == "cancel" else 1, run_id, trajectory)))
        self._tx(stmts)

    def extend_pull(self, run_id: str, pull_id: int, calls: int) -> None:
        """A pull gains ``calls`` follow-up calls (engine/followups.py): its stored
        ``units`` (the calls it consists of) grow, so a resume reopens it whole."""
        self._tx([("UPDATE allocations SET units = units + ? WHERE run_id=? AND seq=?",
                   (int(calls), run_id, int(pull_id)))])

    def insert_model_event(self, run_id: str, *, seq: int, kind: str, call_index: int,
                           model: str, arm: int, reward: float | None = None,
                           eligible: Sequence[bool] | None = None,
                           summary: dict[str, Any] | None = None) -> None:
        """One model decision or reward (issue 25; engine/models.py), before it acts."""
        self._tx([(
            "INSERT INTO model_events (run_id, seq, kind, call_index, model, arm, reward, "
            "eligible_json, summary_json, created_at) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (run_id, seq, kind, call_index, model, arm, reward,
             None if eligible is None else json.dumps([bool(e) for e in eligible]),
             None if summary is None else json.dumps(summary, default=_jsonable),
             time.time()))])

    def forget_unissued_asks(self, run_id: str) -> None:
        """Drop model-bandit ``ask`` events whose call row was never written.

        Why: the engine writes a model's ``ask`` just before the call's row; a process
        killed between the two writes leaves an ask for a call that never existed.  The
        resume decides that call again and records its own ask, so the stale one would
        make two asks for one call (and a store unlike the uninterrupted run's).
        """
        self._tx([("DELETE FROM model_events WHERE run_id=? AND kind='ask' AND call_index "
                   "NOT IN (SELECT call_index FROM calls WHERE run_id=?)", (run_id, run_id))])

    # -- solutions ------------------------------------------------------------------
    def save_solution(self, run_id: str, program_id: int, value: Any) -> bool:
        """Keep the plain-data value a program returned (the best one, for its picture).

        Returns False (and stores nothing) when the value is not JSON-representable or
        larger than :data:`MAX_SOLUTION_BYTES`: a picture is a convenience, never a reason
        to bloat the store.  Stored once per (run, program); a repeat is ignored.
        """
        try:
            text = json.dumps(value, default=_jsonable)
        except (TypeError, ValueError):
            return False
        if len(text) > MAX_SOLUTION_BYTES:
            return False
        self._tx([("INSERT OR IGNORE INTO solutions (run_id, program_id, value_json, created_at) "
                   "VALUES (?, ?, ?, ?)", (run_id, int(program_id), text, time.time()))])
        return True

    # -- summary --------------------------------------------------------------------
    def write_summary(self, run_id: str, summary: dict[str, Any]) -> None:
        cols = ("calls_completed", "calls_lost", "best_score", "best_program_id", "flops",
                "prompt_tokens", "cached_tokens", "completion_tokens")
        self._tx([(
            f"INSERT OR REPLACE INTO run_summary (run_id, {', '.join(cols)}, summary_json, "
            f"updated_at) VALUES (?, {', '.join('?' * len(cols))}, ?, ?)",
            (run_id, *(summary.get(c) for c in cols),
             json.dumps(summary, default=_jsonable), time.time()),
        )])


def _jsonable(obj: Any) -> Any:
    """JSON fallback for numpy scalars/arrays inside allocator summaries."""
    tolist = getattr(obj, "tolist", None)
    if tolist is not None:
        return tolist()
    return str(obj)
