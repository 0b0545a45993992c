"""Behaviours no test pinned before issue 35 (hand mutation testing): each test below
names the one-line mutant it catches, and fails on it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import island_reply

TASK = "min_max_distance"
CODEEVOLVE = {"num_islands": 2, "init_pop": 2, "migration_interval": 3}


def _rows(store: Path, sql: str, *args: Any) -> list[tuple]:
    con = sqlite3.connect(store)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def test_follow_ups_never_take_an_arm_past_its_cap(pool, tmp_path):
    """Mutant: ``engine/followups.py`` without the ``--cap`` limit in ``continue_pull``
    (a CodeEvolve meta-prompt call's code call then takes its arm past the cap).

    CodeEvolve starts every population with meta-prompt calls that declare a follow-up;
    with ``--cap 3`` and room left in C, a meta call that is an arm's third call must
    not be followed by a fourth."""
    store = tmp_path / "s.sqlite"
    with LLMTestServer(island_reply) as srv:
        cfg = RunConfig(task=TASK, budget=12, base_url=srv.base_url, run_id="cap", seed=1,
                        protocol="codeevolve", protocol_params=CODEEVOLVE,
                        allocator="thompson_plain", arms=3, cap=5, max_in_flight=1)
        start_run(cfg, store, pool=pool)
    per_arm = _rows(store, "SELECT trajectory, count(*) FROM calls WHERE reissue_of IS NULL "
                           "GROUP BY trajectory")
    assert per_arm and all(n <= 5 for _, n in per_arm), per_arm
    # the case the cap guards happened: an arm's last (third) call was a meta-prompt
    # call whose follow-up the cap refused
    last = [_rows(store, "SELECT purpose FROM calls WHERE trajectory=? AND reissue_of IS NULL "
                         "ORDER BY call_index DESC LIMIT 1", t)[0][0] for t, n in per_arm if n == 5]
    assert "meta_prompt" in last, last


def test_deterministic_window_bounds_the_calls_decided_and_not_told(pool, tmp_path, scripted):
    """Mutant: ``engine/ordering.py``'s window test ``len(self.open) >= self.window``
    changed to ``>`` (one more call decided before a tell than ``--window`` allows).

    ``--window 2 --max-in-flight 2``: in the store's event order (``seq``: a call row is
    written when the call is decided, its child's row when the child is told) at most 2
    calls are ever decided and untold, and the window is reached (it binds)."""
    store = tmp_path / "w.sqlite"
    with LLMTestServer(scripted(seed=3)) as srv:
        cfg = RunConfig(task=TASK, budget=12, base_url=srv.base_url, run_id="win", seed=2,
                        allocator="ucb", arms=2, max_in_flight=2, deterministic=True,
                        window=2)
        s = start_run(cfg, store, pool=pool)
    assert s["calls_completed"] == 12
    events = sorted([(seq, +1) for (seq,) in _rows(
        store, "SELECT seq FROM calls WHERE reissue_of IS NULL")] + [(seq, -1) for (seq,) in _rows(
        store, "SELECT seq FROM programs WHERE call_id IS NOT NULL")])
    open_, peak = 0, 0
    for _, step in events:
        open_ += step
        peak = max(peak, open_)
    assert open_ == 0 and peak == 2


def test_improvement_per_flop_rewards_a_bigger_model_less(tmp_path):
    """Mutant: ``engine/models.py``'s ``improvement_per_flop`` factor inverted: a bigger
    model would be rewarded more per FLOP.  (Issue 35 named ``P_model / P_min`` for
    ``P_min / P_model``; since issue 34 the factor is ``min(1, F_ref / F_call)`` of the
    call's actual FLOPs, and the inverted variant is ``F_call / F_ref``.)  The same gain
    at the same tokens (1,000, the reference reply) earns the 8x model 1/8."""
    from router_support import proposal, router

    from basevolve.engine.models import CallCost

    r = router(tmp_path, ("small,params=1e9", "big,params=8e9"), model_allocator="ucb",
               model_reward="improvement_per_flop", max_tokens=1000)
    got = {}
    for key in range(2):  # UCB tries each model once first, here in two trajectories
        arm = r.choose(proposal(key), key=key, call_index=key, best=0.5, trajectory=key)
        p = r.models[arm].active_params
        r.answered(key, arm, CallCost(flops=2 * p * 1000, tokens=1000))
        got[r.models[arm].name] = r.reward(key, 0.9, 0.5)
    assert got["small"] == pytest.approx(0.4)
    assert got["big"] == pytest.approx(0.4 / 8)


def test_a_cost_budget_narrows_the_model_choice_to_the_models_that_fit(pool, tmp_path):
    """Mutant: ``engine/models.py`` with the narrowing of the choice to the models that
    still fit a cost budget switched off (``fitting`` ignored in ``choose``): a
    reservation can then exceed the budget left.

    Sequential (one call in flight), so when call i is reserved the budget has spent
    exactly the FLOPs of calls 0..i-1: every reservation must fit what is left.  The
    2x model has 1000x the weight, so once it no longer fits only the narrowing sends
    the last calls to the small one."""
    from basevolve.config import budget_fields
    from basevolve.testing.replies import seeded_packing_reply

    store = tmp_path / "c.sqlite"
    limit = 2.0e14
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = RunConfig(task="circle_packing", model="small", seed=4, base_url=srv.base_url,
                        max_in_flight=1, max_tokens=600, allocator="ucb", arms=2, run_id="fit",
                        models=("small,params=4e9,weight=0.001", "big,params=8e9,weight=1"),
                        **budget_fields(None, limit, None, None, 1, None))
        s = start_run(cfg, store, pool=pool, out_dir=None)
    rows = _rows(store, "SELECT model, flops, meta_json FROM calls ORDER BY call_index")
    spent = 0.0
    for model, flops, meta in rows:
        assert spent + json.loads(meta)["budget_reserved"] <= limit, (model, spent)
        spent += flops
    assert spent == pytest.approx(s["budget_spent"]) and spent <= limit
    models = [m for m, _, _ in rows]
    assert models[0] == "big" and "small" in models  # the small model took the last calls


def test_deterministic_model_choices_ignore_the_models_own_free_slots(pool, tmp_path):
    """Mutant: ``engine/models.py`` without the ``--deterministic`` exception to the model
    bandit's free-slot mask (``_mask``): with a per-model ``max_in_flight`` the eligible
    models, and so the choices, would depend on which replies have arrived.

    Both models take one call at a time while the run keeps 4 in flight: every stored
    decision saw both models eligible, and the choices are those of a sequential run."""
    from basevolve.testing.replies import seeded_packing_reply

    out = []
    with LLMTestServer(seeded_packing_reply, latency_s=0.02) as srv:
        for inflight in (4, 1):
            store = tmp_path / f"d{inflight}.sqlite"
            cfg = RunConfig(task="circle_packing", budget=12, model="small", seed=3,
                            base_url=srv.base_url, deterministic=True, max_in_flight=inflight,
                            models=("small,params=1e9,max_in_flight=1",
                                    "big,params=8e9,max_in_flight=1"),
                            model_allocator="ucb", allocator="ucb", arms=2, run_id="m")
            start_run(cfg, store, pool=pool, out_dir=None)
            asks = _rows(store, "SELECT call_index, model, eligible_json FROM model_events "
                                "WHERE kind='ask' ORDER BY seq")
            assert len(asks) == 12
            assert all(json.loads(e) == [True, True] for _, _, e in asks), asks
            out.append([(i, m) for i, m, _ in asks])
    assert out[0] == out[1]
