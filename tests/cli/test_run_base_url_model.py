"""Issue 12, item 3: `run --base-url` without `--model` asks the server which model it
serves (and uses the catalog's parameter count) or refuses naming --model/--params;
`--params 7B` is accepted as llm-check accepts it."""

from __future__ import annotations

import json

import pytest

from basevolve.cli import main
from basevolve.testing import LLMTestServer


def _run(tmp_path, srv, *extra):
    return main(["run", "--task", "min_max_distance", "--budget", "2", "--base-url",
                 srv.base_url, "--store", str(tmp_path / "s.sqlite"), "--out",
                 str(tmp_path / "o"), "--json", *extra])


def _summary(capsys) -> dict:
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_served_catalog_model_is_used_with_its_params(tmp_path, capsys):
    with LLMTestServer(model_ids=["Qwen/Qwen3-8B"]) as srv:
        assert _run(tmp_path, srv) == 0
        assert {r["model"] for r in srv.requests} == {"Qwen/Qwen3-8B"}
    s = _summary(capsys)
    assert s["model"] == "Qwen/Qwen3-8B"
    tokens = s["prompt_tokens"] - s["cached_tokens"] + s["completion_tokens"]
    assert s["flops"] == pytest.approx(2 * 8.19e9 * tokens)  # the catalog's qwen3-8b


def test_uncatalogued_served_model_needs_params(tmp_path, capsys):
    with LLMTestServer(model_ids=["my-org/Custom-7B"]) as srv:
        assert _run(tmp_path, srv) == 2
        err = capsys.readouterr().err
        assert "'my-org/Custom-7B'" in err and "--params" in err and "--model" in err
        assert len(err.strip().splitlines()) == 1 and not (tmp_path / "s.sqlite").exists()
        assert srv.requests == []  # no LLM call was spent
        assert _run(tmp_path, srv, "--params", "7B") == 0
    s = _summary(capsys)
    tokens = s["prompt_tokens"] - s["cached_tokens"] + s["completion_tokens"]
    assert s["model"] == "my-org/Custom-7B" and s["flops"] == pytest.approx(2 * 7e9 * tokens)


@pytest.mark.parametrize(("ids", "needle"), [
    ((), "does not list its models"),
    (("a/One", "b/Two"), "serves 2 models (a/One, b/Two); pick one with --model"),
])
def test_no_or_several_served_models_refused(tmp_path, capsys, ids, needle):
    with LLMTestServer(model_ids=ids) as srv:
        assert _run(tmp_path, srv) == 2
    err = capsys.readouterr().err
    assert needle in err and "--model" in err and "Traceback" not in err


def test_params_with_suffix_accepted_and_bad_one_refused(tmp_path, capsys):
    with LLMTestServer() as srv:
        assert _run(tmp_path, srv, "--model", "qwen3-8b", "--params", "7B") == 0
        s = _summary(capsys)
        tokens = s["prompt_tokens"] - s["cached_tokens"] + s["completion_tokens"]
        assert s["flops"] == pytest.approx(2 * 7e9 * tokens)
        with pytest.raises(SystemExit) as info:
            _run(tmp_path, srv, "--model", "qwen3-8b", "--params", "7X")
    assert info.value.code == 2
    assert "--params must be a parameter count such as 8e9 or 8B, got '7X'" in (
        capsys.readouterr().err)
