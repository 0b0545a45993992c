"""The runs list: one SQL query per page, sorted and filtered in SQLite.

Why in SQL and paginated: a store of a large sweep holds 10,000+ runs.  The page asks
for one slice (``LIMIT``/``OFFSET``) sorted by a whitelisted column, so the browser never
receives more than a page and the server never builds more than a page of rows.

Why ``CASE`` on the status: ``run_summary`` is written when a run finishes; for a
finished run its totals are read from there (one row), for a running one they are
summed from ``calls``/``programs`` (the run's rows only, through their indexes), so a
live run shows live numbers and 10,000 finished runs cost no per-run aggregation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from basevolve.dashboard.db import ReadOnlyStore
from basevolve.errors import ConfigError
from basevolve.store.liveness import live_status

PAGE_SIZES = (25, 50, 100, 200)
#: sort key (as the page names it) -> SQL expression over the ``base`` view below
SORTS: dict[str, str] = {
    "run_id": "run_id", "status": "status", "task": "task", "model": "model",
    "protocol": "protocol", "allocator": "allocator", "arms": "arms", "budget": "budget",
    "depth": "depth", "calls": "calls_done", "best": "best_score", "flops": "flops",
    "started": "created_at", "sweep": "sweep",
}
STATUSES = ("created", "running", "finished", "failed", "interrupted")


def sweep_sql(store: ReadOnlyStore, alias: str = "r") -> str:
    """SQL expression naming a run's sweep, from whatever this store records.

    ``basevolve sweep`` stores ``"sweep": NAME`` next to each run's config; also read: a
    ``sweep_id`` column when the store has one, a ``sweep_id`` key, a
    ``sweep`` object's ``id``/``name`` or a plain ``sweep`` string in the run's config.
    NULL = not part of a sweep.  The ``instr`` guard skips JSON parsing for configs that
    do not mention a sweep at all (most runs; parsing 10,000 configs costs ~100 ms).
    """
    cfg = f"{alias}.config_json"
    from_config = (
        f"CASE WHEN instr({cfg}, '\"sweep') > 0 THEN coalesce("
        f"json_extract({cfg}, '$.sweep_id'), "
        f"CASE WHEN json_type({cfg}, '$.sweep') = 'object' THEN coalesce("
        f"json_extract({cfg}, '$.sweep.id'), json_extract({cfg}, '$.sweep.name')) END, "
        f"CASE WHEN json_type({cfg}, '$.sweep') IN ('text', 'integer') "
        f"THEN json_extract({cfg}, '$.sweep') END) END")
    if store.has("runs", "sweep_id"):
        from_config = f"coalesce({alias}.sweep_id, {from_config})"
    return f"CAST({from_config} AS TEXT)"


_DONE = "r.status = 'finished' AND s.run_id IS NOT NULL"
#: live totals: from the summary of a finished run, else summed from the run's own rows
DERIVED: dict[str, str] = {
    "calls_done": f"CASE WHEN {_DONE} THEN s.calls_completed ELSE (SELECT count(*) FROM calls c "
                  "WHERE c.run_id = r.run_id AND c.counted = 1) END",
    "best_score": f"CASE WHEN {_DONE} THEN s.best_score ELSE (SELECT max(score) FROM programs p "
                  "WHERE p.run_id = r.run_id) END",
    "flops": f"CASE WHEN {_DONE} THEN s.flops ELSE (SELECT coalesce(sum(flops), 0) FROM calls c "
             "WHERE c.run_id = r.run_id) END",
}
FROM = "FROM runs r LEFT JOIN run_summary s ON s.run_id = r.run_id"


def sort_sql(store: ReadOnlyStore, key: str) -> str:
    col = SORTS[key]
    if col in DERIVED:
        return DERIVED[col]
    return sweep_sql(store) if col == "sweep" else f"r.{col}"


def rows_sql(store: ReadOnlyStore) -> str:
    """Every column the runs table shows (applied to one page of runs only)."""
    derived = ", ".join(f"{sql} AS {name}" for name, sql in DERIVED.items())
    return f"""
        SELECT r.rowid AS row_key, r.run_id, r.status, r.task, r.model, r.protocol, r.allocator, r.arms,
               r.budget, r.depth, r.breadth, r.seed, r.created_at, r.updated_at,
               json_extract(r.config_json, '$.budget_flops') AS budget_flops,
               json_extract(r.config_json, '$.budget_tokens') AS budget_tokens,
               json_extract(r.config_json, '$.models') AS models,
               {sweep_sql(store)} AS sweep, {derived} {FROM}"""


@dataclass(frozen=True)
class RunsQuery:
    """One page request of the runs list (validated; every field is a plain value)."""

    sort: str = "started"
    desc: bool = True
    page: int = 1
    size: int = 50
    status: str = ""
    text: str = ""
    sweep: str = ""

    @classmethod
    def from_params(cls, params: Any) -> RunsQuery:
        sort = params.get("sort", "started")
        if sort not in SORTS:
            raise ConfigError(f"unknown sort {sort!r}; one of {', '.join(SORTS)}")
        status = params.get("status", "")
        if status and status not in STATUSES:
            raise ConfigError(f"unknown status {status!r}; one of {', '.join(STATUSES)}")
        try:
            page = int(params.get("page", 1))
            size = int(params.get("size", 50))
        except ValueError:
            raise ConfigError("page and size must be integers") from None
        if size not in PAGE_SIZES or not 1 <= page <= 10**6:
            raise ConfigError(f"size must be one of {PAGE_SIZES} and page >= 1")
        return cls(sort=sort, desc=params.get("dir", "desc") != "asc", page=page, size=size,
                   status=status, text=params.get("q", "")[:200],
                   sweep=params.get("sweep", "")[:200])


def model_names(models_json: Any) -> list[str] | None:
    """The models a run's config lists, when it lists several (issue 25; the list shows
    them as ``weak+strong``), else None.  From the config, not the calls: naming them
    costs nothing per run, where the models the calls used would be a scan of each
    run's calls (:func:`basevolve.store.per_model.model_breakdown` has those)."""
    try:
        models = json.loads(models_json) if isinstance(models_json, str) else None
    except ValueError:
        return None
    if not isinstance(models, list) or len(models) < 2:
        return None
    return [str(m.get("name")) if isinstance(m, dict) else str(m) for m in models]


