"""Several models per run in a sweep file (issue 25: "the Python API and the sweep TOML take
the same structure"): ``models`` as strings or tables, an axis of model sets, the model
bandit and cost budgets as keys and axes, ids and cell labels that tell model sets apart,
and the checks made before anything is stored (a second endpoint down, an unknown model).

Real test servers (HTTP on 127.0.0.1, one per model), real SQLite store, real sandbox,
real CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _sweep_helpers import rows

from basevolve.cli import main
from basevolve.errors import ConfigError
from basevolve.sweep.config import load_sweep, parse_sweep
from basevolve.sweep.progress import cell_labels
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

WEAK, STRONG = "weak,params=1.7e9", "strong,params=14.8e9,weight=0.2"


def _grid(**block) -> dict:
    return {"defaults": {"task": "circle_packing", "base_url": "http://127.0.0.1:9/v1",
                         "seeds": 2},
            "grid": [{"budget": 4, **block}]}


def test_strings_and_tables_are_one_model_set_and_name_the_same_runs():
    as_strings = parse_sweep(_grid(models=[WEAK, STRONG]))
    as_tables = parse_sweep(_grid(models=[{"name": "weak", "params": 1.7e9},
                                          {"name": "strong", "params": 14.8e9,
                                           "weight": 0.2}]))
    ids = [r.run_id for r in as_strings.runs]
    assert ids == [r.run_id for r in as_tables.runs] and len(ids) == 2  # one set, 2 seeds
    cfg = as_strings.runs[0].config
    assert cfg.model == "weak" and cfg.params == 1.7e9  # the first model is the run's
    assert [m["name"] for m in cfg.models] == ["weak", "strong"]
    assert cfg.models[1]["weight"] == 0.2
    assert ids[0].startswith("circle_packing-weak+strong-greedy-C4-T4-s0-")


def test_an_axis_of_model_sets_and_of_model_allocators_gives_distinct_cells():
    sweep = parse_sweep(_grid(models=[[WEAK, STRONG], [WEAK, "strong,params=14.8e9"]],
                              model_allocator=["ucb", "thompson"]))
    assert len(sweep.runs) == 2 * 2 * 2  # sets x allocators x seeds
    assert len({r.run_id for r in sweep.runs}) == 8
    labels = cell_labels(sweep.runs)
    assert len(labels) == 4 and len(set(labels.values())) == 4
    both = [lab for lab in labels.values() if "weight=0.2" in lab]
    assert len(both) == 2 and all("strong[params=1.48e+10,weight=0.2]" in lab for lab in both)
    assert {lab.split("model_allocator=")[1].split()[0] for lab in labels.values()} == {
        "ucb", "thompson"}
    # the same sets differing only in a weight are two runs, not one
    w1 = parse_sweep(_grid(models=[WEAK, "strong,params=14.8e9,weight=0.3"]))
    assert {r.run_id for r in w1.runs}.isdisjoint(r.run_id for r in sweep.runs)


def test_a_models_endpoint_is_not_part_of_the_run_id():
    a = parse_sweep(_grid(models=[WEAK, STRONG + ",base_url=http://10.0.0.1:8000/v1"]))
    b = parse_sweep(_grid(models=[WEAK, STRONG + ",base_url=http://10.0.0.2:8000/v1"]))
    assert [r.run_id for r in a.runs] == [r.run_id for r in b.runs]
    assert a.runs[0].config.models[1]["base_url"] == "http://10.0.0.1:8000/v1"


def test_a_blocks_models_replace_the_defaults_single_model():
    data = _grid(models=[WEAK, STRONG])
    data["defaults"].update(model="test-model", params=1e9)
    data["grid"].append({"budget": 4})  # the defaults' single model
    sweep = parse_sweep(data)
    models = {r.config.model: len(r.config.models) for r in sweep.runs}
    assert models == {"weak": 2, "test-model": 0}


def test_cost_budgets_as_keys_and_axes():
    data = _grid(models=[WEAK, STRONG], model_allocator="ucb",
                 model_reward="improvement_per_flop", budget_flops=[1e14, 2e14], breadth=2)
    del data["grid"][0]["budget"]
    data["defaults"]["budget"] = 8  # a block's cost budget replaces the defaults' C
    sweep = parse_sweep(data)
    cfgs = [r.config for r in sweep.runs]
    assert sorted({c.budget_flops for c in cfgs}) == [1e14, 2e14]
    assert all(c.budget_kind == "flops" and c.breadth == 2 and c.model_reward ==
               "improvement_per_flop" for c in cfgs)
    assert sweep.runs[0].run_id.startswith("circle_packing-weak+strong-greedy-F1e+14-N2-s0-")
    usd = _grid(models=[WEAK + ",price=0.1/0.4", STRONG + ",price=1/4"], budget_usd=0.5)
    del usd["grid"][0]["budget"]
    run = parse_sweep(usd).runs[0]
    assert run.config.budget_usd == 0.5 and "-usd0.5-N1-" in run.run_id


@pytest.mark.parametrize("block,words", [
    ({"models": [WEAK, [STRONG]]}, "grid[0].models mixes models and lists of models"),
    ({"models": [[WEAK], []]}, "grid[0].models[1] is an empty list of models"),
    ({"models": "weak,params=1e9"}, "grid[0].models must be a list of models"),
    ({"models": ["weak,params=1e9,colour=red"]}, "unknown key 'colour'"),
    ({"models": ["weak,params=1e9", "weak,params=2e9"]}, "--model weak is given twice"),
    ({"models": ["weak,params=1e9,weight=0", "strong,params=8e9,weight=0"]},
     "must sum to a positive value"),
    ({"models": ["weak,params=1e9,price=-1/2"]}, "price"),
    ({"models": [WEAK], "model": "strong"}, "is not the first of --model"),
    ({"budget_flops": 1e14}, "give budget (LLM calls) or budget_flops, not both"),
    ({"budget_flops": 1e14, "budget_usd": 1.0}, "give one budget"),
])
def test_bad_model_and_budget_keys_are_one_line_naming_the_key(block, words):
    with pytest.raises(ConfigError) as err:
        parse_sweep(_grid(**block))
    msg = str(err.value)
    assert words in msg and "\n" not in msg and msg.startswith("<sweep>: grid[0]")


def test_depth_with_a_cost_budget_is_refused():
    data = _grid(models=[WEAK], budget_flops=1e14, depth=2)
    del data["grid"][0]["budget"]
    with pytest.raises(ConfigError, match="budget_flops sets no number of generations; drop "
                                          "depth and give breadth"):
        parse_sweep(data)


TWO_ENDPOINTS = """\
[sweep]
name = "two-models"

