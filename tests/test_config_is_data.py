"""Config is data (issue 33): a RunConfig is built and shape-checked without the layers
above it; the checks that need a registry, the catalog or a task run once, in
:func:`basevolve.engine.run_checks.checked_run`, with the messages they always had."""

from __future__ import annotations

import subprocess
import sys

import pytest

from basevolve.config import RunConfig
from basevolve.engine.run_checks import checked_run
from basevolve.errors import ConfigError

ABOVE = ("basevolve.protocols", "basevolve.llm", "basevolve.tasks", "basevolve.engine",
         "basevolve.prompts", "basevolve.allocators")


def test_building_a_run_config_imports_nothing_above_it():
    code = ("import sys\n"
            "from basevolve.config import RunConfig\n"
            "RunConfig(task='circle_packing', budget=8, depth=2, protocol='codeevolve',\n"
            "          protocol_params={'num_islands': '3'}, task_params={'x': '1'},\n"
            "          models=('a,params=1e9', 'b,params=2e9'), model='a')\n"
            f"print(sorted(m for m in sys.modules if m.startswith({ABOVE!r})))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


def test_checked_run_types_protocol_params_models_and_task_params():
    cfg = RunConfig(task="prompt_optimization", budget=8, model="a", protocol="codeevolve",
                    protocol_params={"num_islands": "3"}, task_params={"limit": "5"},
                    models=("a,params=1e9,base_url=http://127.0.0.1:9/v1", "b,params=2e9"))
    assert cfg.protocol_params == {"num_islands": "3"}  # data until checked
    got = checked_run(cfg)
    assert got.protocol_params["num_islands"] == 3
    assert got.task_params["limit"] == 5
    assert got.models == ({"name": "a", "base_url": "http://127.0.0.1:9/v1", "params": 1e9},
                          {"name": "b", "params": 2e9})
    assert (got.base_url, got.params) == ("http://127.0.0.1:9/v1", 1e9)  # the first model's
    assert checked_run(got) == got and got.run_id == cfg.run_id


@pytest.mark.parametrize(("kw", "message"), [
    ({"protocol": "nope"}, "unknown protocol 'nope'; known: adaevolve"),
    ({"protocol_params": {"bogus": "1"}}, "bogus"),
    ({"model_allocator": "ucb"}, "--model-allocator chooses among several models"),
    ({"models": ("x,params=1e9", "embedded"), "model": "embedded"},
     "the run's model 'embedded' is not the first of --model ('x')"),
    ({"task_params": {"limit": "5"}}, "takes no --task-param"),
])
def test_checked_run_refuses_with_the_old_messages(kw, message):
    cfg = RunConfig(task="circle_packing", budget=4, **kw)  # shape is fine
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        checked_run(cfg)


def test_a_stored_run_id_stays_as_stored():
    cfg = RunConfig.from_dict({"task": "circle_packing", "budget": 4, "run_id": "../old id"})
    assert checked_run(cfg).run_id == "../old id"
