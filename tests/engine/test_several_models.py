"""Several models in one run (issue 25): two real endpoints, exact budgets, FLOPs per model,
roles, the model bandit's stored decisions, and cost budgets that hold for the model
actually chosen."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from basevolve.config import RunConfig, budget_fields
from basevolve.engine import start_run
from basevolve.engine.budget import static_prompt_bound
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import PACKING_PROGRAM, seed_scale, seeded_packing_reply

P_WEAK, P_STRONG = 1e9, 8e9


def _rows(store: Path, sql: str, *args) -> list[tuple]:
    con = sqlite3.connect(store)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _two(weak_url: str, strong_url: str, **extra: str) -> tuple[str, str]:
    w = f"weak,base_url={weak_url},params={P_WEAK:g}"
    s = f"strong,base_url={strong_url},params={P_STRONG:g}"
    return w + extra.get("weak", ""), s + extra.get("strong", "")


def test_two_endpoints_spend_exactly_c_and_count_flops_per_model(pool, tmp_path):
    store = tmp_path / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as weak, \
            LLMTestServer(seeded_packing_reply) as strong:
        cfg = RunConfig(task="circle_packing", budget=24, model="weak", seed=5,
                        models=_two(weak.base_url, strong.base_url, strong=",weight=0.5"),
                        allocator="ucb", arms=3, max_in_flight=4, run_id="two")
        s = start_run(cfg, store, pool=pool, out_dir=None)
        seen = {"weak": len(weak.requests), "strong": len(strong.requests)}
        models_asked = {r["model"] for r in weak.requests} | {
            "|" + r["model"] for r in strong.requests}
    assert s["calls_completed"] == 24
    per = {m["model"]: m for m in s["models"]}
    assert set(per) == {"weak", "strong"} and per["weak"]["calls"] >= 1 <= per["strong"]["calls"]
    # each endpoint saw exactly the calls stored under its model, asked for by name
    assert {m: per[m]["calls_sent"] for m in per} == seen
    assert models_asked == {"weak", "|strong"}
    # FLOPs at each model's own size: 2 P (uncached prompt + completion), row by row
    for model, flops, prompt, cached, completion in _rows(
            store, "SELECT model, flops, prompt_tokens, cached_tokens, completion_tokens "
            "FROM calls"):
        size = P_WEAK if model == "weak" else P_STRONG
        assert flops == pytest.approx(2 * size * (prompt - cached + completion))
    for model in per:
        stored = _rows(store, "SELECT sum(flops), count(*) FROM calls WHERE model=?", model)[0]
        assert per[model]["flops"] == pytest.approx(stored[0])
        assert per[model]["calls"] == stored[1]
    assert s["flops"] == pytest.approx(sum(m["flops"] for m in per.values()))
    assert sum(m["children"] for m in per.values()) == s["children"]


def _model_scaled(body: dict, index: int) -> str:
    """A packing program whose quality depends on the model asked: ``strong`` writes
    larger circles (scale 0.9-1.0), ``weak`` small ones (0.45-0.55)."""
    base = seed_scale(body.get("seed"))  # in [0.5, 1.0)
    scale = 0.9 + 0.2 * (base - 0.5) if body.get("model") == "strong" else 0.45 + 0.2 * (base - 0.5)
    return "```python\n" + PACKING_PROGRAM.format(scale=scale) + "```\n"


def _bandit_run(pool, store: Path, url: str, run_id: str, **kw) -> dict:
    cfg = RunConfig(task="circle_packing", budget=60, model="weak", base_url=url, seed=11,
                    models=(f"weak,params={P_WEAK:g}", f"strong,params={P_STRONG:g}"),
                    model_allocator="ucb", allocator="ucb", arms=4, max_in_flight=8,
                    run_id=run_id, **kw)
    return start_run(cfg, store, pool=pool, out_dir=None)


def test_model_bandit_decisions_and_rewards_are_stored(pool, tmp_path):
    """--deterministic: 8 calls in flight, but the choices are a function of the seed,
    so "UCB found the better model" below holds on a loaded machine too."""
    store = tmp_path / "b.sqlite"
    with LLMTestServer(_model_scaled) as srv:
        s = _bandit_run(pool, store, srv.base_url, "bandit", deterministic=True)
    per = {m["model"]: m for m in s["models"]}
    assert s["calls_completed"] == 60 and s["model_allocator"] == "ucb"
    asks = _rows(store, "SELECT call_index, model, eligible_json FROM model_events "
                        "WHERE kind='ask' ORDER BY seq")
    tells = _rows(store, "SELECT call_index, model, reward FROM model_events WHERE kind='tell'")
    # one decision per call (every call is a program call here), each told once
    assert len(asks) == 60 and len(tells) == 60
    by_call = dict(_rows(store, "SELECT call_index, model FROM calls"))
    assert all(by_call[i] == m for i, m, _ in asks)
    assert all(json.loads(e) == [True, True] for _, _, e in asks)
    # the reward is the child's improvement over its trajectory's best when asked:
    # non-negative, and the strong model's children improve more
    assert all(r >= 0 for _, _, r in tells)
    gain = {m: sum(r for _, mm, r in tells if mm == m) for m in per}
    assert gain["strong"] > gain["weak"]
    assert per["strong"]["calls"] > per["weak"]["calls"]  # UCB found the better model
    assert per["strong"]["improvements"] > per["weak"]["improvements"]


def test_model_bandit_runs_are_replicable_under_deterministic(pool, tmp_path):
    """With --deterministic the model choices are a function of the seed: two runs at
    different --max-in-flight store the same model per call and the same rewards."""
    out = []
    with LLMTestServer(_model_scaled, latency_s=0.01, latency_jitter=0.9) as srv:
        for n, inflight in (("a", 8), ("b", 3)):
            cfg = RunConfig(task="circle_packing", budget=40, model="weak", seed=3,
                            base_url=srv.base_url, deterministic=True, max_in_flight=inflight,
                            models=(f"weak,params={P_WEAK:g}", f"strong,params={P_STRONG:g}"),
                            model_allocator="thompson_plain", allocator="ucb", arms=4,
                            run_id=n)
            start_run(cfg, tmp_path / f"{n}.sqlite", pool=pool, out_dir=None)
            out.append((
                _rows(tmp_path / f"{n}.sqlite", "SELECT call_index, model FROM calls "
                      "ORDER BY call_index"),
                _rows(tmp_path / f"{n}.sqlite", "SELECT kind, call_index, model, reward FROM "
                      "model_events ORDER BY call_index, kind")))
    assert out[0] == out[1]


def test_roles_send_a_purpose_to_its_model(pool, tmp_path):
    """CodeEvolve's meta prompts on a cheaper endpoint: every meta_prompt call goes to the
    model with that role, and no other call does (it has no weight)."""
    from basevolve.testing.replies import island_reply

    store = tmp_path / "r.sqlite"
    with LLMTestServer(island_reply) as main, LLMTestServer(island_reply) as meta:
        cfg = RunConfig(task="circle_packing", budget=30, model="main", protocol="codeevolve",
                        models=(f"main,base_url={main.base_url},params=8e9",
                                f"meta,base_url={meta.base_url},params=1e9,role=meta_prompt"),
                        seed=2, run_id="roles", max_in_flight=4)
        s = start_run(cfg, store, pool=pool, out_dir=None)
        meta_requests = len(meta.requests)
    assert s["calls_completed"] == 30
    rows = _rows(store, "SELECT purpose, model, count(*) FROM calls GROUP BY 1, 2")
    assert {(p, m) for p, m, _ in rows} <= {("meta_prompt", "meta"), ("mutation", "main"),
                                            ("fix", "main")}
    n_meta = sum(n for p, _, n in rows if p == "meta_prompt")
    assert n_meta >= 1 and n_meta == meta_requests


@pytest.mark.parametrize("kind,limit", [("flops", 4.0e14), ("tokens", 40_000),
                                        ("usd", 0.4)])
def test_cost_budget_never_exceeded_with_two_sizes(pool, tmp_path, kind, limit):
    """The reservation holds for the model actually chosen: the 8x model's calls cost 8x
    the FLOPs (and here 10x the dollars); the budget is never exceeded, and what is left
    is less than the *cheapest* model's worst case: once the dearest model no longer
    fits, the last calls go to the models that do."""
    store = tmp_path / "c.sqlite"
    budget = budget_fields(None, limit if kind == "flops" else None,
                           limit if kind == "tokens" else None, None, 1,
                           limit if kind == "usd" else None)
    prices = (",price=1/10", ",price=10/100") if kind == "usd" else ("", "")
    with LLMTestServer(_model_scaled) as srv:
        cfg = RunConfig(task="circle_packing", model="weak", seed=4,
                        base_url=srv.base_url, max_in_flight=6, max_tokens=600,
                        models=(f"weak,params={P_WEAK:g}{prices[0]}",
                                f"strong,params={P_STRONG:g}{prices[1]}"),
                        model_allocator="ucb", allocator="ucb", arms=2, run_id=kind, **budget)
        s = start_run(cfg, store, pool=pool, out_dir=None)
    spent = s["budget_spent"]
    assert 0 < spent <= limit
    per = {m["model"]: m for m in s["models"]}
    assert per["strong"]["calls"] >= 1 and per["weak"]["calls"] >= 1
    real = {"flops": s["flops"],
            "tokens": s["prompt_tokens"] + s["completion_tokens"],
            "usd": s["cost_usd"]}[kind]
    assert real == pytest.approx(spent)
    assert s["budget_unfit_call"] is not None and limit - spent < s["budget_unfit_call"]
    # the call that did not fit is the cheapest model's: no model could take another call
    con = sqlite3.connect(store)
    last = json.loads(con.execute("SELECT messages_json FROM calls ORDER BY call_index DESC "
                                  "LIMIT 1").fetchone()[0])
    con.close()
    weak_tokens = static_prompt_bound(last) + 600  # the static bound, no learned excess
    weak_worst = {"flops": 2 * P_WEAK * weak_tokens, "tokens": weak_tokens,
                  "usd": (weak_tokens - 600) * 1e-6 + 600 * 10e-6}[kind]
    assert s["budget_unfit_call"] < 1.5 * weak_worst


# --------------------------------------------------------------- kill and resume
def _seeded_by_model(body: dict, index: int) -> str:
    """A packing program drawn from sha256(model, messages, seed): a function of the
    request, and better for ``strong`` (so the model bandit has something to learn)."""
    digest = hashlib.sha256((body.get("model", "") + json.dumps(body["messages"])
                             + str(body.get("seed"))).encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    scale = (0.85 + 0.15 * u) if body.get("model") == "strong" else (0.45 + 0.3 * u)
    return "```python\n" + PACKING_PROGRAM.format(scale=scale) + "```\n"


def _logical(store: Path) -> dict[str, list[tuple]]:
    """The run as its decisions and results: a call re-sent after a crash stands in its
    first call's place (the n-th call decided), pulls by rank."""
    con = sqlite3.connect(store)
    try:
        rows = con.execute("SELECT call_id, reissue_of, call_index FROM calls "
                           "ORDER BY call_index").fetchall()
        parent = {c: p for c, p, _ in rows}
        decided = {cid: n for n, cid in enumerate(c for c, p, _ in rows if p is None)}
        index_key = {}

        def key(cid: int) -> int:
            while parent[cid] is not None:
                cid = parent[cid]
            return decided[cid]

        for c, _, i in rows:
            index_key[i] = key(c)
        calls = sorted((key(r[0]), *r[1:]) for r in con.execute(
            "SELECT call_id, model, seed, text, counted, flops FROM calls WHERE status='ok'"))
        events = [(r[0], index_key[r[1]], *r[2:]) for r in con.execute(
            "SELECT kind, call_index, model, arm, reward, eligible_json FROM model_events "
            "ORDER BY seq")]
        pulls = [p for (p,) in con.execute(
            "SELECT pull_id FROM allocations WHERE kind IN ('assign', 'ask') ORDER BY seq")]
        rank = {p: i for i, p in enumerate(pulls)}
        allocations = [(r[0], rank[r[1]], *r[2:]) for r in con.execute(
            "SELECT kind, pull_id, trajectory, reward FROM allocations ORDER BY seq")]
        return {"calls": calls, "model_events": sorted(events, key=lambda e: (e[1], e[0])),
                "allocations": allocations}
    finally:
        con.close()


