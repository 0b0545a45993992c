"""OpenEvolve task directories evaluated in the real sandbox (issue 21, part 2).

Every test runs the directory's evaluator.py inside a real sandbox session next to the
program (:class:`basevolve.engine.openevolve_eval.OpenEvolveEvaluator`) and checks what
the trusted side made of it: OpenEvolve's fitness rule, the cascade and its thresholds,
timeouts, artifacts and the trust level ``evaluator-in-sandbox``.  Expected scores are
worked out by hand, or by running the example's own evaluator in this process on a
program we wrote (never on an LLM's).
"""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import sys
import time
import uuid
from pathlib import Path

import pytest

from basevolve.engine.evaluators import evaluator_for
from basevolve.engine.openevolve_eval import OpenEvolveEvaluator
from basevolve.records import Isolation, Trust
from basevolve.tasks import load_task
from basevolve.tasks.openevolve_harness import ensure_openevolve

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openevolve_dir"
LAZY = "def search(f, lo, hi):\n    print('search called')\n    return lo\n"
LOADER = ("import importlib.util\n\n\ndef load(path):\n"
          "    spec = importlib.util.spec_from_file_location('program', path)\n"
          "    module = importlib.util.module_from_spec(spec)\n"
          "    spec.loader.exec_module(module)\n    return module\n\n\n")


def make_dir(root: Path, evaluator: str, config: str = "", initial: str = LAZY) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "evaluator.py").write_text(evaluator)
    (root / "initial_program.py").write_text(initial)
    if config:
        (root / "config.yaml").write_text(config)
    return root


def example_copy(tmp_path: Path, config_edit: tuple[str, str] | None = None) -> Path:
    copy = tmp_path / "example"
    shutil.copytree(EXAMPLE, copy)
    if config_edit:
        config = copy / "config.yaml"
        text = config.read_text()
        assert config_edit[0] in text
        config.write_text(text.replace(*config_edit))
    return copy


def evaluate(pool, directory: Path, code: str, timeout_s: float | None = None):
    task = load_task(str(directory))
    evaluator = evaluator_for(task, pool, scorer_log=directory.parent / "scorer.log")
    assert isinstance(evaluator, OpenEvolveEvaluator)
    return evaluator.evaluate_sync(code, timeout_s)


