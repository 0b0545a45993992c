"""Model catalog and name resolution (issue 3, part 5)."""

from __future__ import annotations

import pytest

from basevolve.errors import ConfigError
from basevolve.llm.catalog import MODELS, parse_params, resolve_model


def test_catalog_holds_the_paper_models_and_the_embedded_ones() -> None:
    for name in ("qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen3-14b", "llama-3.1-8b"):
        spec = MODELS.get(name)
        # the paper's models are dense: active == total
        assert spec.active_params == spec.total_params > 1e9
        assert spec.backend == "openai"
    assert MODELS.get("embedded").backend == "embedded"
    assert MODELS.get("embedded-small").active_params < MODELS.get("embedded").active_params


def test_resolve_by_name_case_insensitively_or_by_served_id() -> None:
    assert resolve_model("Qwen3-8B").name == "qwen3-8b"
    assert resolve_model("meta-llama/Llama-3.1-8B-Instruct").name == "llama-3.1-8b"


def test_params_override_and_unknown_models() -> None:
    assert resolve_model("qwen3-8b", params=7e9).active_params == 7e9
    spec = resolve_model("my-org/Custom-3B", params=3e9)
    assert (spec.served_id, spec.active_params) == ("my-org/Custom-3B", 3e9)
    with pytest.raises(ConfigError, match=r"unknown model 'my-org/Custom-3B'.*--params"):
        resolve_model("my-org/Custom-3B")
    with pytest.raises(ConfigError, match="positive"):
        resolve_model("x", params=-1)


def test_parse_params_accepts_suffixes() -> None:
    assert parse_params("8B") == 8e9
    assert parse_params("700m") == 7e8
    assert parse_params("1.5e9") == 1.5e9
    with pytest.raises(ConfigError, match="'eight'"):
        parse_params("eight")
