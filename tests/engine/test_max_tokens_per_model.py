"""Each model has its own ``max_tokens`` (issue 34, item 3): sent in that model's requests,
used in its worst-case reservation, and its cut replies counted under it.  Before, the
first model's cap covered every model: a Qwen3 thinking model listed after a Llama model
was cut at 4,096 tokens.  Real test servers (the request bodies each model received),
real store, real sandbox."""

from __future__ import annotations

import json
import sqlite3

import pytest

from basevolve.config import RunConfig, budget_fields
from basevolve.engine import start_run
from basevolve.engine.budget import static_prompt_bound
from basevolve.errors import ConfigError
from basevolve.llm.catalog import MODELS
from basevolve.llm.ensemble import parse_model
from basevolve.testing import LLMTestServer
from basevolve.testing.faults import Fault
from basevolve.testing.replies import seeded_packing_reply

LLAMA, QWEN = MODELS.get("llama-3.1-8b"), MODELS.get("qwen3-8b")


@pytest.mark.parametrize(("models", "given", "want"), [
    (("llama-3.1-8b", "qwen3-8b"), None, {"llama": 4096, "qwen": 16000}),  # the catalog's
    (("llama-3.1-8b,max_tokens=1000", "qwen3-8b"), None, {"llama": 1000, "qwen": 16000}),
    (("llama-3.1-8b", "qwen3-8b,max_tokens=3000"), 2048, {"llama": 2048, "qwen": 3000}),
])
def test_each_model_is_asked_for_its_own_max_tokens(pool, tmp_path, models, given, want):
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = RunConfig(task="circle_packing", budget=8, model="llama-3.1-8b", seed=1,
                        base_url=srv.base_url, models=models, max_tokens=given,
                        max_in_flight=1, run_id="mt")
        start_run(cfg, tmp_path / "mt.sqlite", pool=pool, out_dir=None)
        sent = [(r["model"], r["max_tokens"]) for r in srv.requests]
    ids = {LLAMA.served_id: "llama", QWEN.served_id: "qwen"}
    assert {ids[m] for m, _ in sent} == {"llama", "qwen"}  # both models answered
    assert all(cap == want[ids[m]] for m, cap in sent), sent


def test_a_models_reservation_uses_its_own_max_tokens(pool, tmp_path):
    """FLOPs budget, one call in flight: every call's stored reservation is its model's
    ``2 P (prompt bound + its own max_tokens)``, and the budget holds."""
    store = tmp_path / "r.sqlite"
    caps = {"small": 300, "big": 1200}
    params = {"small": 1e9, "big": 4e9}
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = RunConfig(task="circle_packing", model="small", seed=2, base_url=srv.base_url,
                        max_in_flight=1, run_id="r",
                        models=("small,params=1e9,max_tokens=300",
                                "big,params=4e9,max_tokens=1200"),
                        **budget_fields(None, 1.5e14, None, None, 1, None))
        s = start_run(cfg, store, pool=pool, out_dir=None)
        sent = {r["max_tokens"] for r in srv.requests}
    assert sent == {300, 1200}
    con = sqlite3.connect(store)
    rows = con.execute("SELECT model, messages_json, meta_json FROM calls").fetchall()
    con.close()
    assert {m for m, _, _ in rows} == {"small", "big"}
    for model, messages, meta in rows:
        bound = static_prompt_bound(json.loads(messages))
        assert json.loads(meta)["budget_reserved"] == pytest.approx(
            2 * params[model] * (bound + caps[model])), model
    assert s["budget_spent"] <= 1.5e14


def test_cut_replies_are_counted_per_model(pool, tmp_path):
    with LLMTestServer(seeded_packing_reply) as a, LLMTestServer(seeded_packing_reply) as b:
        b.inject(Fault.LENGTH, 3)  # the first three replies of model b are cut at its cap
        cfg = RunConfig(task="circle_packing", budget=10, model="a", seed=3, max_in_flight=1,
                        models=(f"a,base_url={a.base_url},params=1e9",
                                f"b,base_url={b.base_url},params=1e9"), run_id="cut")
        s = start_run(cfg, tmp_path / "cut.sqlite", pool=pool, out_dir=None)
    per = {m["model"]: m for m in s["models"]}
    assert per["b"]["calls"] >= 3
    assert per["b"]["calls_truncated"] == 3 and per["a"]["calls_truncated"] == 0
    assert s["calls_truncated"] == 3


@pytest.mark.parametrize("value", ["0", "-5", "1.5", "many"])
def test_a_bad_max_tokens_is_one_line_naming_it(value):
    with pytest.raises(ConfigError, match="--model m: max_tokens"):
        parse_model(f"m,params=1e9,max_tokens={value}")