def in_process(stage: str, code: str, tmp_path: Path):
    """The example's own evaluator, run here on a program of ours (the expected value)."""
    ensure_openevolve()  # the stand-in, as in the sandbox when OpenEvolve is absent
    spec = importlib.util.spec_from_file_location("example_evaluator", EXAMPLE / "evaluator.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    program = tmp_path / f"expected_{uuid.uuid4().hex}.py"
    program.write_text(code)
    return getattr(module, stage)(str(program))


def test_example_cascade_scores_as_its_evaluator_says(pool, tmp_path):
    task = load_task(str(EXAMPLE))
    ev = evaluate(pool, EXAMPLE, task.initial_program)
    stage1 = in_process("evaluate_stage1", task.initial_program, tmp_path)
    stage2 = in_process("evaluate_stage2", task.initial_program, tmp_path)
    assert stage1.metrics["stage1_score"] >= 0.2  # passes cascade_thresholds[0]
    # fitness = stage 2's combined_score; metrics = stage 1's and stage 2's, merged
    assert ev.valid and ev.score == stage2.metrics["combined_score"]
    assert ev.metrics == {"stage1_score": stage1.metrics["stage1_score"],
                          **{k: float(v) for k, v in stage2.metrics.items()}}
    assert ev.artifacts["stage1"] == stage1.artifacts["stage1"]
    assert ev.artifacts["stage2"] == stage2.artifacts["stage2"]
    assert "stage 1 passed threshold 0.2" in ev.artifacts["basevolve.cascade"]
    assert ev.trust is Trust.IN_SANDBOX and ev.error is None
    assert ev.stdout == ""


def test_failing_stage_1_never_reaches_stage_2(pool, tmp_path):
    ev = evaluate(pool, EXAMPLE, LAZY)
    expected = in_process("evaluate_stage1", LAZY, tmp_path).metrics["stage1_score"]
    assert expected < 0.2
    assert ev.valid and ev.score == expected and ev.metrics == {"stage1_score": expected}
    assert "stage2" not in ev.artifacts and "combined_score" not in ev.metrics
    # search() printed once per call: one call of stage 1, none of stage 2 (5 calls)
    assert ev.stdout.count("search called") == 1
    assert "stage 2 not run" in ev.artifacts["basevolve.cascade"]


def test_fitness_is_the_mean_of_numeric_metrics_without_combined_score(pool, tmp_path):
    directory = make_dir(tmp_path / "mean", LOADER + (
        "def evaluate(program_path):\n"
        "    value = load(program_path).value()\n"
        "    return {'a': value, 'b': 1.0, 'flag': True, 'note': 'text', 'nan': float('nan'),"
        " 'complexity': 10}\n"),
        initial="def value():\n    return 0.5\n")
    ev = evaluate(pool, directory, "def value():\n    return 0.5\n")
    # as OpenEvolve 0.4.0 (issue 31, item 7): booleans, text, NaN and the feature
    # dimensions (default complexity, diversity) are left out of the mean
    assert ev.valid and ev.score == pytest.approx((0.5 + 1.0) / 2)
    assert ev.metrics == {"a": 0.5, "b": 1.0, "flag": 1.0, "complexity": 10.0}
    assert ev.artifacts == {"metric.note": "text", "metric.nan": "nan"}


def test_combined_score_wins_and_openevolve_import_works(pool, tmp_path):
    directory = make_dir(tmp_path / "combined", LOADER + (
        "from openevolve import EvaluationResult\n\n\n"
        "def evaluate(program_path):\n"
        "    value = load(program_path).value()\n"
        "    return EvaluationResult(metrics={'combined_score': value, 'other': 9.0},\n"
        "                            artifacts={'notes': 'fine', 'raw': b'\\xff\\x00',\n"
        "                                       'utf8': 'é'.encode()})\n"),
        config="evaluator:\n  timeout: 30\n")
    ev = evaluate(pool, directory, "def value():\n    return 0.25\n")
    assert ev.valid and ev.score == 0.25 and ev.metrics == {"combined_score": 0.25, "other": 9.0}
    assert ev.artifacts == {"notes": "fine", "raw": "<2 bytes of binary data>", "utf8": "é"}


def test_an_async_evaluate_is_awaited(pool, tmp_path):
    """OpenEvolve's r_robust_regression example defines ``async def evaluate``; OpenEvolve
    0.4.0 scores its coroutine as an error, basevolve runs it to its metrics (issue 31)."""
    directory = make_dir(tmp_path / "async", LOADER + (
        "import asyncio\n\n\n"
        "async def evaluate(program_path):\n"
        "    await asyncio.sleep(0)\n"
        "    return {'combined_score': load(program_path).value()}\n"))
    ev = evaluate(pool, directory, "def value():\n    return 0.75\n")
    assert ev.valid and ev.score == 0.75 and ev.error is None


def test_evaluate_that_raises_scores_zero_with_the_reason(pool, tmp_path):
    directory = make_dir(tmp_path / "raises", LOADER + (
        "def evaluate(program_path):\n    load(program_path)\n    return {'x': 1.0}\n"))
    ev = evaluate(pool, directory, "raise ValueError('broken program')\n")
    assert not ev.valid and ev.score == 0.0
    assert "ValueError: broken program" in ev.error and ev.error.startswith("error:")
    assert ev.artifacts["failure_stage"] == "evaluation"
    assert "broken program" in ev.artifacts["traceback"]
    other = evaluate(pool, directory.parent / "raises", "x = 1\n")
    assert other.valid and other.score == 1.0


def test_timeout_scores_zero_with_the_reason(pool, tmp_path):
    directory = example_copy(tmp_path, ("  timeout: 20", "  timeout: 1"))
    sleepy = "import time\n\n\ndef search(f, lo, hi):\n    time.sleep(60)\n    return lo\n"
    t0 = time.monotonic()
    ev = evaluate(pool, directory, sleepy)
    assert time.monotonic() - t0 < 50  # killed at the limit, not after the sleep
    assert not ev.valid and ev.score == 0.0 and ev.error.startswith("timeout:")
    assert "evaluate_stage1 exceeded evaluator.timeout (1 s)" in ev.error
    assert ev.artifacts["failure_stage"] == "stage1" and ev.artifacts["timeout"] == "True"
    assert ev.trust is Trust.IN_SANDBOX


STAGED = LOADER + (
    "def evaluate_stage1(program_path):\n    return {'s1': 1.0}\n\n\n"
    "def evaluate_stage2(program_path):\n"
    "    return {'s2': load(program_path).stage2(), 'error': 0.0}\n\n\n"
    "def evaluate_stage3(program_path):\n    return {'combined_score': 0.9}\n\n\n"
    "def evaluate(program_path):\n    return {}\n")


def test_three_stages_merge_and_a_failing_stage_keeps_earlier_metrics(pool, tmp_path):
    directory = make_dir(tmp_path / "staged", STAGED,
                         config="evaluator:\n  timeout: 2\n  cascade_thresholds: [0.5, 0.5]\n")
    ev = evaluate(pool, directory, "def stage2():\n    return 1.0\n")
    # stage 2's numeric 'error' is dropped by the merge; stage 3's combined_score decides
    assert ev.valid and ev.score == 0.9
    assert ev.metrics == {"s1": 1.0, "s2": 1.0, "combined_score": 0.9}
    assert ev.artifacts["basevolve.cascade"].endswith("all stages run")

    raises = evaluate(pool, directory, "def stage2():\n    raise ValueError('no stage 2')\n")
    assert raises.valid and raises.metrics == {"s1": 1.0, "stage2_passed": 0.0}
    assert raises.score == 0.5 and raises.artifacts["failure_stage"] == "stage2"
    assert "ValueError: no stage 2" in raises.artifacts["stage2_stderr"]

    sleeps = evaluate(pool, directory, "import time\n\n\ndef stage2():\n    time.sleep(60)\n")
    assert sleeps.valid and sleeps.metrics == {"s1": 1.0, "stage2_passed": 0.0}
    assert sleeps.artifacts["stage2_timeout"] == "True"

    direct = make_dir(tmp_path / "direct", STAGED,
                      config="evaluator:\n  cascade_evaluation: false\n")
    flat = evaluate(pool, direct, "def stage2():\n    return 1.0\n")
    assert flat.valid and flat.score == 0.0 and flat.metrics == {}  # evaluate() alone


def test_an_evaluator_that_does_not_import_is_a_scorer_error(pool, tmp_path):
    directory = make_dir(tmp_path / "noimport", "import no_such_module_here\n\n\n"
                         "def evaluate(program_path):\n    return {}\n")
    ev = evaluate(pool, directory, LAZY)
    assert not ev.valid and ev.score == 0.0 and ev.error.startswith("scorer error:")
    assert "evaluator.py could not be loaded in the sandbox (error): ModuleNotFoundError: " \
           "No module named 'no_such_module_here'" in ev.error
    assert "task 'noimport'" in ev.error and len(ev.error.splitlines()) == 1
    log = (directory.parent / "scorer.log").read_text()
    assert str(directory) in log and "Traceback" in log  # the sandbox's traceback, for reading
    assert ev.trust is Trust.IN_SANDBOX


def _tree_digest(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.skipif(shutil.which("bwrap") is None or sys.platform != "linux",
                    reason="needs bubblewrap")
def test_hostile_program_writes_into_the_task_directory(pool, tmp_path):
    directory = example_copy(tmp_path)
    before = _tree_digest(directory)
    marker = f"/tmp/basevolve-openevolve-escape-{uuid.uuid4().hex}"
    hostile = (
        "import os\n\n"
        "for name in ('evaluator.py', 'config.yaml', 'initial_program.py', 'planted.txt'):\n"
        "    with open(name, 'w') as fh:\n"
        "        fh.write('tampered')\n"
        f"for target in ({str(directory / 'evaluator.py')!r}, {str(directory / 'planted.txt')!r},"
        f" {marker!r}):\n"
        "    try:\n"
        "        with open(target, 'w') as fh:\n"
        "            fh.write('escaped')\n"
        "        print('wrote', target)\n"
        "    except OSError as exc:\n"
        "        print('refused', target, type(exc).__name__)\n"
        "print('cwd files', sorted(os.listdir('.')))\n\n\n"
        "def search(f, lo, hi):\n    return lo\n")
    ev = evaluate(pool, directory, hostile)
    if ev.isolation is not Isolation.BWRAP:
        pytest.skip("the pool fell back to rlimits isolation")
    assert _tree_digest(directory) == before  # the real directory is byte-identical
    assert not (directory / "planted.txt").exists() and not Path(marker).exists()
    assert f"refused {directory / 'evaluator.py'}" in ev.stdout  # not even visible
    assert "'planted.txt'" in ev.stdout  # its own copy was writable: that is all it reached
    assert ev.trust is Trust.IN_SANDBOX and ev.valid  # recorded at the stated trust level
