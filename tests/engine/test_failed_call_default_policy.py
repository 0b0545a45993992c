"""A call that fails outright under the default policy is not charged to C (issue 27, 3).

Why: ``count_failed_attempts=False`` (the default, :class:`basevolve.llm.CallPolicy`)
promises that an unreliable endpoint cannot eat the search budget: only a call that
answered costs one unit of C.  Every other fault test uses ``--count-failed-attempts``
or a cost budget, so a failed call charged as counted went unnoticed.

The run is the engine's real loop against the real test server and sandbox.  Its client
has the run's own settings (the default policy: 4 retries, failures not counted) with
one change: no backoff between retries, so five 500s cost no seconds of sleeping.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from pathlib import Path

from basevolve.config import RunConfig
from basevolve.engine import start_run_async
from basevolve.engine.runner import llm_settings
from basevolve.llm import make_client
from basevolve.store import RunStore
from basevolve.testing import Fault, LLMTestServer

TASK = "min_max_distance"


def _run(cfg: RunConfig, db: Path, pool) -> dict:
    settings = dataclasses.replace(llm_settings(cfg), backoff_base_s=0.0)
    assert settings.call_policy.count_failed_attempts is False and settings.max_retries == 4

    async def go() -> dict:
        client = make_client(cfg.model, cfg.base_url, params=cfg.params, settings=settings)
        try:
            with RunStore(db) as store:
                return await start_run_async(cfg, store, client=client, pool=pool)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_a_call_failing_outright_costs_no_budget(scripted, pool, tmp_path):
    db = tmp_path / "s.sqlite"
    with LLMTestServer(scripted(seed=12), latency_s=0.0) as srv:
        # 5 attempts of the first call (1 + 4 retries) fail; the re-issued call's first
        # attempt gets no 500 left, so it and the next call answer at once
        srv.inject(Fault.HTTP_500, times=5)
        cfg = RunConfig(task=TASK, base_url=srv.base_url, budget=2, depth=2, max_in_flight=1,
                        run_id="default-policy")
        s = _run(cfg, db, pool)
        sent = len(srv.requests)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT call_id, status, counted, reissue_of FROM calls "
                       "ORDER BY call_index").fetchall()
    first = rows[0][0]
    assert [r[1:] for r in rows] == [("failed", 0, None), ("ok", 1, first), ("ok", 1, None)], (
        f"calls (status, counted, reissue_of): {[r[1:] for r in rows]}")
    statuses = con.execute("SELECT http_status FROM attempts WHERE call_id=? "
                           "ORDER BY attempt_index", (first,)).fetchall()
    assert statuses == [(500,)] * 5  # every attempt of the failed call is on record
    assert sent == 5 + 2
    assert s["status"] == "finished" and s["calls_completed"] == 2 and s["children"] == 2
