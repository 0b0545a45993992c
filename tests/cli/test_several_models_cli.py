"""`basevolve run --model A,... --model B,...` from the command line (issue 25): a run on
two endpoints, the summary's per-model rows, and bad input as one clear line, exit 2 and
a store left byte for byte as it was."""

from __future__ import annotations

import json
import socket

import pytest

from basevolve.cli import main
from basevolve.testing import LLMTestServer
from basevolve.testing.replies import seeded_packing_reply

TASK = ["--task", "circle_packing"]


@pytest.fixture()
def store(tmp_path):
    """A store holding one finished two-model run, so 'untouched' is checked byte for byte."""
    path = tmp_path / "s.sqlite"
    with LLMTestServer(seeded_packing_reply) as a, LLMTestServer(seeded_packing_reply) as b:
        assert main(["run", *TASK, "--budget", "6", "--store", str(path), "--run-id", "first",
                     "--model", f"small,base_url={a.base_url},params=1e9",
                     "--model", f"big,base_url={b.base_url},params=8e9,price=1/2/10",
                     "--out", str(tmp_path / "out")]) == 0
        assert len(a.requests) + len(b.requests) == 6
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bad(store, capsys, *models: str, extra: tuple[str, ...] = ()) -> str:
    before = store.read_bytes()
    capsys.readouterr()
    with LLMTestServer(seeded_packing_reply) as srv:
        args = [a.replace("URL", srv.base_url) for a in models]
        budget = [] if "--budget-usd" in extra else ["--budget", "4"]
        code = main(["run", *TASK, *budget, "--store", str(store), *extra,
                     *[x for m in args for x in ("--model", m)]])
        assert srv.requests == []  # nothing spent
    err = capsys.readouterr().err.strip()
    assert code == 2 and store.read_bytes() == before, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    return err


def test_summary_shows_each_model_and_the_spend(tmp_path, store, capsys):
    with LLMTestServer(seeded_packing_reply) as srv:
        code = main(["run", *TASK, "--budget", "8", "--store", str(store), "--json",
                     "--base-url", srv.base_url, "--model", "small,params=1e9",
                     "--model", "big,params=8e9,weight=3,price=1/2/10",
                     "--model-allocator", "ucb", "--model-reward", "improvement_per_flop",
                     "--out", str(tmp_path / "o")])
    out = capsys.readouterr().out
    assert code == 0
    s = json.loads(out.strip().splitlines()[-1])
    assert s["calls_completed"] == 8 and s["model"] == "small"
    assert s["model_allocator"] == "ucb" and s["model_reward"] == "improvement_per_flop"
    per = {m["model"]: m for m in s["models"]}
    assert sum(m["calls"] for m in per.values()) == 8
    assert per["small"]["cost_usd"] is None  # unpriced: no dollars invented
    if per["big"]["calls"]:
        assert per["big"]["cost_usd"] > 0 and s["cost_usd"] == pytest.approx(
            per["big"]["cost_usd"])
    assert "models chosen by" in out and "ucb (reward improvement_per_flop)" in out


@pytest.mark.parametrize("models,words", [
    (("nosuchmodel,base_url=URL",), "unknown model"),
    (("small,base_url=URL,params=1e9", "big,base_url=URL,params=-8e9"), "params must be > 0"),
    (("small,base_url=URL,params=1e9", "small,base_url=URL,params=1e9"), "given twice"),
    (("small,base_url=URL,params=1e9,price=-1/2", "big,base_url=URL,params=8e9"),
     "must be a finite number >= 0"),
    (("small,base_url=URL,params=1e9,price=1/-2", "big,base_url=URL,params=8e9"), "price"),
    (("small,base_url=URL,params=1e9,weight=0", "big,base_url=URL,params=8e9,weight=0"),
     "must sum to a positive value"),
    (("small,base_url=URL,params=1e9,weight=-1", "big,base_url=URL,params=8e9"),
     "weight must be >= 0"),
    (("small,base_url=URL,params=1e9,role=lunch", "big,base_url=URL,params=8e9"),
     "unknown role"),
    (("small,base_url=URL,params=1e9,colour=red", "big,base_url=URL,params=8e9"),
     "unknown key"),
])
def test_bad_models_are_one_line_exit_2_store_untouched(store, capsys, models, words):
    assert words in _bad(store, capsys, *models)


def test_an_unreachable_second_endpoint_is_refused_before_anything_is_stored(store, capsys):
    dead = f"http://127.0.0.1:{_free_port()}/v1"
    err = _bad(store, capsys, "small,base_url=URL,params=1e9",
               f"big,base_url={dead},params=8e9")
    assert "cannot reach" in err and "--model big" in err


def test_budget_usd_needs_every_model_priced(store, capsys):
    err = _bad(store, capsys, "small,base_url=URL,params=1e9,price=1/2",
               "big,base_url=URL,params=8e9", extra=("--budget-usd", "1"))
    assert "--budget-usd needs a price" in err and "'big'" in err


def test_model_allocator_needs_several_models(store, capsys):
    err = _bad(store, capsys, "small,base_url=URL,params=1e9",
               extra=("--model-allocator", "ucb"))
    assert "at least twice" in err
