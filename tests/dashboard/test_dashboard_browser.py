"""The dashboard in a real browser (Debian's chromium through Playwright).

Every page is opened and photographed (``BASEVOLVE_SCREENSHOTS=docs/dashboard`` keeps
the pictures; they are committed there), charts must hold data points, a run in
progress must update an open page without a reload, hostile program text must show as
text with no script running, and a token-protected dashboard must refuse a browser
without the token.
"""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
import urllib.parse
import urllib.request

from dashboard_support import (
    BASE,
    CONTROL,
    GRID,
    HOSTILE,
    HOSTILE_RUN,
    SWEEP,
    SWEEP_RUNS,
    TIMEOUT_MS,
    Dashboard,
)

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

TOTAL = len(GRID) + 2 + SWEEP_RUNS


def open_page(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(TIMEOUT_MS)
    events = {"dialogs": [], "console": [], "errors": []}
    page.on("dialog", lambda d: (events["dialogs"].append(d.message), d.dismiss()))
    page.on("console", lambda m: events["console"].append(f"{m.type}: {m.text}"))
    page.on("pageerror", lambda e: events["errors"].append(str(e)))
    page.goto(url)
    return page, events


def wait_until(page, expression: str, timeout_s: float = TIMEOUT_MS / 1000) -> None:
    """Poll ``expression`` in the page until truthy.

    Why not ``page.wait_for_function``: it evaluates its predicate with ``eval``, which
    the dashboard's CSP forbids (as it should); ``page.evaluate`` goes through the
    DevTools protocol, which a page's CSP does not govern.
    """
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(f"() => Boolean({expression})"):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {expression}")
        page.wait_for_timeout(100)


def points(page, chart_id: str) -> int:
    page.wait_for_selector(f"#{chart_id}[data-points] canvas")
    return int(page.get_attribute(f"#{chart_id}", "data-points"))


def test_every_page_renders_with_data(browser, dashboard, shots):
    page, ev = open_page(browser, dashboard.base + "/")
    page.wait_for_selector("table.runs tbody tr")
    assert page.locator("table.runs tbody tr").count() == TOTAL
    assert f"page 1 of 1 ({TOTAL} runs)" in page.inner_text("#page-info")
    assert SWEEP in page.inner_text("#sweeps")
    page.click("table.runs th:has-text('best')")  # sort in SQL, newest order replaced
    page.wait_for_url(re.compile(r"sort=best"))
    page.screenshot(path=str(shots / "runs.png"), full_page=True)

    page.goto(dashboard.base + "/run?id=" + BASE["run_id"])
    page.wait_for_selector("#calls table tbody tr")
    assert points(page, "chart-calls") > BASE["budget"]  # K trajectories + overall
    assert points(page, "chart-flops") > BASE["budget"]
    assert points(page, "chart-scatter") == BASE["budget"]
    assert points(page, "chart-pulls") == BASE["arms"] * (BASE["budget"] + 1)
    assert page.get_attribute("#chart-calls", "data-series") == str(BASE["arms"] + 1)
    wait_until(page, "document.querySelector('#picture') && "
                     "document.querySelector('#picture').naturalWidth > 0")
    assert page.locator("#lineage-tree .tree-row").count() >= 2
    assert "ucb" in page.inner_text("#allocator-summary")
    page.click("#calls tbody tr:nth-child(4)")
    page.wait_for_selector("#call-title:has-text('Call 3')")
    assert "Prompt message 1: system" in page.inner_text("#call-detail")
    assert "Raw reply" in page.inner_text("#call-detail")
    page.click("#lineage-tree .tree-row:nth-child(2) a.prog")
    page.wait_for_selector("#program-title")
    assert page.inner_text("#program-diff").startswith("--- program")
    page.screenshot(path=str(shots / "run-base.png"), full_page=True)

    page.goto(dashboard.base + "/run?id=grid-C8-T1-s0#call=0")
    page.wait_for_selector("#call-title:has-text('Call 0')")
    assert points(page, "chart-scatter") == 8
    assert page.is_hidden("#chart-pulls")  # no bandit: no pulls chart
    page.screenshot(path=str(shots / "run-greedy.png"), full_page=True)

    page.goto(dashboard.base + "/")
    page.click(f"#sweeps a:has-text('{SWEEP}')")  # the sweep's own page
    page.wait_for_selector("table.heatmap td.heat")
    assert page.locator("table.heatmap td.heat").count() == 2
    assert points(page, "chart-envelope-0") > 0
    assert page.locator("table.reliability tbody tr").count() == 2
    page.screenshot(path=str(shots / "sweep.png"), full_page=True)

    page.goto(dashboard.base + "/sweep?id=all")
    page.wait_for_selector("table.heatmap td.heat")
    assert page.locator("table.heatmap td.heat").count() == 6
    assert points(page, "chart-envelope-0") > 0
    assert page.locator("table.reliability tbody tr").count() >= 5
    page.fill("#tau", "0.5,0.6")
    page.press("#tau", "Enter")
    page.wait_for_selector("table.reliability th:has-text('P(≥ 0.6)')")
    page.screenshot(path=str(shots / "sweep-all.png"), full_page=True)
    assert not ev["dialogs"] and not ev["errors"], ev
    page.close()


def test_hostile_text_is_shown_as_text_and_never_runs(browser, dashboard, shots):
    run = urllib.parse.quote(HOSTILE_RUN)
    data = json.loads(urllib.request.urlopen(f"{dashboard.base}/api/run?id={run}").read())
    best = data["totals"]["best_program_id"]
    page, ev = open_page(browser, f"{dashboard.base}/run?id={run}#program={best}")
    page.wait_for_selector("#program-code")
    assert page.text_content("#run-title") == HOSTILE_RUN
    code = page.text_content("#program-code")
    assert HOSTILE in code  # every character of the markup, as text
    assert "\u241b[31mred\u2407" in code and "\u27e8U+202E\u27e9evil" in code  # made visible
    assert CONTROL not in code
    page.goto(f"{dashboard.base}/run?id={run}#call=0")
    page.wait_for_selector("#call-title")
    assert HOSTILE in page.text_content("#call-detail")
    page.goto(dashboard.base + "/")
    page.wait_for_selector("table.runs tbody tr")
    assert HOSTILE_RUN in page.inner_text("table.runs")
    page.goto(f"{dashboard.base}/run?id={run}#program={best}")
    page.wait_for_selector("#program-code")
    page.screenshot(path=str(shots / "hostile.png"), full_page=True)
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img[src='x'], main b, main script").count() == 0
    assert ev["dialogs"] == [] and ev["errors"] == []
    assert not [m for m in ev["console"] if "Content Security Policy" in m]
    # The detector works: an inline script forced into the page is blocked by the CSP
    # and reported on the console, so the assertions above would have caught one.
    page.evaluate("""() => { const s = document.createElement('script');
        s.textContent = 'window.__inline = 1; alert(1)'; document.body.append(s); }""")
    page.wait_for_timeout(300)
    assert page.evaluate("window.__inline") is None and ev["dialogs"] == []
    assert [m for m in ev["console"] if "Content Security Policy" in m]
    page.close()


def test_a_run_in_progress_updates_the_open_page(browser, tmp_path, pool):
    """Calls 0-1 answer at once, the rest wait for a gate the test opens once the page
    shows the run; the page must then reach C calls by itself (no reload)."""
    gate = threading.Event()
    budget = 6

    def reply(body: dict, index: int) -> str:
        if index >= 2:
            gate.wait(60)
        return seeded_packing_reply(body, index)

    db = tmp_path / "live.sqlite"
    result: dict = {}
    with LLMTestServer(reply) as srv:
        cfg = RunConfig(task="circle_packing", model="test-model", base_url=srv.base_url,
                        params=1e9, budget=budget, depth=budget, run_id="live", max_in_flight=1)
        worker = threading.Thread(target=lambda: result.update(
            start_run(cfg, db, out_dir=tmp_path / "out", pool=pool)), daemon=True)
        worker.start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # wait until the run row and 2 calls exist
            try:
                con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
                n = con.execute("SELECT count(*) FROM calls WHERE counted=1").fetchone()[0]
                con.close()
                if n >= 2:
                    break
            except sqlite3.Error:
                pass
            time.sleep(0.2)
        d = Dashboard(db)
        try:
            page, ev = open_page(browser, d.base + "/run?id=live")
            wait_until(page, "document.body.dataset.callsDone === '2'")
            runs, _ = open_page(browser, d.base + "/")
            runs.wait_for_selector("table.runs td:has-text('2 / 6')")
            page.evaluate("window.__noReload = 'still here'")
            first = points(page, "chart-calls")
            gate.set()
            wait_until(page, f"document.body.dataset.callsDone === '{budget}'", 90)
            page.wait_for_selector("#run-status:has-text('finished')")
            assert page.evaluate("window.__noReload") == "still here"
            assert points(page, "chart-calls") > first
            assert page.inner_text("#calls-done") == f"{budget} / {budget}"
            runs.wait_for_selector(f"table.runs td:has-text('{budget} / {budget}')")
            assert not ev["errors"]
        finally:
            gate.set()
            d.close()
        worker.join(60)
    assert result["calls_completed"] == budget


def test_browser_without_the_token_is_refused(browser, store, shots):
    token = "browser-test-token-0123456789"
    d = Dashboard(store, "--host", "0.0.0.0", "--token", token)
    try:
        local = f"http://127.0.0.1:{d.port}"
        page, _ = open_page(browser, local + "/")
        assert "missing or wrong token" in page.inner_text("body")
        page.goto(f"{local}/?token={token}")  # sets the cookie, drops the token from the URL
        page.wait_for_selector("table.runs tbody tr")
        assert "token" not in page.url
        assert page.locator("table.runs tbody tr").count() == TOTAL
        fresh = browser.new_context()  # no cookie: refused again
        other = fresh.new_page()
        other.goto(local + "/run?id=" + BASE["run_id"])
        assert "missing or wrong token" in other.inner_text("body")
        fresh.close()
    finally:
        d.close()
