"""The run page's two long tables, calls and errors, one page at a time (issue 22, item 11).

Why paged: a run of 20,000 calls sent every call row with the run page (5.1 MB from
``/api/run`` in 2.3 s).  A page of the table is one indexed slice: the call indexes of
the page come from the covering ``(run_id, call_index)`` index (``LIMIT``/``OFFSET``
there touches no table row), then only those rows are read with their child and
attempt count.  ``/api/run`` carries page 1 of each so the page draws with one request;
``/api/calls`` and ``/api/errors`` serve the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from basevolve.dashboard.db import ReadOnlyStore
from basevolve.errors import ConfigError

SNIPPET = 300  # characters of an error shown in lists (the full text is one click away)
PAGE_SIZES = (50, 100, 200, 500)
DEFAULT_SIZE = 100
MAX_PAGE = 10**7

#: columns of the calls table as sent (rows as lists: 100 rows of dicts repeat every key)
CALL_COLUMNS = ("call_index", "trajectory", "generation", "status", "counted",
                "prompt_tokens", "cached_tokens", "completion_tokens", "flops", "latency_s",
                "error", "attempts", "program_id", "score", "valid")
ERROR_COLUMNS = ("kind", "call_index", "program_id", "trajectory", "error")
#: added when the store records each call's model (schema 7, issue 25)
MODEL_COLUMNS = ("model", "cost_usd")
MODEL_SQL = (", coalesce(c.model, (SELECT model FROM runs WHERE run_id = :r)) AS model, "
             "c.cost_usd")


@dataclass(frozen=True)
class Page:
    """One validated page request: ``page`` counts from 1."""

    page: int = 1
    size: int = DEFAULT_SIZE

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.size

    @classmethod
    def from_params(cls, params: Any) -> Page:
        try:
            page = int(params.get("page", 1))
            size = int(params.get("size", DEFAULT_SIZE))
        except ValueError:
            raise ConfigError("page and size must be integers") from None
        if size not in PAGE_SIZES:
            raise ConfigError(f"size {size} is not one of {', '.join(map(str, PAGE_SIZES))}")
        if not 1 <= page <= MAX_PAGE:
            raise ConfigError(f"page {page} is out of range (1 to {MAX_PAGE})")
        return cls(page=page, size=size)


def _frame(columns: tuple[str, ...], rows: list[list[Any]], total: int, q: Page) -> dict[str, Any]:
    return {"columns": list(columns), "rows": rows, "total": total, "page": q.page,
            "size": q.size, "pages": max(1, -(-total // q.size))}


def calls_page(store: ReadOnlyStore, run_id: str, q: Page) -> dict[str, Any]:
    """Calls ``(page - 1) * size ..`` of the run in call order, with child and attempts."""
    purpose = store.has("calls", "purpose")
    # the call's model (NULL in runs from before several models: the run's model) and
    # its dollars (NULL: unpriced), issue 25
    models = store.has("calls", "model")
    total = store.one("SELECT count(*) FROM calls WHERE run_id = ?", (run_id,))[0]  # type: ignore[index]
    rows = store.query(f"""
        SELECT c.call_index, c.trajectory, c.generation, c.status, c.counted,
               c.prompt_tokens, c.cached_tokens, c.completion_tokens, c.flops, c.latency_s,
               substr(c.error, 1, {SNIPPET}) AS error,
               (SELECT count(*) FROM attempts a WHERE a.call_id = c.call_id) AS attempts,
               p.program_id, p.score, p.valid{', c.purpose' if purpose else ''}
               {MODEL_SQL if models else ''}
        FROM calls c LEFT JOIN programs p ON p.call_id = c.call_id
        WHERE c.run_id = :r AND c.call_index IN (
            SELECT call_index FROM calls WHERE run_id = :r ORDER BY call_index
            LIMIT :n OFFSET :o)
        ORDER BY c.call_index""", {"r": run_id, "n": q.size, "o": q.offset})
    columns = CALL_COLUMNS + (("purpose",) if purpose else ()) + (MODEL_COLUMNS if models
                                                                  else ())
    return _frame(columns, [list(r) for r in rows], total, q)


def error_keys(store: ReadOnlyStore, run_id: str) -> tuple[list[int], list[int]]:
    """Which rows hold an error: program ids (in the order the engine told them) and
    call indexes.  The run page gets these from its own scans instead (no extra pass)."""
    programs = [r[0] for r in store.query(
        "SELECT program_id FROM programs WHERE run_id = ? AND error IS NOT NULL AND "
        "error != '' ORDER BY coalesce(seq, -1), program_id", (run_id,))]
    calls = [r[0] for r in store.query(
        "SELECT call_index FROM calls WHERE run_id = ? AND error IS NOT NULL AND error != '' "
        "ORDER BY call_index", (run_id,))]
    return programs, calls


def errors_page(store: ReadOnlyStore, run_id: str, q: Page,
                keys: tuple[list[int], list[int]] | None = None) -> dict[str, Any]:
    """One page of the run's errors: evaluation errors first, then failed LLM calls.

    ``keys``: :func:`error_keys` when the caller has them; only the page's rows are read.
    """
    programs, calls = error_keys(store, run_id) if keys is None else keys
    lo, hi = q.offset, q.offset + q.size
    mine_p = programs[lo:hi]
    mine_c = calls[max(0, lo - len(programs)):max(0, hi - len(programs))]
    rows: list[list[Any]] = []
    if mine_p:
        found = {r[2]: list(r) for r in store.query(f"""
            SELECT 'evaluation', c.call_index, p.program_id, p.trajectory,
                   substr(p.error, 1, {SNIPPET})
            FROM programs p LEFT JOIN calls c ON c.call_id = p.call_id
            WHERE p.run_id = ? AND p.program_id IN ({', '.join('?' * len(mine_p))})""",
                                                  (run_id, *mine_p))}
        rows += [found[i] for i in mine_p if i in found]
    if mine_c:
        found = {r[1]: list(r) for r in store.query(f"""
            SELECT 'llm call', call_index, NULL, trajectory, substr(error, 1, {SNIPPET})
            FROM calls WHERE run_id = ? AND call_index IN ({', '.join('?' * len(mine_c))})""",
                                                  (run_id, *mine_c))}
        rows += [found[i] for i in mine_c if i in found]
    return _frame(ERROR_COLUMNS, rows, len(programs) + len(calls), q)