[defaults]
task = "circle_packing"
seeds = 2

[[grid]]
models = ["weak,base_url={weak},params=1e9", "strong,base_url={strong},params=8e9,weight=0.5"]
model_allocator = ["ucb", "thompson"]
budget = 6
"""


def test_two_endpoints_end_to_end_exact_budgets_resume_and_a_moved_server(tmp_path, capsys):
    """Each run spends exactly C across two endpoints; every call is stored under the
    model that answered at that model's FLOPs; a rerun sends nothing (the stored models
    match the file's); a moved second server renames no run."""
    db = tmp_path / "s.sqlite"
    cfg = tmp_path / "two.toml"
    with LLMTestServer(seeded_packing_reply) as weak, \
            LLMTestServer(seeded_packing_reply) as strong:
        cfg.write_text(TWO_ENDPOINTS.format(weak=weak.base_url, strong=strong.base_url))
        assert main(["sweep", str(cfg), "--store", str(db), "--json"]) == 0
        sent = {"weak": len(weak.requests), "strong": len(strong.requests)}
        asked = {r["model"] for r in weak.requests} | {"|" + r["model"] for r in strong.requests}
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["finished"] == 4 and doc["failed"] == []
    assert len(doc["cells"]) == 2 and len({c["cell"] for c in doc["cells"]}) == 2
    assert asked == {"weak", "|strong"}
    sweep = load_sweep(cfg)
    per = rows(db, "SELECT run_id, model, count(*) n, sum(counted) c, sum(flops) f, "
                   "sum(prompt_tokens - cached_tokens + completion_tokens) t FROM calls "
                   "GROUP BY run_id, model")
    for run in sweep.runs:
        mine = [r for r in per if r["run_id"] == run.run_id]
        assert sum(r["c"] for r in mine) == 6  # exactly C, across both models
    for r in per:
        size = 1e9 if r["model"] == "weak" else 8e9
        assert r["f"] == pytest.approx(2 * size * r["t"])
    assert {m: sum(r["n"] for r in per if r["model"] == m) for m in sent} == sent
    assert sent["weak"] >= 1 and sent["strong"] >= 1
    stored = rows(db, "SELECT json_extract(config_json, '$.model_allocator') a, "
                      "json_extract(config_json, '$.models') m FROM runs")
    assert sorted(r["a"] for r in stored) == ["thompson", "thompson", "ucb", "ucb"]
    assert all([m["name"] for m in json.loads(r["m"])] == ["weak", "strong"] for r in stored)

    with LLMTestServer(seeded_packing_reply) as weak2, \
            LLMTestServer(seeded_packing_reply) as strong2:
        cfg.write_text(TWO_ENDPOINTS.format(weak=weak2.base_url, strong=strong2.base_url))
        assert [r.run_id for r in load_sweep(cfg).runs] == [r.run_id for r in sweep.runs]
        assert main(["sweep", str(cfg), "--store", str(db)]) == 0
        capsys.readouterr()
        assert weak2.requests == [] and strong2.requests == []  # all finished: skipped


