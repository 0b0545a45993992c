"""The speed-sort and symbolic-regression examples' trusted evaluators on good, wrong and
hostile programs (issue 21, part 4), each evaluated in the real sandbox through
``basevolve evaluate --json`` (one sandbox pool per example).

What must hold: correct programs are ranked by what the evaluator measures (CPU seconds
taken outside the program; held-out R^2); every wrong, non-numeric, non-finite,
wrong-shape or raising answer scores 0 with a reason; a program that patches the clocks
cannot make itself look faster, and one that tries to read the evaluator's data from
disk cannot.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from basevolve.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
HEAD = "import numpy as np\n\n\n# EVOLVE-BLOCK-START\n"
TAIL = "# EVOLVE-BLOCK-END\n"
INSERTION = """\
def sort_values(values):
    out = [float(v) for v in values]
    for i in range(1, len(out)):
        x = out[i]
        j = i - 1
        while j >= 0 and out[j] > x:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = x
    return out
"""

SORTS = {
    "numpy": "def sort_values(values):\n    return np.sort(values)\n",
    "insertion": INSERTION,
    # every clock the program can reach claims that no time passes
    "patched_clocks": ("import os, resource, time\n"
                       "for name in ('perf_counter', 'process_time', 'monotonic', 'time',\n"
                       "             'thread_time'):\n"
                       "    setattr(time, name, lambda: 0.0)\n"
                       "resource.getrusage = lambda who: None\n"
                       "os.times = lambda: os.times_result((0.0, 0.0, 0.0, 0.0, 0.0))\n"
                       + INSERTION),
    "unsorted": "def sort_values(values):\n    return values\n",
    "text": "def sort_values(values):\n    return 'sorted, trust me'\n",
    "raises": "def sort_values(values):\n    raise RuntimeError('no sorting today')\n",
    "nan": "def sort_values(values):\n    return np.full(len(values), np.nan)\n",
    # a list whose == says yes to everything: only plain numbers come back, and are checked
    "liar": ("class Liar(list):\n    def __eq__(self, other):\n        return True\n\n\n"
             "def sort_values(values):\n    return Liar([0.0] * len(values))\n"),
}

PREDICTORS = {
    "exact": ("def predict(X):\n    x0, x1 = X[:, 0], X[:, 1]\n"
              "    return 1.5 * np.sin(x0) + 0.5 * x1**2 - 0.8 * x0 * x1\n"),
    "linear": "def predict(X):\n    return 0.5 * X[:, 0] + 1.5\n",
    "nan": "def predict(X):\n    return np.log(X[:, 0])\n",
    "matrix": "def predict(X):\n    return X\n",
    "column": "def predict(X):\n    return X[:, :1]\n",
    "short": "def predict(X):\n    return X[:-1, 0]\n",
    "text": "def predict(X):\n    return ['1.0'] * len(X)\n",
    "raises": "def predict(X):\n    raise ValueError('no model')\n",
    # reads the task file to regenerate the held-out targets: R^2 = 1 if it could
    "snoop": (f"SOURCE = None\ntry:\n    SOURCE = open({str(EXAMPLES / 'symbolic_regression.py')!r})"
              ".read()\nexcept OSError:\n    pass\n\n\n"
              "def predict(X):\n    if SOURCE is None:\n        return np.zeros(len(X))\n"
              "    ns = {}\n    exec(SOURCE, ns)\n    return ns['data']()[3]\n"),
}


def evaluate(tmp_path: Path, capsys, example: str, programs: dict[str, str]) -> dict[str, dict]:
    files = []
    for name, block in programs.items():
        path = tmp_path / f"{name}.py"
        path.write_text(HEAD + block + TAIL)
        files.append(str(path))
    assert main(["evaluate", "--task", str(EXAMPLES / f"{example}.py"), *files, "--json"]) == 0
    return {Path(d["program"]).stem: d for d in json.loads(capsys.readouterr().out)}


def test_speed_sort_ranks_by_measured_cpu_and_zeroes_wrong_answers(tmp_path, capsys):
    got = evaluate(tmp_path, capsys, "speed_sort", SORTS)
    fast, slow, patched = got["numpy"], got["insertion"], got["patched_clocks"]
    for r in (fast, slow, patched):
        assert r["valid"] and r["trust"] == "trusted-evaluator"
        cpu = r["metrics"]["timed_cpu_seconds"]
        assert r["score"] == pytest.approx(0.005 / (0.005 + cpu))  # T0 / (T0 + T)
    assert fast["score"] > slow["score"]
    # the patched clocks change nothing the evaluator measures: still an insertion sort
    assert patched["metrics"]["timed_cpu_seconds"] > 3 * fast["metrics"]["timed_cpu_seconds"]
    assert patched["score"] < fast["score"]
    reasons = {"unsorted": "wrong order", "text": "must return", "raises": "no sorting today",
               "nan": "wrong order", "liar": "wrong order"}
    for name, reason in reasons.items():
        r = got[name]
        assert r["score"] == 0.0 and not r["valid"] and reason in r["error"], (name, r)
    assert "input" in got["unsorted"]["artifacts"]["failing case"]


def test_symbolic_regression_scores_held_out_r2_and_zeroes_bad_predictions(tmp_path, capsys):
    got = evaluate(tmp_path, capsys, "symbolic_regression", PREDICTORS)
    assert got["exact"]["score"] > 0.99 and got["exact"]["valid"]
    assert 0 < got["linear"]["score"] < 0.2
    assert "largest training errors" in got["linear"]["artifacts"]
    assert got["snoop"]["score"] == 0.0  # the task file is not readable in the sandbox
    reasons = {"nan": "not finite", "matrix": "shape (200, 2)", "column": "shape (200, 1)",
               "short": "shape (199,)", "text": "must return numbers", "raises": "no model"}
    for name, reason in reasons.items():
        r = got[name]
        assert r["score"] == 0.0 and not r["valid"] and reason in r["error"], (name, r)
    assert "predicted nan" in got["nan"]["artifacts"]["failing case"]
