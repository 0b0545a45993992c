"""Each gain credited once, and each reward weighted by its own ask (issue 23, items 2-3).

Runs against the real test server with replies whose latency depends on the request, so
replies come back out of order and one arm holds several pulls in flight.  Everything is
checked from the store alone:

* ``--reward improvement``: a pull's reward must be the gain its own child brought to
  its trajectory's best (the running best over the trajectory's programs in store
  order), never a gain made by another pull that was in flight meanwhile; with greedy
  N > 1 and ``--pull call`` a generation's gain goes to the sibling whose child won;
* EXP3.P: the importance weight of a tell must be the probability of the ask that made
  that pull (read back from the weights stored before and after the tell).
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from basevolve.allocators.base import unit_reward
from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.tasks import load_task
from basevolve.testing import LLMTestServer

TASK = load_task("min_max_distance")


def _h(seed: object) -> int:
    return int.from_bytes(hashlib.sha256(str(seed).encode()).digest()[:4], "big")


def reply(body: dict, index: int) -> str:
    """A MinMaxDist program of 16 points drawn from the request seed; padded by a
    seed-dependent comment so the completion length (and the latency) varies."""
    points = np.random.default_rng(_h(body.get("seed"))).uniform(0, 1, size=(16, 2))
    pad = "#" * (_h(("pad", body.get("seed"))) % 480)
    return ("```python\nimport numpy as np\n\n\ndef min_max_dist_dim2_16():\n"
            f"    return np.array({points.tolist()!r})\n```\n{pad}\n")


class Jitter:
    """Service time from the reply's length: 0.02 .. 0.62 s, so replies overtake."""

    slots = 16

    def seconds(self, usage: dict) -> float:
        return 0.02 + (int(usage["completion_tokens"]) % 13) * 0.05


def _run(tmp_path: Path, pool, run_id: str, **kw) -> sqlite3.Connection:
    store = tmp_path / f"{run_id}.sqlite"
    with LLMTestServer(reply, latency_model=Jitter()) as srv:
        cfg = RunConfig(task="min_max_distance", model="test-model", params=1e9,
                        base_url=srv.base_url, run_id=run_id, **kw)
        s = start_run(cfg, store, pool=pool, out_dir=None)
    assert s["calls_completed"] == cfg.budget
    con = sqlite3.connect(store)
    con.row_factory = sqlite3.Row
    return con


def _rows(con: sqlite3.Connection):
    progs = con.execute(
        "SELECT p.seq, p.trajectory, p.score, p.valid, p.code IS NOT NULL AS has_code, "
        "c.pull_id, c.generation, c.slot FROM programs p JOIN calls c USING (call_id) "
        "WHERE p.is_initial = 0 ORDER BY p.seq").fetchall()
    initial = con.execute("SELECT score FROM programs WHERE is_initial = 1").fetchone()[0]
    allocs = con.execute("SELECT seq, kind, pull_id, trajectory, reward, eligible_json, "
                         "summary_json FROM allocations ORDER BY seq").fetchall()
    return progs, initial, allocs


def _best_at(progs, initial: float, traj: int, seq: int) -> float:
    best = initial
    for p in progs:
        if p["seq"] < seq and p["trajectory"] == traj and p["valid"] and p["has_code"]:
            best = max(best, p["score"])
    return best


def test_concurrent_pulls_are_credited_only_their_own_gain(pool, tmp_path):
    """K = 2 trajectories, 6 calls in flight: several pulls of one arm overlap, and a
    pull told after a sibling raised the best must not be credited that rise."""
    con = _run(tmp_path, pool, "credit-async", budget=48, allocator="random", arms=2,
               seed=5, max_in_flight=6, reward="improvement")
    progs, initial, allocs = _rows(con)
    best = {0: initial, 1: initial}
    expected: dict[int, float] = {}
    for p in progs:  # greedy N = 1 under BaSE: a usable child strictly better is accepted
        expected.setdefault(p["pull_id"], 0.0)
        if p["valid"] and p["has_code"] and p["score"] > best[p["trajectory"]]:
            expected[p["pull_id"]] += p["score"] - best[p["trajectory"]]
            best[p["trajectory"]] = p["score"]
    tells = [a for a in allocs if a["kind"] == "tell"]
    assert len(tells) == 48
    opened = {a["seq"]: a for a in allocs if a["kind"] in ("ask", "assign")}
    stale = 0  # pulls whose best-after minus best-before differs from their own gain
    for t in tells:
        assert t["reward"] == pytest.approx(expected[t["pull_id"]], abs=1e-12), t["pull_id"]
        traj = t["trajectory"]
        old = (_best_at(progs, initial, traj, t["seq"])
               - _best_at(progs, initial, traj, opened[t["pull_id"]]["seq"]))
        stale += not math.isclose(old, expected[t["pull_id"]], abs_tol=1e-12)
    assert stale >= 1, "no overlapping improvement happened: the scenario tests nothing"
    for traj in (0, 1):  # the rewards of an arm add up to its best's whole rise
        got = sum(t["reward"] for t in tells if t["trajectory"] == traj)
        assert got == pytest.approx(best[traj] - initial, abs=1e-12)


