"""The bounded parsers for outside text (issue 32, item 4): every failure is RefusedText.

Hand-made hostile inputs for each format; each must end in :class:`RefusedText` (one
phrase, a ``kind``) quickly, never ``RecursionError``, ``MemoryError`` or a hang.
"""

from __future__ import annotations

import json
import time

import pytest

from basevolve import outside_parse
from basevolve.outside_parse import (
    MAX_DEPTH,
    MAX_YAML_VALUES,
    RefusedText,
    load_json,
    load_toml,
    load_yaml,
    parse_python,
)


def _refused(fn, text, kind: str) -> str:
    t0 = time.monotonic()
    with pytest.raises(RefusedText) as info:
        fn(text)
    assert info.value.kind == kind, str(info.value)
    assert time.monotonic() - t0 < 60  # bounded (seconds even on a loaded 2-core box)
    assert "\n" not in str(info.value)
    return str(info.value)


def _bomb(levels: int) -> str:
    lines = ["l0: &l0 [" + ", ".join(["x"] * 10) + "]"]
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines)


def test_yaml_within_the_bounds_loads_as_safe_load_does() -> None:
    text = "a: &d {k: [1, 2]}\nb:\n  <<: *d\n  z: 2\nc: [*d, *d]\n"
    assert load_yaml(text) == {"a": {"k": [1, 2]}, "b": {"k": [1, 2], "z": 2},
                               "c": [{"k": [1, 2]}] * 2}
    assert load_yaml("") is None and load_yaml("x: 1") == {"x": 1}
    assert load_yaml(_bomb(4)) is not None  # 10**4 values: a big document, not a bomb
    deep = "x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert load_yaml(deep) is not None


def test_yaml_bombs_and_deep_nesting_are_refused() -> None:
    assert f"expands to more than {MAX_YAML_VALUES:,} values" in _refused(
        load_yaml, _bomb(9), "size")
    _refused(load_yaml, "x: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "depth")
    _refused(load_yaml, "x: " + "[" * 100_000 + "]" * 100_000, "depth")
    block = "x:\n" + "".join("  " * i + "-\n" for i in range(5000))  # block style too
    _refused(load_yaml, block, "depth")
    # an alias to a deep value counts its depth where it is used
    half = "[" * 40 + "]" * 40
    _refused(load_yaml, f"a: &a {half}\nb: " + "[" * 40 + "*a" + "]" * 40, "depth")
    assert "is not valid YAML at line 2" in _refused(load_yaml, "a: [1,\n", "syntax")


def test_toml_and_json_are_bounded() -> None:
    assert load_toml("a = [1, [2]]\n[t]\nb = 'c'\n") == {"a": [1, [2]], "t": {"b": "c"}}
    _refused(load_toml, "a = " + "[" * 100_000 + "]" * 100_000, "depth")
    assert "is not valid TOML" in _refused(load_toml, "a = ", "syntax")
    assert load_json('{"a": [1, 2]}') == {"a": [1, 2]}
    _refused(load_json, "[" * 100_000 + "]" * 100_000, "depth")
    assert "at line 1, column 2" in _refused(load_json, "{bad", "syntax")
    _refused(load_json, b"\xff", "syntax")


def test_python_source_is_bounded() -> None:
    assert parse_python("def f():\n    return 1\n").body[0].name == "f"
    assert "syntax error at line 1" in _refused(parse_python, "def (:\n", "syntax")
    _refused(parse_python, "x = " + "+".join(["1"] * 300_000), "depth")
    _refused(parse_python, "x = 1\0", "syntax")


@pytest.mark.parametrize("fn,target", [(load_json, "json.loads"), (load_toml, "tomllib.loads"),
                                       (parse_python, "ast.parse")])
def test_running_out_of_memory_is_refused_too(monkeypatch, fn, target) -> None:
    module, name = target.split(".")

    def exhausted(*_a, **_k):
        raise MemoryError

    monkeypatch.setattr(getattr(outside_parse, module), name, exhausted)
    assert "too large to read" in _refused(fn, "1", "size")
    monkeypatch.undo()
    assert json.loads("1") == 1