def _snapshot(db: Path) -> bytes | None:
    return db.read_bytes() if db.exists() else None


def test_an_unreachable_second_endpoint_is_one_line_exit_2_and_nothing_stored(
        tmp_path, capsys, grid_file):
    db = tmp_path / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as weak:
        down = "http://127.0.0.1:9/v1"  # discard port: nothing listens
        cfg = tmp_path / "two.toml"
        cfg.write_text(TWO_ENDPOINTS.format(weak=weak.base_url, strong=down))
        assert main(["sweep", str(cfg), "--store", str(db)]) == 2
        assert weak.requests == []
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "grid[0].models" in err and "endpoint of model 'strong'" in err and down in err
    assert not db.exists()


@pytest.mark.parametrize("models,words", [
    ('["weak,params=1e9", "mystery-model"]',
     "model 'mystery-model' is unknown (not in `basevolve models`); give its active "
     'parameter count, e.g. "mystery-model,params=8e9"'),
    ('["weak,params=1e9", "other,params=1e9,base_url=http://u:p@127.0.0.1:9/v1"]',
     "must not carry credentials"),
])
def test_an_unknown_model_or_a_bad_endpoint_is_refused_before_the_store(
        tmp_path, capsys, models, words):
    db = tmp_path / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = tmp_path / "bad.toml"
        cfg.write_text(f'[defaults]\ntask = "circle_packing"\nbase_url = "{srv.base_url}"\n'
                       f"[[grid]]\nbudget = 2\nmodels = {models}\n")
        assert main(["sweep", str(cfg), "--store", str(db)]) == 2
        assert srv.requests == []
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "grid[0].models" in err and words in err
    assert "u:p@" not in err
    assert not db.exists()


def test_a_usd_budget_smaller_than_one_call_and_an_unpriced_model_are_refused_up_front(
        tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = tmp_path / "usd.toml"
        for models, budget, words in (
                ('["weak,params=1e9,price=1/10", "strong,params=8e9"]', 1.0,
                 "budget_usd needs a price for every model; 'strong' has none"),
                ('["weak,params=1e9,price=1/10", "strong,params=8e9,price=10/100"]', 0.001,
                 "grid[0].budget_usd: --budget-usd 0.001 is smaller than one call's worst "
                 "case")):
            cfg.write_text(f'[defaults]\ntask = "circle_packing"\nbase_url = "{srv.base_url}"'
                           f"\nmax_tokens = 600\n[[grid]]\nbudget_usd = {budget}\n"
                           f"models = {models}\n")
            assert main(["sweep", str(cfg), "--store", str(db)]) == 2
            err = capsys.readouterr().err.strip()
            assert len(err.splitlines()) == 1 and words in err
        assert srv.requests == []
    assert not db.exists()


def test_a_usd_budget_sweep_never_exceeds_its_budget(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as srv:
        cfg = tmp_path / "usd.toml"
        cfg.write_text(f'[defaults]\ntask = "circle_packing"\nbase_url = "{srv.base_url}"\n'
                       "max_tokens = 600\n[[grid]]\nbudget_usd = 0.3\nseeds = 2\n"
                       'model_allocator = "ucb"\nmodels = [{name = "weak", params = 1e9, '
                       'price = "1/10"}, {name = "strong", params = 8e9, price = "10/100"}]\n')
        assert main(["sweep", str(cfg), "--store", str(db)]) == 0
        capsys.readouterr()
    spent = rows(db, "SELECT run_id, sum(cost_usd) usd, count(DISTINCT model) m FROM calls "
                     "GROUP BY run_id")
    assert len(spent) == 2
    for r in spent:
        assert 0 < r["usd"] <= 0.3 and r["m"] == 2
