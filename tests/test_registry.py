from __future__ import annotations

import pytest

from basevolve.errors import BasevolveError, ConfigError
from basevolve.registry import Registry


def test_register_get_names() -> None:
    reg: Registry[int] = Registry("thing")
    reg.register("b", 2)
    reg.register("a", 1)
    assert reg.get("a") == 1
    assert reg.names() == ["a", "b"]
    assert "a" in reg and "z" not in reg
    assert len(reg) == 2


def test_duplicate_and_unknown_names_are_clear_errors() -> None:
    reg: Registry[int] = Registry("allocator")
    reg.register("ucb", 1)
    with pytest.raises(ConfigError, match="already registered"):
        reg.register("ucb", 2)
    with pytest.raises(ConfigError, match=r"unknown allocator 'ucbb'; known: ucb"):
        reg.get("ucbb")
    with pytest.raises(ValueError):  # ConfigError is also a ValueError
        reg.get("nope")


def test_error_tree() -> None:
    assert issubclass(ConfigError, BasevolveError)
    assert ConfigError.exit_code == 2
