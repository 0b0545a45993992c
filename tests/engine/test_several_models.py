"""Several models in one run (issue 25): two real endpoints, exact budgets, FLOPs per model,
roles, the model bandit's stored decisions, and cost budgets that hold for the model
actually chosen."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from basevolve.config import RunConfig, budget_fields
from basevolve.engine import start_run
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
    for model, p, flops, prompt, cached, completion in _rows(
            store, "SELECT model, ?, flops, prompt_tokens, cached_tokens, completion_tokens "
            "FROM calls", 0):
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
    store = tmp_path / "b.sqlite"
    with LLMTestServer(_model_scaled) as srv:
        s = _bandit_run(pool, store, srv.base_url, "bandit")
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
    the FLOPs (and here 10x the dollars); the budget is never exceeded and what is left
    is less than the dearest model's worst case."""
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
