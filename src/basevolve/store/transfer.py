"""Move one run between stores: rows out of one file, into another in one transaction.

Why (issue 11, Ray executor): a run on a cluster node writes a node-local scratch store
(the engine's write-ahead durability needs a local SQLite file; SQLite must not be
shared over a network file system).  When the run is complete its rows travel to the
driver as plain data and :func:`import_run` writes them into the single sweep store in
one transaction, so a killed driver leaves either the whole run or none of it.

Row ids (``calls.call_id``, ``programs.program_id``) are per file, so they are shifted
past the target's largest ids, and every column that refers to them (declared foreign
keys, found with ``PRAGMA foreign_key_list``, plus ``calls.parent_id``) is shifted the
same way.  The tables are found in the schema (every table with a ``run_id`` column, plus
``attempts`` through its call), so tables added by later migrations travel too.  The
derived ``run_summary`` row is not copied; the caller recomputes it from the imported
ledger.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from basevolve.errors import StoreError
from basevolve.store.sqlite import RunStore

#: Tables that are not a run's own rows (derived, or the store's marker).
_NOT_RUN_ROWS = ("run_summary", "basevolve_meta", "sqlite_sequence")
_ID_COLUMNS = {("calls", "call_id"): "calls", ("programs", "program_id"): "programs"}
#: References the schema does not declare as foreign keys.
_UNDECLARED = {("calls", "parent_id"): "programs"}


def export_run(store: RunStore, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of ``run_id`` as plain dicts, per table (picklable, JSON-able)."""
    if store.get_run(run_id) is None:
        raise StoreError(f"run {run_id!r} is not in {str(store.path)!r}")
    out: dict[str, list[dict[str, Any]]] = {}
    for table in run_tables(store.db):
        if table == "attempts":
            sql = ("SELECT a.* FROM attempts a JOIN calls c USING (call_id) WHERE c.run_id=? "
                   "ORDER BY a.call_id, a.attempt_index")
        else:
            sql = f"SELECT * FROM {table} WHERE run_id=?"
        out[table] = [dict(r) for r in store.query(sql, (run_id,))]
    return out


def run_tables(db: sqlite3.Connection) -> list[str]:
    """Tables holding a run's rows, ``runs`` first, in creation order."""
    names = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type='table' ORDER BY rowid")]
    out = [t for t in names if t not in _NOT_RUN_ROWS and (
        t == "attempts" or "run_id" in _columns(db, t))]
    return sorted(out, key=lambda t: t != "runs")


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _references(db: sqlite3.Connection, tables: list[str]) -> dict[tuple[str, str], str]:
    """(table, column) -> "calls" | "programs" for every column holding such an id."""
    refs = dict(_ID_COLUMNS) | dict(_UNDECLARED)
    for table in tables:
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
    tables = run_tables(db)
    missing = [t for t, v in rows.items() if isinstance(v, list) and t not in tables]
    if missing:
        raise StoreError(f"run {run_id!r} has tables this store lacks ({', '.join(missing)}); "
                         "use the same basevolve on every node")
    refs = _references(db, tables)
    columns = {t: _columns(db, t) for t in tables}
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("PRAGMA defer_foreign_keys = ON")
        offset = {
            "calls": db.execute("SELECT coalesce(max(call_id), 0) FROM calls").fetchone()[0],
            "programs": db.execute(
                "SELECT coalesce(max(program_id), 0) FROM programs").fetchone()[0],
        }
        for table in tables:
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


__all__ = ["export_run", "import_run", "run_tables"]
