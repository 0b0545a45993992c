"""The dashboard shows budgets in their own unit and a text task's evaluation cost.

A run budgeted in FLOPs (issue 16) has no C: the runs list and run page show its FLOPs
budget, not the internal call cap.  A ``prompt_optimization`` run (issue 15) shows its
answering calls, cache hits, FLOPs and tokens, as the store sums them.
"""

from __future__ import annotations

import http.client
import json
import sqlite3

import pytest
from dashboard_support import Dashboard

from basevolve.config import RunConfig, budget_fields
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.qa_replies import qa_reply


def _api(d: Dashboard, path: str) -> dict:
    con = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    try:
        con.request("GET", path)
        res = con.getresponse()
        assert res.status == 200
        return json.loads(res.read())
    finally:
        con.close()


@pytest.fixture(scope="module")
def cost_store(tmp_path_factory):
    db = tmp_path_factory.mktemp("costs") / "store.sqlite"
    with LLMTestServer(qa_reply) as srv:
        common = {"task": "prompt_optimization", "model": "test-model", "params": 1e9,
                  "base_url": srv.base_url, "task_params": {"limit": 3}}
        start_run(RunConfig(run_id="lpo", budget=3, **common), db)
        start_run(RunConfig(run_id="flops", **budget_fields(None, 2e13, None, None, 1),
                            **common), db)
    return db


def test_runs_list_and_run_page_show_costs(cost_store):
    d = Dashboard(cost_store)
    try:
        runs = {r["run_id"]: r for r in _api(d, "/api/runs?size=25")["runs"]}
        assert runs["flops"]["budget_flops"] == 2e13 and runs["lpo"]["budget_flops"] is None
        page = _api(d, "/api/run?id=lpo")
    finally:
        d.close()
    con = sqlite3.connect(cost_store)
    sent, hits = con.execute("SELECT sum(cache_hit = 0), sum(cache_hit) FROM eval_calls "
                             "WHERE run_id = 'lpo'").fetchone()
    flops, tokens = con.execute("SELECT sum(eval_flops), sum(eval_tokens) FROM programs "
                                "WHERE run_id = 'lpo'").fetchone()
    t = page["totals"]
    assert (t["eval_calls"], t["eval_cache_hits"], t["eval_tokens"]) == (sent, hits, tokens) \
        and sent > 0
    assert t["eval_flops"] == pytest.approx(flops)
    assert page["run"]["config"]["task_params"] == {"limit": 3}


def test_pages_render_costs_in_a_browser(cost_store, browser):
    """The run page and the runs list say "FLOPs" for a FLOPs budget (no "/ C") and show
    the evaluation cost of an LPO run; no script error."""
    d = Dashboard(cost_store)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(30_000)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(d.base + "/run?id=flops")
        page.wait_for_selector("#calls-done")
        head = page.inner_text("body")
        assert "2.000e+13 FLOPs" in head and "calls done / C" not in head
        page.goto(d.base + "/run?id=lpo")
        page.wait_for_selector("#calls-done")
        assert "not charged to the budget" in page.inner_text("body")
        page.goto(d.base + "/")
        page.wait_for_selector("table.runs tbody tr")
        assert "2.000e+13 FLOPs" in page.inner_text("table.runs")
        page.close()
        assert errors == []
    finally:
        d.close()