def _progress(store: Path) -> tuple[int, int]:
    """(counted calls, calls sent < 0.1 s ago and still in flight)."""
    try:
        con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
        try:
            return con.execute("SELECT coalesce(sum(counted),0), coalesce(sum(status='pending' "
                               "AND created_at > ?),0) FROM calls",
                               (time.time() - 0.1,)).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return (0, 0)


def _ask_without_its_call(store: Path) -> None:
    """What a SIGKILL between the model bandit's ``ask`` and the call's row leaves: an ask
    for the next call index, with no call.  Written by hand so every run of the test
    covers that moment, which a real kill only sometimes hits."""
    con = sqlite3.connect(store)
    try:
        with con:
            (index,) = con.execute("SELECT max(call_index) + 1 FROM calls").fetchone()
            (seq,) = con.execute("SELECT max(s) + 1 FROM (SELECT max(seq) s FROM calls UNION "
                                 "ALL SELECT max(seq) FROM model_events UNION ALL SELECT "
                                 "max(seq) FROM allocations UNION ALL SELECT max(seq) FROM "
                                 "programs)").fetchone()
            con.execute("INSERT INTO model_events (run_id, seq, kind, call_index, model, arm, "
                        "eligible_json, created_at) VALUES ('mm', ?, 'ask', ?, 'weak', 0, "
                        "'[true, true]', 0)", (seq, index))
    finally:
        con.close()


