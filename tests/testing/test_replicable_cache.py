"""Replicable FLOPs under ``--deterministic`` on the simulator (issue 34, item 4;
testing/prefix_cache.py): the emulated prefix cache is a function of the run's logical
call order and starts empty for each run, so two ``--deterministic`` runs on the *same*
server process give identical ``cached_tokens`` and FLOPs per call.  Before, the cache
was the server's since it started, in arrival order: the second run's first call found
the first run's prompts cached."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import urllib.request
from pathlib import Path

from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.llm.call_order import CALL_HEADER
from basevolve.testing import LLMTestServer
from basevolve.testing.prefix_cache import LogicalPrefixCache, parse_order
from basevolve.testing.sim import simulated_server
from basevolve.testing.sim.latency import TokenRateLatency


def _per_call(store: Path) -> list[tuple]:
    con = sqlite3.connect(store)
    try:
        return con.execute("SELECT call_index, model, prompt_tokens, cached_tokens, "
                           "completion_tokens, flops FROM calls ORDER BY call_index").fetchall()
    finally:
        con.close()


def _two_runs(pool, tmp_path: Path, url: str, **kw) -> tuple[list[tuple], list[tuple]]:
    out = []
    for n, inflight in (("a", 8), ("b", 3)):
        cfg = RunConfig(task="min_max_distance", budget=24, base_url=url, seed=4,
                        allocator="ucb", arms=3, deterministic=True, max_in_flight=inflight,
                        run_id="same", **kw)  # the same run id, in two stores
        start_run(cfg, tmp_path / f"{n}.sqlite", pool=pool, out_dir=None)
        out.append(_per_call(tmp_path / f"{n}.sqlite"))
    return out[0], out[1]


def test_two_deterministic_runs_on_one_simulator_get_the_same_cached_tokens(pool, tmp_path):
    lat = TokenRateLatency(prefill_tps=2e6, decode_tps=2e4, slots=4)
    with simulated_server("min_max_distance", latency_model=lat).start() as srv:
        a, b = _two_runs(pool, tmp_path, srv.base_url, model="sim", params=1e9)
    assert len(a) == 24 and a == b
    assert a[0][3] == 0  # each run's cache starts empty
    assert sum(r[3] for r in a) > 0  # and the cache is used (greedy siblings share prompts)


def test_two_models_behind_the_simulators_router_replicate_too(pool, tmp_path):
    """Each model has its own cache behind the router; a call's place counts its model's
    calls, and the router passes it on."""
    with simulated_server("min_max_distance", models={"weak": 0.5, "strong": 2.0}).start() as srv:
        a, b = _two_runs(pool, tmp_path, srv.base_url, model="weak",
                         models=("weak,params=1e9", "strong,params=8e9"),
                         model_allocator="thompson_plain")
    assert {r[1] for r in a} == {"weak", "strong"}
    assert a == b and sum(r[3] for r in a) > 0


def _cached(url: str, text: str, order: str | None) -> int:
    headers = {"Content-Type": "application/json"} | ({CALL_HEADER: order} if order else {})
    body = {"messages": [{"role": "user", "content": text}]}
    req = urllib.request.Request(url + "/chat/completions", data=json.dumps(body).encode(),
                                 headers=headers)
    return int(json.loads(urllib.request.urlopen(req, timeout=60).read())
               ["usage"]["prompt_tokens_details"]["cached_tokens"])


X, Y = "x" * 400, "x" * 200 + "y" * 200


def test_the_cache_follows_the_logical_order_not_arrival():
    """Over HTTP: position 2 arriving before position 1 waits for it and is answered
    from positions 0 and 1; a call sent again gets the same answer; another run, and a
    request without the header, start from their own empty caches."""
    with LLMTestServer("ok") as srv:
        url = srv.base_url
        got: dict[str, int] = {}
        assert _cached(url, X, "r@1/0") == 0
        late = threading.Thread(target=lambda: got.update(two=_cached(url, Y, "r@1/2")))
        late.start()  # position 2 first: it waits for position 1
        late.join(0.3)
        assert "two" not in got
        assert _cached(url, Y, "r@1/1") == 50  # 200 characters shared with position 0
        late.join(60)
        assert got["two"] == 99  # the same prompt as position 1 (capped at prompt - 1)
        assert _cached(url, Y, "r@1/1") == 50  # sent again: the same answer
        assert _cached(url, X, "other@2/0") == 0  # another run: empty
        assert _cached(url, X, None) == 0  # no header: the arrival-order cache, apart


def test_a_predecessor_that_never_comes_is_given_up_once():
    """A server restarted between a kill and its resume never sees the run's earlier
    calls: the first request waits ``wait_s`` once, the next ones not at all."""
    cache = LogicalPrefixCache(wait_s=0.2)
    t0 = time.monotonic()
    assert cache.lookup("r", 5, X) == 0
    waited = time.monotonic() - t0
    t1 = time.monotonic()
    assert cache.lookup("r", 6, X) == 400  # position 5's prompt; 0-4 given up
    assert waited >= 0.2 and time.monotonic() - t1 < waited
    assert parse_order("a/b@1.5/12") == ("a/b@1.5", 12) and parse_order("x/") is None
