"""Fixtures for the dashboard tests: a store of real runs, a dashboard process, a browser.

The store is built once per session by real runs against the OpenAI-compatible test
server on 127.0.0.1 with real sandboxed evaluation: a small greedy depth-breadth grid
(C in {4, 8}, T in {1, C}, two seeds), a BaSE run (UCB, K = 3), a run whose replies
are hostile program text and a small ``basevolve sweep`` (C = 2, T in {1, 2}, two seeds).  The dashboard is the real ``basevolve dashboard`` command in
a subprocess; the browser is Debian's ``chromium`` driven by Playwright.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_support import (
    BASE,
    GRID,
    HOSTILE_RUN,
    SWEEP_RUNS,
    SWEEP_TOML,
    Dashboard,
    chromium_browser,
    hostile_reply,
)

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.sandbox import SandboxConfig, SandboxPool
from basevolve.sweep.execute import run_sweep
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply


def rename_run(db: Path, old: str, new: str) -> None:
    """Give a stored run the id ``new`` in every table.  ``RunConfig`` refuses unsafe ids
    now (issue 22, item 10), but a store written before that, or by another tool, may
    hold one: the dashboard must still show it as text."""
    con = sqlite3.connect(db)
    try:
        tables = [r[0] for r in con.execute(
            "SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) c "
            "WHERE m.type = 'table' AND c.name = 'run_id'")]
        with con:
            for table in tables:
                con.execute(f"UPDATE {table} SET run_id = ? WHERE run_id = ?", (new, old))
    finally:
        con.close()


def _run(srv: LLMTestServer, store: Path, pool: SandboxPool, **kw) -> dict:
    cfg = RunConfig(task="circle_packing", model="test-model", base_url=srv.base_url,
                    params=1e9, max_in_flight=4, **kw)
    out = store.parent / "out" / re.sub(r"\W", "_", cfg.run_id)
    return start_run(cfg, store, out_dir=out, pool=pool)


@pytest.fixture(scope="session")
def pool() -> Iterator[SandboxPool]:
    with SandboxPool(SandboxConfig(workers=2)) as p:
        yield p


@pytest.fixture(scope="session")
def store(tmp_path_factory: pytest.TempPathFactory, pool: SandboxPool) -> Path:
    """The shared store: grid + BaSE + hostile runs (see module doc)."""
    db = tmp_path_factory.mktemp("dash") / "store.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        for c, t, s in GRID:
            _run(srv, db, pool, budget=c, depth=t, seed=s, run_id=f"grid-C{c}-T{t}-s{s}")
        _run(srv, db, pool, seed=3, **BASE)
    with LLMTestServer(hostile_reply) as srv:
        _run(srv, db, pool, budget=2, depth=2, run_id="hostile")
    rename_run(db, "hostile", HOSTILE_RUN)
    with LLMTestServer(seeded_packing_reply) as srv:  # a real sweep, tagged in the store
        toml = db.parent / "mini.toml"
        toml.write_text(SWEEP_TOML.format(url=srv.base_url))
        result = run_sweep(toml, db, live=False)
        assert len(result.outcomes) == SWEEP_RUNS
    return db


@pytest.fixture(scope="session")
def dashboard(store: Path) -> Iterator[Dashboard]:
    d = Dashboard(store)
    yield d
    d.close()


@pytest.fixture(scope="module")
def browser(store: Path) -> Iterator[object]:
    """Chromium via Playwright.  Depends on ``store`` so the runs (``asyncio.run``) happen
    before Playwright's sync API starts its event loop in this thread.  Module scope, not
    session: while Playwright's sync API is open its loop counts as running in this
    thread, so every later test that calls ``asyncio.run`` (the engine's) would fail."""
    yield from chromium_browser()


@pytest.fixture(scope="session")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where screenshots go: $BASEVOLVE_SCREENSHOTS (docs/dashboard) or a temp folder."""
    target = os.environ.get("BASEVOLVE_SCREENSHOTS")
    path = Path(target) if target else tmp_path_factory.mktemp("shots")
    path.mkdir(parents=True, exist_ok=True)
    return path