def runs_page(store: ReadOnlyStore, q: RunsQuery) -> dict[str, Any]:
    """One page of runs and the total matching count (sweeps: :func:`sweeps_overview`).

    Two steps so that only the page's runs pay for their derived columns: the run ids
    of the page (filter + sort, derived values only when sorting by one), then the rows.
    """
    where, args = [], []
    if q.status:
        where.append("r.status = ?")
        args.append(q.status)
    if q.text:
        like = "%" + q.text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append("(" + " OR ".join(f"r.{c} LIKE ? ESCAPE '\\'" for c in
                                       ("run_id", "task", "model", "protocol", "allocator"))
                     + ")")
        args += [like] * 5
    if q.sweep:
        where.append(f"{sweep_sql(store)} = ?")
        args.append(q.sweep)
    cond = f"WHERE {' AND '.join(where)}" if where else ""
    total = store.one(f"SELECT count(*) FROM runs r {cond}", args)[0]  # type: ignore[index]
    order = f"{sort_sql(store, q.sort)} {'DESC' if q.desc else 'ASC'} NULLS LAST, r.run_id"
    # rowids, not run ids: an id that is not valid UTF-8 reads back replaced (U+FFFD)
    # and would match nothing in the second query
    ids = [r[0] for r in store.query(
        f"SELECT r.rowid {FROM} {cond} ORDER BY {order} LIMIT ? OFFSET ?",
        [*args, q.size, (q.page - 1) * q.size])]
    rows = {r["row_key"]: dict(r) for r in store.query(
        f"{rows_sql(store)} WHERE r.rowid IN ({', '.join('?' * len(ids))})", ids)} if ids else {}
    for row in rows.values():
        del row["row_key"]
        row["models"] = model_names(row["models"])
        # "running" only while a process drives it (store/liveness.py, issue 37)
        row["status"] = live_status(store.path, row["run_id"], row["status"])
    return {"total": total, "page": q.page, "size": q.size, "sort": q.sort,
            "dir": "desc" if q.desc else "asc", "runs": [rows[i] for i in ids],
            "statuses": list(STATUSES)}


def sweeps_overview(store: ReadOnlyStore) -> list[dict[str, Any]]:
    """One row per sweep: runs, finished runs, best score (grouping on the runs page)."""
    rows = store.query(f"""
        SELECT {sweep_sql(store)} AS sweep, count(*) AS runs,
               sum(r.status = 'finished') AS finished, sum(r.status = 'running') AS running,
               max(s.best_score) AS best_finished, min(r.created_at) AS started
        FROM runs r LEFT JOIN run_summary s ON s.run_id = r.run_id
        GROUP BY 1 ORDER BY started""")
    return [dict(r) for r in rows]
