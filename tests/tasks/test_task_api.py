"""Task API: registry, load_task (names and user files), Task.evaluate, package data."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from basevolve.errors import TaskError
from basevolve.records import ExecResult, ExecStatus, Isolation
from basevolve.tasks import TASKS, get_task, load_task
from conftest import grid_packing

BUILTINS = {
    "circle_packing": "construct_packing",
    "min_max_distance": "min_max_dist_dim2_16",
    "heilbronn_triangle": "heilbronn_triangle11",
}


def test_builtins_registered_with_entries_and_timeouts():
    assert set(BUILTINS) <= set(TASKS.names())
    for name, entry in BUILTINS.items():
        task = load_task(name)
        assert task.name == name and task.entry == entry
        assert task.timeout_s == 60.0
        assert get_task(name).name == name


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_initial_program_has_markers_and_defines_entry(name):
    task = load_task(name)
    code = task.initial_program
    start, end = code.index("# EVOLVE-BLOCK-START"), code.index("# EVOLVE-BLOCK-END")
    assert start < code.index(f"def {task.entry}(") < end
    compile(code, name, "exec")


@pytest.mark.parametrize(
    ("name", "first", "last"),
    [
        (
            "circle_packing",
            "You are an expert mathematician specializing in circle packing problems and",
            "specific position, rather than an iterative search algorithm.",
        ),
        (
            "min_max_distance",
            "You are an expert computational geometer and optimization specialist focusing",
            "of shape (16, 2).",
        ),
        (
            "heilbronn_triangle",
            "You are an expert computational geometer and optimization specialist focusing",
            "- The function MUST be named heilbronn_triangle11() and take no arguments.",
        ),
    ],
)
def test_system_messages_are_the_appendix_text(name, first, last):
    msg = load_task(name).system_message
    lines = msg.split("\n")
    assert lines[0] == first and lines[-1] == last
    assert "\\" not in msg and msg == msg.strip()


def test_evaluate_ok_result_gives_reference_and_strict_scores():
    centers, radii = grid_packing()
    centers[1, 1] -= 5e-7  # overlap within the reference tolerance only
    result = ExecResult(
        ExecStatus.OK,
        value=[centers, radii, 2.0],
        isolation=Isolation.RLIMITS,
        seconds=0.25,
        stdout="hi",
    )
    ev = load_task("circle_packing").evaluate(result)
    assert ev.valid and ev.score == 2.0 / 2.635
    assert not ev.strict_valid and ev.strict_score == 0.0
    assert ev.isolation is Isolation.RLIMITS and ev.seconds == 0.25 and ev.stdout == "hi"
    assert ev.metrics["sum_radii"] == 2.0


@pytest.mark.parametrize("status", [s for s in ExecStatus if s is not ExecStatus.OK])
@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_evaluate_non_ok_results_score_zero_with_reason(name, status):
    result = ExecResult(status, value=np.zeros((16, 2)), error="boom")
    ev = load_task(name).evaluate(result)
    assert ev.score == 0.0 and not ev.valid and ev.strict_score == 0.0
    assert ev.error == f"{status.value}: boom"


def test_unknown_task_name_is_a_clear_error():
    with pytest.raises(TaskError, match="unknown task 'circle_pack'; known: circle_packing"):
        load_task("circle_pack")
    assert TaskError.exit_code == 2  # the CLI reports it as a usage error


USER_TASK = """
from basevolve.tasks.base import ScoreResult, Task

class Sphere(Task):
    name = "sphere"
    entry = "solve"
    description = "minimise x^2"
    timeout_s = 5.0

    @property
    def initial_program(self):
        return "def solve():\\n    return 3.0\\n"

    @property
    def system_message(self):
        return "Minimise x squared."

    def score_value(self, value, *, tol=1e-6):
        if not isinstance(value, (int, float)):
            return ScoreResult(0.0, False, {}, "not a number")
        return ScoreResult(1.0 / (1.0 + value * value), True, {"x": float(value)})
"""


def test_user_task_file_loads(tmp_path):
    path = tmp_path / "my_task.py"
    path.write_text(USER_TASK)
    task = load_task(str(path))
    assert task.name == "sphere" and task.entry == "solve" and task.timeout_s == 5.0
    assert task.score_value(1.0).score == 0.5
    ev = task.evaluate(ExecResult(ExecStatus.OK, value=0.0))
    assert ev.score == 1.0 and ev.strict_score == 1.0
    assert "sphere" not in TASKS  # user tasks never pollute the registry
    assert load_task(path).name == "sphere"  # loading twice is harmless


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("def oops(:\n", "failed to import: SyntaxError"),
        ("raise RuntimeError('nope')\n", "failed to import: RuntimeError: nope"),
        ("x = 1\n", "exactly one concrete subclass"),
        (USER_TASK + USER_TASK.replace("class Sphere", "class Sphere2"), "found Sphere, Sphere2"),
        (USER_TASK.replace('    entry = "solve"\n', ""), "'entry'"),
        (USER_TASK.replace("timeout_s = 5.0", "timeout_s = -1"), "timeout_s must be a positive"),
        (USER_TASK.replace("timeout_s = 5.0", "timeout_s = 1e12"), "timeout_s must be a positive"),
        (
            USER_TASK.replace("timeout_s = 5.0", "timeout_s = float('inf')"),
            "timeout_s must be a positive",
        ),
        (
            USER_TASK.replace("    def score_value", "    def score_valu"),
            "exactly one concrete subclass",
        ),
    ],
)
def test_bad_user_task_files(tmp_path, body, needle):
    path = tmp_path / "bad_task.py"
    path.write_text(textwrap.dedent(body))
    with pytest.raises(TaskError, match=None) as info:
        load_task(str(path))
    assert needle in str(info.value) and "bad_task.py" in str(info.value)


def test_missing_task_file_and_non_python_file(tmp_path):
    with pytest.raises(TaskError, match="does not exist"):
        load_task(str(tmp_path / "nope.py"))
    other = tmp_path / "task.txt"
    other.write_text("x")
    with pytest.raises(TaskError, match="must be a Python file"):
        load_task(str(other))
