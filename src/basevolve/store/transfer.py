"""Move one run between stores: rows out of one file, into another in one transaction.

Why (issue 11, Ray executor): a run on a cluster node writes a node-local scratch store
(the engine's write-ahead durability needs a local SQLite file; SQLite must not be
shared over a network file system).  When the run is complete its rows travel to the
driver as plain data and :func:`import_run` writes them into the single sweep store in
one transaction, so a killed driver leaves either the whole run or none of it.

Row ids (``calls.call_id``, ``programs.program_id``) are per file, so they are shifted
past the target's largest ids, and every column that refers to them (declared foreign
keys, found with ``PRAGMA foreign_key_list``, plus ``calls.parent_id``) is shifted the
same way.  The derived ``run_summary`` row is not copied; the caller recomputes it from
the imported ledger.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from basevolve.errors import StoreError
from basevolve.store.sqlite import RunStore

#: Tables holding a run's ledger, in an order that satisfies their references.
RUN_TABLES = ("runs", "trajectories", "programs", "calls", "attempts", "allocations")
_ID_COLUMNS = {("calls", "call_id"): "calls", ("programs", "program_id"): "programs"}
#: References the schema does not declare as foreign keys.
_UNDECLARED = {("calls", "parent_id"): "programs"}


def export_run(store: RunStore, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of ``run_id`` as plain dicts, per table (picklable, JSON-able)."""
    if store.get_run(run_id) is None:
        raise StoreError(f"run {run_id!r} is not in {str(store.path)!r}")
    out: dict[str, list[dict[str, Any]]] = {}
    for table in RUN_TABLES:
        if table == "attempts":
            sql = ("SELECT a.* FROM attempts a JOIN calls c USING (call_id) WHERE c.run_id=? "
                   "ORDER BY a.call_id, a.attempt_index")
        else:
            sql = f"SELECT * FROM {table} WHERE run_id=?"
        out[table] = [dict(r) for r in store.query(sql, (run_id,))]
    return out


def _references(db: sqlite3.Connection) -> dict[tuple[str, str], str]:
    """(table, column) -> "calls" | "programs" for every column holding such an id."""
    refs = dict(_ID_COLUMNS) | dict(_UNDECLARED)
    for table in RUN_TABLES:
        for fk in db.execute(f"PRAGMA foreign_key_list({table})").fetchall():
            target, src, dst = fk[2], fk[3], fk[4]
            if (target, dst) in _ID_COLUMNS:
                refs[(table, src)] = target
    return refs


def import_run(store: RunStore, rows: dict[str, list[dict[str, Any]]]) -> str:
    """Insert an exported run into ``store`` in one transaction; returns its run id."""
    if len(rows.get("runs", [])) != 1:
        raise StoreError("an exported run must hold exactly one runs row")
    run_id = rows["runs"][0]["run_id"]
    if store.get_run(run_id) is not None:
        raise StoreError(f"run {run_id!r} is already in {str(store.path)!r}; not importing "
                         "it twice")
    db = store.db
    refs = _references(db)
    columns = {t: {r[1] for r in db.execute(f"PRAGMA table_info({t})")} for t in RUN_TABLES}
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("PRAGMA defer_foreign_keys = ON")
        offset = {
            "calls": db.execute("SELECT coalesce(max(call_id), 0) FROM calls").fetchone()[0],
            "programs": db.execute(
                "SELECT coalesce(max(program_id), 0) FROM programs").fetchone()[0],
        }
        for table in RUN_TABLES:
            for row in rows.get(table, []):
                extra = set(row) - columns[table]
                if extra:
                    raise StoreError(
                        f"run {run_id!r} has {table} columns this store lacks "
                        f"({', '.join(sorted(extra))}); use the same basevolve on every node")
                row = {k: (v + offset[refs[(table, k)]] if (table, k) in refs and v is not None
                           else v) for k, v in row.items()}
                db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES "
                           f"({', '.join('?' * len(row))})", list(row.values()))
        db.execute("COMMIT")
    except sqlite3.IntegrityError as exc:
        db.execute("ROLLBACK")
        raise StoreError(f"importing run {run_id!r} was refused: {exc}") from None
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return run_id


__all__ = ["RUN_TABLES", "export_run", "import_run"]
