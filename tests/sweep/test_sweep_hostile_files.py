"""Hostile sweep files are refused with one line, exit 2, store untouched (issue 22, item 8).

A TOML nested 100,000 deep made ``basevolve sweep`` die with a RecursionError
traceback; a dotted key of 100,000 parts grew the TOML parser past 20 GB.  Each case
runs the real CLI in a subprocess under an address-space limit, so a regression fails
(killed or MemoryError) instead of eating the machine.
"""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from basevolve.errors import ConfigError
from basevolve.sweep.checks import MAX_NESTING, longest_dotted_key, parse_toml

N = 100_000
HEAD = '[sweep]\nname = "x"\n'
GRID = '[[grid]]\ntask = "circle_packing"\nbudget = 2\n'
HOSTILE = {
    "arrays": HEAD + "a = " + "[" * N + "]" * N + "\n" + GRID,
    "inline_tables": HEAD + "a = " + "{b = " * N + "1" + "}" * N + "\n" + GRID,
    "dotted_key": HEAD + "x." + ".".join(["a"] * N) + " = 1\n" + GRID,
    "dotted_header": HEAD + GRID + "[" + ".".join(["a"] * N) + "]\nx = 1\n",
    "dotted_in_inline_table": HEAD + "p = {" + ".".join(["a"] * N) + " = 1}\n" + GRID,
    "just_too_deep": HEAD + GRID + "protocol_params = {a = " + "[" * MAX_NESTING + "]"
                     * MAX_NESTING + "}\n",
}
LIMIT_BYTES = 3 << 30  # far above what refusing needs, far below the 20 GB seen


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


# every kind with --status (the read-only path); two of them through a real sweep command
CASES = [(kind, True) for kind in sorted(HOSTILE)] + [("arrays", False), ("dotted_key", False)]


@pytest.mark.parametrize(("kind", "status"), CASES)
def test_nested_sweep_file_is_one_line_exit_2(tmp_path: Path, kind: str, status: bool) -> None:
    config = tmp_path / "sweep.toml"
    config.write_text(HOSTILE[kind], encoding="utf-8")
    store = tmp_path / "s.sqlite"
    store.write_bytes(b"")  # an empty file is a new store: it must stay empty
    args = [sys.executable, "-m", "basevolve", "sweep", str(config), "--store", str(store)]
    proc = subprocess.run([*args, *(["--status"] if status else [])], capture_output=True,
                          text=True, preexec_fn=_limit_memory, cwd=tmp_path)
    err = proc.stderr.strip()
    assert proc.returncode == 2, err[-2000:]
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err[-2000:]
    assert "levels deep" in err and str(config) in err
    assert store.read_bytes() == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.sqlite", "sweep.toml"]


def test_ordinary_files_are_not_mistaken_for_deep_ones() -> None:
    from basevolve.sweep.presets import PRESETS, preset_text

    text = ('a.b.c = 1\nx = 1.5e3\nd = 1979-05-27T07:32:00.999\nu = "http://1.2.3.4/v1"\n'
            "s = 'a.b.c.d.e.f'\nm = \"\"\"x.y.z\n.a.b.c.d\"\"\"\n# a.b.c.d.e.f.g\n[t.u]\n")
    assert longest_dotted_key(text) == 2
    for name in PRESETS:
        assert longest_dotted_key(preset_text(name)) <= 2
    deep_ok = "a = " + "[" * (MAX_NESTING - 1) + "]" * (MAX_NESTING - 1) + "\n"
    assert parse_toml(deep_ok, "t.toml")["a"] is not None
    with pytest.raises(ConfigError, match="levels deep"):
        parse_toml("a = " + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1), "t.toml")
    dotted = "." .join(["k"] * (MAX_NESTING + 2)) + " = 1\n"
    with pytest.raises(ConfigError, match="levels deep"):
        parse_toml(dotted, "t.toml")