def test_killed_two_model_run_resumes_exactly(pool, tmp_path):
    """SIGKILL a two-endpoint run with a model bandit while calls are in flight, resume
    it: exactly C calls, and (with --deterministic) the same models, rewards and
    allocation events as an uninterrupted run -- the bandit's state was rebuilt from the
    store, not started afresh."""
    args = ["--task", "circle_packing", "--budget", "40", "--allocator", "ucb", "--arms",
            "3", "--seed", "9", "--max-in-flight", "6", "--deterministic",
            "--model-allocator", "thompson_plain", "--run-id", "mm"]
    with LLMTestServer(_seeded_by_model, latency_s=0.3, latency_jitter=0.5,
                       cached_tokens=0) as weak, \
            LLMTestServer(_seeded_by_model, latency_s=0.3, latency_jitter=0.5,
                          cached_tokens=0) as strong:
        models = ["--model", f"weak,base_url={weak.base_url},params=1e9",
                  "--model", f"strong,base_url={strong.base_url},params=8e9"]
        ref = subprocess.run([sys.executable, "-m", "basevolve", "run", *args, *models,
                              "--store", str(tmp_path / "ref.sqlite"), "--out",
                              str(tmp_path / "o1"), "--json"],
                             capture_output=True, text=True, timeout=600)
        assert ref.returncode == 0, ref.stderr
        store = tmp_path / "kill.sqlite"
        base = [sys.executable, "-m", "basevolve", "run", "--store", str(store), "--out",
                str(tmp_path / "o2")]
        proc = subprocess.Popen([*base, *args, *models], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        try:
            while time.monotonic() < deadline:
                counted, fresh = _progress(store)
                if counted >= 12 and fresh >= 1:
                    break
                assert proc.poll() is None, "run ended before it could be killed"
                time.sleep(0.01)
            else:
                pytest.fail("run never reached the kill point")
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait()
        _ask_without_its_call(store)
        done = subprocess.run([*base, "--resume", "mm", "--json"], capture_output=True,
                              text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    resumed = json.loads(done.stdout.strip().splitlines()[-1])
    reference = json.loads(ref.stdout.strip().splitlines()[-1])
    assert resumed["calls_completed"] == 40 and resumed["calls_lost"] >= 1
    assert {m["model"] for m in resumed["models"]} == {"weak", "strong"}
    a, b = _logical(tmp_path / "ref.sqlite"), _logical(store)
    for part in a:
        assert a[part] == b[part], part
    assert resumed["best_score"] == reference["best_score"]
    assert [m["calls"] for m in resumed["models"]] == [m["calls"] for m in reference["models"]]


def test_a_models_own_in_flight_limit_holds(pool, tmp_path):
    """``max_in_flight=2`` on the strong model: its server never holds more than 2
    requests, while the run keeps up to 8 in flight in all."""
    with LLMTestServer(seeded_packing_reply, latency_s=0.05) as weak, \
            LLMTestServer(seeded_packing_reply, latency_s=0.05) as strong:
        cfg = RunConfig(task="circle_packing", budget=40, model="weak", seed=1,
                        models=_two(weak.base_url, strong.base_url,
                                    strong=",weight=3,max_in_flight=2"),
                        allocator="ucb", arms=4, max_in_flight=8, run_id="lim")
        s = start_run(cfg, tmp_path / "l.sqlite", pool=pool, out_dir=None)
        peak = strong.peak_in_flight
        n_strong = len(strong.requests)
    assert s["calls_completed"] == 40 and n_strong >= 10
    assert 1 <= peak <= 2