def test_a_generations_gain_goes_to_the_winning_sibling(pool, tmp_path):
    """Greedy N = 3 with --pull call: each sibling is its own pull; the generation's
    best child is accepted only when the last sibling is told, and its pull (not the
    last one told) earns the gain."""
    con = _run(tmp_path, pool, "credit-generation", budget=48, depth=16, allocator="ucb",
               arms=2, seed=3, max_in_flight=4, pull="call", reward="improvement")
    progs, initial, allocs = _rows(con)
    parent = {0: initial, 1: initial}
    expected: dict[int, float] = {}
    last_told: dict[tuple[int, int], int] = {}
    gens: dict[tuple[int, int], list] = {}
    for p in progs:
        gens.setdefault((p["trajectory"], p["generation"]), []).append(p)
        expected[p["pull_id"]] = 0.0
        last_told[(p["trajectory"], p["generation"])] = p["pull_id"]
    elsewhere = 0  # generations whose gain belongs to a sibling told before the last
    for (traj, _gen), kids in sorted(gens.items(), key=lambda kv: kv[1][0]["seq"]):
        usable = [k for k in kids if k["valid"] and k["has_code"]]
        if len(kids) < 3 or not usable:
            continue  # a generation cut short by the budget decides nothing
        top = min(usable, key=lambda k: (-k["score"], k["slot"]))
        if top["score"] > parent[traj]:
            expected[top["pull_id"]] = top["score"] - parent[traj]
            parent[traj] = top["score"]
            elsewhere += top["pull_id"] != last_told[(traj, _gen)]
    assert elsewhere >= 1, "every winner was told last: the scenario tests nothing"
    tells = [a for a in allocs if a["kind"] == "tell"]
    assert len(tells) == 48
    for t in tells:
        assert t["reward"] == pytest.approx(expected[t["pull_id"]], abs=1e-12), t["pull_id"]


def _weights(summary: str, gamma: float) -> np.ndarray:
    """log w (up to a constant) from EXP3.P's stored probabilities."""
    p = np.array(json.loads(summary)["probabilities"])
    return np.log((p - gamma / p.size) / (1.0 - gamma))


def test_exp3p_weighs_each_reward_by_its_own_asks_probability(pool, tmp_path):
    """Read the importance weight each tell really used from the stored weights before
    (the tell's summary) and after it (the next event's): it must be the probability
    of the ask that opened the same pull, also when that arm had older pulls pending."""
    k, budget = 3, 60
    con = _run(tmp_path, pool, "exp3p-tickets", budget=budget, allocator="exp3p", arms=k,
               seed=11, max_in_flight=8)
    _, _, allocs = _rows(con)
    first = json.loads(allocs[-1]["summary_json"])
    alpha, gamma = first["alpha"], first["gamma"]
    horizon = budget - k
    eta = gamma / (3 * k)
    ask_prob = {}
    for a in allocs:
        if a["kind"] == "ask":
            p = np.array(json.loads(a["summary_json"])["probabilities"])
            mask = np.array(json.loads(a["eligible_json"]), dtype=bool)
            ask_prob[a["pull_id"]] = p[a["trajectory"]] / p[mask].sum()
    checked = overtaken = 0
    pending: dict[int, list[int]] = {j: [] for j in range(k)}  # open pulls, oldest first
    for i, a in enumerate(allocs):
        arm = a["trajectory"]
        if a["kind"] in ("ask", "assign"):
            pending[arm].append(a["pull_id"])
            continue
        oldest = pending[arm][0]
        pending[arm].remove(a["pull_id"])
        if a["pull_id"] not in ask_prob or a["reward"] <= 0 or i + 1 == len(allocs):
            continue  # an assign pull moves no weight; a zero reward shows no weight
        p_before = np.array(json.loads(a["summary_json"])["probabilities"])
        dw = _weights(allocs[i + 1]["summary_json"], gamma) - _weights(a["summary_json"], gamma)
        bonus = eta * alpha / (p_before * math.sqrt(k * horizon))
        other = next(j for j in range(k) if j != arm)
        shift = bonus[other] - dw[other]  # the softmax's lost constant
        xhat = (dw[arm] + shift - bonus[arm]) / eta
        used = unit_reward(a["reward"], 1.05) / xhat
        assert used == pytest.approx(ask_prob[a["pull_id"]], rel=1e-6), a["pull_id"]
        checked += 1
        if oldest != a["pull_id"] and not math.isclose(ask_prob.get(oldest, 1.0),
                                                      ask_prob[a["pull_id"]]):
            overtaken += 1  # FIFO would have weighted it by the oldest ask's probability
    assert checked >= 30
    assert overtaken >= 1, "no reward overtook an older pull of its arm: nothing tested"
