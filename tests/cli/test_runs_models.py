"""`basevolve runs` breaks a run down per model (issue 25): ``runs --json`` carries the
summary's ``models`` and ``cost_usd``; the plain table shows ``weak+strong`` when a run
mixed models, with model names from outside sanitised.

The store holds real runs through the CLI against the real test server: a two-model run
with a model bandit and prices, a run made "old" (its ``calls.model`` and ``cost_usd``
set to NULL, as migration 7 leaves the rows of runs from before several models), and a
run whose first model's name carries ANSI, Markdown and LaTeX specials.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest

from basevolve.cli import main
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

EVIL = "ev|l\x1b[2J\x1b[31m**x**\\input{/etc/passwd}%_$&#"


def _run(url: str, store: Path, out: Path, run_id: str, *models: str, extra=()) -> None:
    args = ["run", "--task", "circle_packing", "--budget", "12", "--base-url", url,
            "--store", str(store), "--out", str(out / run_id), "--run-id", run_id,
            "--seed", "3"]
    for m in models:
        args += ["--model", m]
    assert main([*args, *extra]) == 0


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("runs_models")
    path = root / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        _run(srv.base_url, path, root, "two", "weak,params=1e9,price=1/10",
             "strong,params=8e9,price=10/100", extra=["--model-allocator", "ucb"])
        _run(srv.base_url, path, root, "old", "weak,params=1e9")
        _run(srv.base_url, path, root, "evil", f"{EVIL},params=1e9", "strong,params=8e9")
    con = sqlite3.connect(path)
    with con:  # what migration 7 leaves in the rows of a run from before
        con.execute("UPDATE calls SET model=NULL, cost_usd=NULL WHERE run_id='old'")
    con.close()
    return path


def _stored(path: Path, run_id: str) -> dict[str, dict]:
    """The oracle: per model, straight from the rows (NULL model = the run's model)."""
    con = sqlite3.connect(path)
    try:
        (run_model,) = con.execute("SELECT model FROM runs WHERE run_id=?", (run_id,)).fetchone()
        rows = con.execute(
            "SELECT coalesce(model, ?), sum(counted), count(*), sum(prompt_tokens), "
            "sum(cached_tokens), sum(completion_tokens), sum(flops), sum(cost_usd) "
            "FROM calls WHERE run_id=? GROUP BY 1", (run_model, run_id)).fetchall()
        progs = con.execute(
            "SELECT p.trajectory, p.score, p.valid, p.is_initial, coalesce(c.model, ?) "
            "FROM programs p LEFT JOIN calls c USING (call_id) WHERE p.run_id=? "
            "ORDER BY p.is_initial DESC, p.seq", (run_model, run_id)).fetchall()
    finally:
        con.close()
    out = {m: {"calls": n, "calls_sent": sent, "prompt_tokens": p, "cached_tokens": c,
               "completion_tokens": o, "flops": f, "cost_usd": usd, "children": 0,
               "improvements": 0, "gain": 0.0}
           for m, n, sent, p, c, o, f, usd in rows}
    best: dict[int, float] = {}
    initial = -math.inf
    for traj, score, valid, is_initial, model in progs:
        if is_initial:
            initial = score
            continue
        out[model]["children"] += 1
        if valid and score > best.get(traj, initial):
            out[model]["improvements"] += 1
            out[model]["gain"] += score - best.get(traj, initial)
            best[traj] = score
    return out


def _runs_json(capsys, store: Path) -> dict[str, dict]:
    capsys.readouterr()
    assert main(["runs", "--store", str(store), "--json"]) == 0
    return {r["run_id"]: r for r in json.loads(capsys.readouterr().out.strip().splitlines()[-1])}


def test_runs_json_breaks_each_run_down_per_model(store, capsys):
    runs = _runs_json(capsys, store)
    for run_id in ("two", "old", "evil"):
        got = {m["model"]: m for m in runs[run_id]["models"]}
        want = _stored(store, run_id)
        assert set(got) == set(want)
        for model, w in want.items():
            g = got[model]
            for key in ("calls", "calls_sent", "prompt_tokens", "cached_tokens",
                        "completion_tokens", "children", "improvements"):
                assert g[key] == w[key], (run_id, model, key)
            assert g["flops"] == pytest.approx(w["flops"])
            assert g["gain"] == pytest.approx(w["gain"])
            assert g["cost_usd"] == (None if w["cost_usd"] is None
                                     else pytest.approx(w["cost_usd"]))
        assert sum(m["calls"] for m in got.values()) == runs[run_id]["calls_completed"] == 12
        assert sum(m["flops"] for m in got.values()) == pytest.approx(runs[run_id]["flops"])
    two = {m["model"]: m for m in runs["two"]["models"]}
    assert set(two) == {"weak", "strong"} and two["strong"]["cost_usd"] > 0
    assert runs["two"]["cost_usd"] == pytest.approx(
        two["weak"]["cost_usd"] + two["strong"]["cost_usd"])
    # a run from before several models: one model, the run's own, unpriced
    assert [m["model"] for m in runs["old"]["models"]] == ["weak"]
    assert runs["old"]["cost_usd"] is None and runs["evil"]["cost_usd"] is None
    assert {m["model"] for m in runs["evil"]["models"]} <= {EVIL, "strong"}


def test_runs_json_equals_the_stored_summary(store, capsys):
    """One breakdown for every surface: ``runs --json`` says what the run's summary said
    (the run was not touched after it finished)."""
    runs = _runs_json(capsys, store)
    con = sqlite3.connect(store)
    try:
        summary = json.loads(con.execute(
            "SELECT summary_json FROM run_summary WHERE run_id='two'").fetchone()[0])
    finally:
        con.close()
    assert runs["two"]["models"] == summary["models"]
    assert runs["two"]["cost_usd"] == summary["cost_usd"]


def test_plain_table_shows_the_models_compactly_and_clean(store, capsys):
    capsys.readouterr()
    assert main(["runs", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[:5] == ["run_id", "status", "task", "models", "budget"]
    cells = {ln.split()[0]: ln.split()[3] for ln in lines[1:]}
    assert cells["two"] == "weak+strong" and cells["old"] == "weak"
    assert "\x1b" not in out and "\\x1b[2J" in out  # the ANSI escape shown, not obeyed
    assert len(lines) == 4  # no line forged by the name


def test_single_model_store_keeps_its_table(tmp_path, capsys):
    """Runs of one model each: the plain table has no models column (unchanged)."""
    with LLMTestServer(seeded_packing_reply) as srv:
        _run(srv.base_url, tmp_path / "one.sqlite", tmp_path, "a", "weak,params=1e9")
    capsys.readouterr()
    assert main(["runs", "--store", str(tmp_path / "one.sqlite")]) == 0
    head = capsys.readouterr().out.splitlines()[0].split()
    assert head == ["run_id", "status", "task", "budget", "calls_completed", "start_score",
                    "best_score"]
