"""The dashboard's charts after issue 24, item 16, in a real browser.

* running-best lines (per trajectory and overall) and cumulative pulls are steps;
* call axes tick at integers only (the ticks uPlot drew, read back from the page);
* child points are coloured by trajectory: one series per trajectory (plus invalid);
* the sweep envelope has a log FLOPs axis, as the report's, and a best-of-N (T = 1)
  line beside v_max.

Real runs (test server, sandboxed evaluation): greedy at C = 4 and 8 (T = 1 and T = C)
and BaSE (UCB, K = 3, C = 9).  Debian's chromium through Playwright.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_support import TIMEOUT_MS, Dashboard, chromium_browser, open_page

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

K, C_BASE = 3, 9


@pytest.fixture(scope="module")
def chart_store(tmp_path_factory: pytest.TempPathFactory, pool) -> Path:
    db = tmp_path_factory.mktemp("charts") / "store.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        def run(**kw) -> None:
            cfg = RunConfig(task="circle_packing", model="test-model", base_url=srv.base_url,
                            params=1e9, max_in_flight=3, **kw)
            start_run(cfg, db, out_dir=db.parent / "out" / cfg.run_id, pool=pool)

        for budget in (4, 8):
            for depth in (1, budget):
                run(budget=budget, depth=depth, run_id=f"g-C{budget}-T{depth}")
        run(budget=C_BASE, allocator="ucb", arms=K, run_id="bandit")
    return db


@pytest.fixture(scope="module")
def chart_dashboard(chart_store: Path) -> Iterator[Dashboard]:
    d = Dashboard(chart_store)
    yield d
    d.close()


@pytest.fixture(scope="module")
def chart_browser(chart_store: Path) -> Iterator[object]:
    """As tests/dashboard/conftest.py's ``browser``, after this module's runs."""
    yield from chromium_browser()


def _page(browser, url: str):
    return open_page(browser, url, 1300)


def _drawn(page, chart_id: str) -> dict[str, str]:
    """The chart's data attributes once uPlot has drawn it (ticks recorded)."""
    page.wait_for_selector(f"#{chart_id}[data-points] canvas")
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not page.get_attribute(f"#{chart_id}", "data-xticks"):
        assert time.monotonic() < deadline, f"{chart_id} was not drawn"
        page.wait_for_timeout(100)
    return page.evaluate(f"() => ({{...document.getElementById('{chart_id}').dataset}})")


def _ticks(data: dict[str, str]) -> list[float]:
    return [float(t) for t in data["xticks"].split(",") if t]


def test_run_page_lines_are_steps_on_integer_call_ticks(chart_browser, chart_dashboard) -> None:
    page, errors = _page(chart_browser, f"{chart_dashboard.base}/run?id=bandit")
    try:
        calls = _drawn(page, "chart-calls")
        assert calls["series"] == str(K + 1) and calls["steps"] == str(K + 1)
        assert all(t.is_integer() for t in _ticks(calls)) and len(_ticks(calls)) >= 2
        flops = _drawn(page, "chart-flops")
        assert flops["steps"] == str(K + 1) and flops["logX"] == "0"
        pulls = _drawn(page, "chart-pulls")
        assert pulls["steps"] == str(K) and all(t.is_integer() for t in _ticks(pulls))
        scatter = _drawn(page, "chart-scatter")
        assert scatter["series"] == str(K + 1) and scatter["points"] == str(C_BASE)
        assert all(t.is_integer() for t in _ticks(scatter))
        assert not errors, errors
    finally:
        page.close()


def test_child_points_follow_their_trajectory(chart_browser, chart_dashboard) -> None:
    """Each trajectory's series holds exactly its own children (from /api/run)."""
    with urllib.request.urlopen(f"{chart_dashboard.base}/api/run?id=bandit") as r:
        d = json.load(r)
    s = d["scatter"]
    assert len(s["trajectory"]) == len(s["x"]) == C_BASE and set(s["trajectory"]) <= set(range(K))
    page, errors = _page(chart_browser, f"{chart_dashboard.base}/run?id=bandit")
    try:
        _drawn(page, "chart-scatter")
        legend = page.inner_text("#chart-scatter .u-legend")
        for t in range(K):
            assert f"valid, trajectory {t}" in legend
        assert "invalid" in legend and not errors
    finally:
        page.close()
    per_traj = {t: sum(1 for v, tt in zip(s["valid"], s["trajectory"], strict=True)
                       if v is not None and tt == t) for t in range(K)}
    assert sum(per_traj.values()) == sum(v is not None for v in s["valid"])


def test_sweep_envelope_has_a_log_flops_axis_and_best_of_n(chart_browser,
                                                           chart_dashboard) -> None:
    page, errors = _page(chart_browser, f"{chart_dashboard.base}/sweep?id=all")
    try:
        env = _drawn(page, "chart-envelope-0")
        assert env["logX"] == "1" and env["series"] == "3"
        legend = page.inner_text("#chart-envelope-0 .u-legend")
        assert "best-of-N (T=1)" in legend and "envelope v_max" in legend
        ticks = _ticks(env)
        assert ticks and all(t > 0 for t in ticks)
        assert not errors, errors
    finally:
        page.close()
    with urllib.request.urlopen(f"{chart_dashboard.base}/api/sweep?id=all") as r:
        (e,) = json.load(r)["envelopes"]
    assert [p["budget"] for p in e["envelope"]] == [4, 8]
    assert all(p["v_t1"] is not None and p["v_t1"] <= p["v_max"] + 1e-12 for p in e["envelope"])
