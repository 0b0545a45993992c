"""The dashboard's JSON API against a store of real runs, and its read-only guarantees.

Every number the pages draw is checked against the store read directly with sqlite3
(and the sweep statistics against :mod:`basevolve.analysis`), so a wrong query cannot
hide behind a pretty chart.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import sqlite3
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
from dashboard_support import BASE, GRID, HOSTILE_RUN, SWEEP, SWEEP_RUNS, Dashboard

from basevolve.analysis.stats import describe
from basevolve.store import RunStore


def get(d: Dashboard, path: str, method: str = "GET", headers: dict | None = None):
    con = http.client.HTTPConnection("127.0.0.1", d.port, timeout=30)
    try:
        con.request(method, path, headers=headers or {})
        res = con.getresponse()
        return res.status, dict(res.getheaders()), res.read()
    finally:
        con.close()


def api(d: Dashboard, path: str):
    status, _, body = get(d, path)
    assert status == 200, body
    return json.loads(body)


def rows(db: Path, sql: str, *params):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute(sql, params)]
    finally:
        con.close()


def test_runs_list_matches_the_store(dashboard, store):
    data = api(dashboard, "/api/runs?size=100")
    assert data["total"] == len(GRID) + 2 + SWEEP_RUNS == len(data["runs"])
    for r in data["runs"]:
        truth = rows(store, "SELECT count(*) n, (SELECT max(score) FROM programs WHERE run_id=?) b,"
                            " (SELECT sum(flops) FROM calls WHERE run_id=?) f FROM calls "
                            "WHERE run_id=? AND counted=1", r["run_id"], r["run_id"], r["run_id"])[0]
        assert r["status"] == "finished" and r["calls_done"] == r["budget"] == truth["n"]
        assert r["best_score"] == pytest.approx(truth["b"])
        assert r["flops"] == pytest.approx(truth["f"])
    assert [(s["sweep"], s["runs"]) for s in data["sweeps"]] == [
        (None, len(GRID) + 2), (SWEEP, SWEEP_RUNS)]
    mine = api(dashboard, f"/api/runs?sweep={SWEEP}")
    assert mine["total"] == SWEEP_RUNS
    assert sorted(r["depth"] for r in mine["runs"]) == [1, 1, 2, 2]


def test_run_page_of_a_base_run(dashboard, store):
    d = api(dashboard, "/api/run?id=" + BASE["run_id"])
    C, K = BASE["budget"], BASE["arms"]
    p = d["progress"]
    assert p["calls"] == list(range(C + 1)) and len(p["per_trajectory"]) == K
    assert all(len(s) == C + 1 for s in [p["flops"], p["overall"], *p["per_trajectory"]])
    assert np.all(np.diff(p["overall"]) >= 0) and np.all(np.diff(p["flops"]) >= 0)
    best = rows(store, "SELECT max(score) m FROM programs WHERE run_id=?", BASE["run_id"])[0]["m"]
    assert p["overall"][-1] == pytest.approx(best) == d["totals"]["best_score"]
    assert p["flops"][-1] == pytest.approx(
        rows(store, "SELECT sum(flops) f FROM calls WHERE run_id=?", BASE["run_id"])[0]["f"])
    pulls = rows(store, "SELECT pulls FROM trajectories WHERE run_id=? ORDER BY trajectory",
                 BASE["run_id"])
    assert [a[-1] for a in d["pulls"]["per_arm"]] == [r["pulls"] for r in pulls]
    assert sum(a[-1] for a in d["pulls"]["per_arm"]) == C
    assert d["pulls"]["summary"]["arms"] == K  # the allocator's own state summary
    asks = rows(store, "SELECT n_eligible FROM allocations WHERE run_id=? AND kind='ask'",
                BASE["run_id"])
    assert d["pulls"]["asks"] == len(asks) == C - K
    assert d["pulls"]["asks_with_choice"] == sum(a["n_eligible"] > 1 for a in asks)
    assert len(d["scatter"]["x"]) == C == len(d["calls"]["rows"]) == d["totals"]["calls_done"]
    ids = {n["id"] for n in d["lineage"]}
    assert d["totals"]["best_program_id"] in ids
    assert all(n["parent"] is None or n["parent"] in ids for n in d["lineage"])
    assert sum(n["initial"] for n in d["lineage"]) == 1
    assert d["picture"]["stored"] is True


def test_call_and_program_details(dashboard, store):
    run = "grid-C8-T8-s0"
    call = api(dashboard, f"/api/call?run={run}&index=3")
    stored = rows(store, "SELECT * FROM calls WHERE run_id=? AND call_index=3", run)[0]
    assert [m["content"]["text"] for m in call["messages"]] == [
        m["content"] for m in json.loads(stored["messages_json"])]
    assert call["raw_text"]["text"] == stored["raw_text"]
    assert len(call["attempts"]) >= 1 and call["program"] is not None
    prog = api(dashboard, f"/api/program?run={run}&id={call['program']['program_id']}")
    assert prog["parent_id"] == stored["parent_id"] and prog["code"]["text"]
    assert prog["diff"][0].startswith("--- program") and prog["diff"][1].startswith("+++ program")
    assert get(dashboard, f"/api/call?run={run}&index=999")[0] == 404
    assert get(dashboard, f"/api/program?run={run}&id=x")[0] == 400


def test_picture_is_the_drawing_run_wrote(dashboard, store):
    """Same bytes as ``best.png`` of ``basevolve run``, drawn from the stored value."""
    run = "grid-C8-T1-s1"
    status, headers, body = get(dashboard, f"/api/picture?run={run}")
    assert status == 200 and headers["content-type"] == "image/png"
    assert body == (store.parent / "out" / run.replace("-", "_") / "best.png").read_bytes()
    status, _, body = get(dashboard, "/api/picture?run=nope")
    assert status == 404 and b"no stored solution" in body


def test_sweep_page_reuses_the_analysis(dashboard, store):
    d = api(dashboard, "/api/sweep?id=all&tau=0.5,0.7")
    assert d["runs"] == len(GRID) + 2 + SWEEP_RUNS and d["finished"] == d["runs"]
    assert d["taus"] == [0.5, 0.7]
    (heat,) = d["heatmaps"]
    # the grid's (C, T) cells, the hostile run's and the sweep's (C=2, T=2 shared by both);
    # BaSE is not a greedy cell
    assert heat["budgets"] == [2, 4, 8] and heat["depths"] == [1, 2, 4, 8]
    assert sum(c is not None for row in heat["cells"] for c in row) == 6
    assert heat["cells"][1][0]["n"] == 3
    row = next(r for r in d["reliability"] if r["budget"] == 8 and r["depth"] == 8)
    fit = [rows(store, "SELECT max(score) m FROM programs WHERE run_id=?", f"grid-C8-T8-s{s}")[0]["m"]
           for s in (0, 1)]
    want = describe(np.array(fit), np.random.default_rng(0), 1000)
    assert row["n"] == 2 and row["method"] == "greedy T=8"
    assert row["mean"] == pytest.approx(np.mean(fit)) and row["iqm"] == pytest.approx(want["iqm"])
    assert row["p_ge"] == [float(np.mean(np.array(fit) >= t)) for t in (0.5, 0.7)]
    mini = api(dashboard, f"/api/sweep?id={SWEEP}")
    assert (mini["runs"], mini["finished"]) == (SWEEP_RUNS, SWEEP_RUNS)
    (h,) = mini["heatmaps"]
    assert h["budgets"] == [2] and h["depths"] == [1, 2]
    assert [r["n"] for r in mini["reliability"]] == [2, 2]
    (env,) = d["envelopes"]
    assert sorted(e["budget"] for e in env["envelope"]) == [2, 4, 8]
    assert np.all(np.diff([e["flops"] for e in env["envelope"]]) >= 0)  # drawn along FLOPs
    assert get(dashboard, "/api/sweep?tau=abc")[0] == 400


def test_read_only_and_headers(dashboard, store):
    before = hashlib.sha256(store.read_bytes()).hexdigest()
    q = urllib.parse.quote(HOSTILE_RUN)
    paths = ["/", "/run?id=x", "/sweep", "/api/runs", f"/api/run?id={q}", "/api/sweep",
             "/api/call?run=base-ucb&index=0", "/api/picture?run=base-ucb", "/static/common.js",
             "/api/version", "/nope"]
    for path in paths:
        status, headers, _ = get(dashboard, path)
        assert status in (200, 404), path
        csp = headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "unsafe-eval" not in csp
        assert headers["x-content-type-options"] == "nosniff"
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert get(dashboard, "/api/runs", method)[0] == 405
    assert get(dashboard, "/static/../../../../etc/passwd")[0] == 404
    assert get(dashboard, "/static/%2e%2e/%2e%2e/app.py")[0] == 404
    assert get(dashboard, "/api/run?id=../../etc/passwd")[0] == 404
    # DNS rebinding: a loopback dashboard without a token answers only loopback names
    assert get(dashboard, "/api/runs", headers={"Host": "evil.example:80"})[0] == 403
    assert get(dashboard, "/api/runs", headers={"Host": "localhost:1"})[0] == 200
    assert hashlib.sha256(store.read_bytes()).hexdigest() == before


def _synthetic_store(path: Path, n: int) -> None:
    """``n`` finished runs written through the real store API (no LLM, no sandbox)."""
    rng = np.random.default_rng(5)
    with RunStore(path) as st:
        for i in range(n):
            run = f"syn-{i:04d}"
            cfg = {"task": "circle_packing", "model": "m", "protocol": "greedy",
                   "allocator": "single", "arms": 1, "budget": 8, "depth": 8, "breadth": 1,
                   "seed": i, "sweep": f"sw{i % 3}" if i % 4 else None}
            st.create_run(run, cfg, active_params=1e9)
            st.insert_program(run, code="x = 1", score=float(rng.uniform()), valid=True,
                              generation=0, is_initial=1)
            best = float(rng.uniform())
            st.write_summary(run, {"calls_completed": 8, "calls_lost": 0, "best_score": best,
                                   "best_program_id": None, "flops": 1e12 * (i % 7),
                                   "prompt_tokens": 0, "cached_tokens": 0,
                                   "completion_tokens": 0})
            st.set_status(run, "finished" if i % 10 else "failed")


def test_runs_list_sorts_filters_and_pages_in_sql(tmp_path):
    db = tmp_path / "syn.sqlite"
    _synthetic_store(db, 130)
    d = Dashboard(db)
    try:
        everything = api(d, "/api/runs?size=200&sort=run_id&dir=asc")["runs"]
        assert [r["run_id"] for r in everything] == [f"syn-{i:04d}" for i in range(130)]
        by_best = sorted(everything, key=lambda r: (-r["best_score"], r["run_id"]))
        page2 = api(d, "/api/runs?size=25&page=2&sort=best&dir=desc")
        assert page2["total"] == 130
        assert [r["run_id"] for r in page2["runs"]] == [r["run_id"] for r in by_best[25:50]]
        failed = api(d, "/api/runs?status=failed&size=200")
        assert failed["total"] == 13 and {r["status"] for r in failed["runs"]} == {"failed"}
        assert api(d, "/api/runs?q=syn-012")["total"] == 10  # syn-0120 .. syn-0129
        assert api(d, "/api/runs?q=%25")["total"] == 0  # LIKE wildcards are literal
        sw1 = api(d, "/api/runs?sweep=sw1&size=200")
        assert {r["sweep"] for r in sw1["runs"]} == {"sw1"}
        assert sw1["total"] == sum(1 for i in range(130) if i % 4 and i % 3 == 1)
        groups = {s["sweep"]: s["runs"] for s in sw1["sweeps"]}
        assert groups[None] == 33 and sum(groups.values()) == 130
        assert api(d, "/api/sweep?id=sw2")["runs"] == groups["sw2"]
        for bad in ("sort=drop", "size=7", "page=0", "status=zzz"):
            status, _, body = get(d, f"/api/runs?{bad}")
            assert status == 400 and json.loads(body)["error"]
    finally:
        d.close()
