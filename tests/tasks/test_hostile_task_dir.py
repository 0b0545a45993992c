"""A downloaded task directory must not hang or crash the host (issue 32, items 2-4).

Before: nine levels of ``&a [*b, *b, ...]`` under ``evaluator.evaluator_args`` in
``config.yaml`` expanded to 10**9 values in the code that walks the parsed YAML and held
``basevolve tasks --show DIR`` / ``basevolve run --task DIR`` at 100% CPU; a 100,000-deep
YAML list and a 300,000-term expression in ``evaluator.py`` or ``initial_program.py``
ended in ``RecursionError``, a traceback and exit 1.  Now each is one line naming the
file and exit 2, nothing sent to the LLM and no store written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import basevolve
from basevolve.cli import main
from basevolve.tasks import load_task
from basevolve.testing import LLMTestServer

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openevolve_dir"
SRC = str(Path(basevolve.__file__).resolve().parents[1])
LONG_SUM = "x = " + "+".join(["1"] * 300_000) + "\n"


def alias_bomb(levels: int = 9) -> str:
    """``evaluator_args`` whose aliases expand to 10**levels values."""
    lines = ["evaluator:", "  evaluator_args:", "    l0: &l0 [" + ", ".join(["x"] * 10) + "]"]
    for i in range(1, levels):
        lines.append(f"    l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def _hostile(tmp_path: Path, file: str, text: str) -> Path:
    directory = tmp_path / "hostile"
    shutil.copytree(EXAMPLE, directory)
    (directory / file).write_text(text)
    return directory


def _one_line(err: str, words: str) -> None:
    assert words in err and "Traceback" not in err, err[-2000:]
    assert len(err.strip().splitlines()) == 1, err[-2000:]


CASES = {
    "yaml alias bomb": ("config.yaml", alias_bomb(), "config.yaml expands to more than"),
    "100,000-deep yaml list": ("config.yaml", "deep: " + "[" * 100_000 + "]" * 100_000 + "\n",
                               "config.yaml is nested deeper than"),
    "long evaluator.py": ("evaluator.py", "def evaluate(program_path):\n    return {}\n"
                          + LONG_SUM, "evaluator.py is nested or chained too deeply"),
    "long initial_program.py": ("initial_program.py",
                                (EXAMPLE / "initial_program.py").read_text() + LONG_SUM,
                                "initial_program.py is nested or chained too deeply"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_tasks_show_is_one_line_exit_2_in_bounded_time(tmp_path, case) -> None:
    """In a child process with a deadline: before the fix the alias bomb never ended."""
    file, text, words = CASES[case]
    directory = _hostile(tmp_path, file, text)
    env = {**os.environ, "PYTHONPATH": SRC}
    done = subprocess.run([sys.executable, "-m", "basevolve", "tasks", "--show",
                           str(directory)], capture_output=True, text=True, env=env,
                          timeout=120)  # the fixed run takes seconds even on a loaded box
    assert done.returncode == 2, done.stderr[-2000:]
    _one_line(done.stderr, words)
    assert done.stdout == ""


@pytest.mark.parametrize("case", list(CASES))
def test_run_refuses_before_anything_is_sent_or_stored(tmp_path, capsys, case) -> None:
    file, text, words = CASES[case]
    if case == "yaml alias bomb":
        text = alias_bomb(6)  # 10**6 values: refused all the same, and quick before too
    directory = _hostile(tmp_path, file, text)
    store = tmp_path / "s.sqlite"
    with LLMTestServer() as srv:
        code = main(["run", "--task", str(directory), "--budget", "2", "--params", "1e9",
                     "--base-url", srv.base_url, "--store", str(store)])
        assert srv.requests == []
    assert code == 2
    _one_line(capsys.readouterr().err, words)
    assert not store.exists()


def test_anchors_and_merge_keys_within_the_bounds_still_load(tmp_path) -> None:
    """The bound is on what aliases expand to, not on aliases themselves."""
    config = (EXAMPLE / "config.yaml").read_text() + (
        "\ndefaults: &defaults {a: 1, b: [1, 2, 3]}\n"
        "extra:\n  <<: *defaults\n  c: 3\nagain: [*defaults, *defaults]\n")
    task = load_task(str(_hostile(tmp_path, "config.yaml", config)))
    assert task.directory.config["extra"] == {"a": 1, "b": [1, 2, 3], "c": 3}
    assert task.directory.config["again"] == [{"a": 1, "b": [1, 2, 3]}] * 2
