"""The CLI imports only what the named command needs (issue 24, item 8).

``basevolve --version`` cost ~1.9 s of CPU because every command module was imported
to build the parser, and two of them pulled in statsmodels, pandas and scipy.  These
tests pin the fix without timing anything: each command line runs in a fresh
interpreter, which reports the heavy libraries it ended up importing.  (The measured
times are in benchmarks/README.md, "CLI start-up".)
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from basevolve.cli import COMMAND_MODULES, COMMANDS, build_parser

HEAVY = ("pandas", "statsmodels", "scipy", "matplotlib", "ray", "pyarrow", "numpy")

PROBE = f"""
import json, sys
HEAVY = {HEAVY!r}
from basevolve.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
heavy = [m for m in HEAVY if m in sys.modules]
print(json.dumps({{"code": code, "heavy": heavy}}), file=sys.stderr)
"""


def _probe(*argv: str) -> tuple[int, list[str], str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                          text=True, timeout=300)
    *shown, last = proc.stderr.strip().splitlines()
    doc = json.loads(last)
    return doc["code"], doc["heavy"], proc.stdout + "\n".join(shown)


@pytest.mark.parametrize("argv", [
    ["--version"],
    ["--help"],
    [],
    ["no-such-command"],
    ["replay", "--help"],
    ["advise", "--help"],
    ["analyze", "--help"],
    ["report", "--help"],
    ["sweep", "--help"],
    ["dashboard", "--help"],
    ["runs", "--help"],
    ["export", "--help"],
    ["models", "--help"],
    ["advise", "--task", "t", "--model", "m", "--budget", "0"],
    ["replay", "--store", "s.db", "--task", "t", "--arms", "2", "--budget", "4",
     "--repeats", "0"],
    ["sweep", "no-such-file.toml"],
])
def test_no_heavy_import(argv: list[str]) -> None:
    code, heavy, out = _probe(*argv)
    assert code in (0, 2), out
    if argv[:1] in ([], ["--version"], ["--help"], ["no-such-command"]):
        assert heavy == [], f"{argv} imported {heavy}"  # no command module at all
    else:  # a command's parser may need its registries (numpy), never the analysis stack
        assert set(heavy) <= {"numpy"}, f"{argv} imported {heavy}"
    if argv == ["--version"]:
        assert out.startswith("basevolve "), out


@pytest.mark.parametrize("argv", [
    ["analyze", "--store", "/nonexistent/store.db"],
    ["report", "--store", "/nonexistent/store.db", "--out", "/nonexistent/rep"],
    ["advise", "--task", "t", "--model", "m", "--budget", "3",
     "--store", "/nonexistent/store.db"],
])
def test_wrong_store_is_one_line_without_statsmodels(argv: list[str]) -> None:
    """Reading tables needs pandas; the fit (statsmodels, scipy) comes after them."""
    code, heavy, out = _probe(*argv)
    assert code == 2
    assert out.strip().count("\n") == 0 and "does not exist" in out, out
    assert "statsmodels" not in heavy and "scipy" not in heavy, heavy


def test_run_error_imports_no_analysis() -> None:
    code, heavy, out = _probe("run", "--task", "no_such_task", "--budget", "3")
    assert code == 2 and "unknown task" in out
    assert not set(heavy) & {"pandas", "statsmodels", "scipy", "matplotlib", "ray"}, heavy


def test_command_table_matches_the_modules() -> None:
    """COMMANDS (the help without imports) says what each module registers."""
    full = build_parser()
    lazy = build_parser(lazy_for=[])
    assert lazy.format_help() == full.format_help()
    sub = next(a for a in full._actions if a.dest == "command")
    registered = {a.dest: a.help for a in sub._choices_actions}
    assert registered == {name: text for name, (_, text) in COMMANDS.items()}
    assert {module for module, _ in COMMANDS.values()} == set(COMMAND_MODULES)
    for name, parser in sub.choices.items():  # each command's own parser, loaded lazily
        alone = build_parser(lazy_for=[name])
        own = next(a for a in alone._actions if a.dest == "command").choices[name]
        assert own.format_help() == parser.format_help(), name


def test_lazy_parser_runs_the_command(capsys) -> None:
    from basevolve.cli import main

    assert main(["models", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)
