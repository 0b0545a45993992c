"""Run ids of a sweep whose task file is given by a relative path (issue 27, item 2).

Why: a sweep resumes its runs by id.  The id hashes the task path *as written*; the
run itself gets the absolute path (so a resume loads the same file from any folder).
Were the path made absolute before hashing, rerunning the sweep from another folder
(or after moving the sweep folder) would rename every run and start them all over.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from basevolve.sweep.config import load_sweep

EXAMPLE_TASK = Path(__file__).resolve().parents[2] / "examples" / "spread_points.py"

SWEEP = """\
[sweep]
name = "rel"

[[grid]]
task = "mytask.py"
model = "test-model"
base_url = "http://127.0.0.1:9/v1"
params = 1e9
budget = [2, 4]
depth = "powers-of-2"
seeds = 2
"""


def _folder(root: Path) -> Path:
    root.mkdir()
    shutil.copy(EXAMPLE_TASK, root / "mytask.py")
    (root / "sweep.toml").write_text(SWEEP, encoding="utf-8")
    return root


def test_ids_do_not_depend_on_the_working_directory(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _folder(tmp_path / "first"), _folder(tmp_path / "second")
    monkeypatch.chdir(a)
    here = load_sweep("sweep.toml")
    monkeypatch.chdir(b)
    there = load_sweep("sweep.toml")
    moved = load_sweep(a / "sweep.toml")  # the first file, read from the other folder
    ids = [r.run_id for r in here.runs]
    assert len(ids) == len(set(ids)) == 2 * (2 + 3)  # C=2: T 1,2; C=4: T 1,2,4; x 2 seeds
    assert [r.run_id for r in there.runs] == ids, "run ids changed with the working directory"
    assert [r.run_id for r in moved.runs] == ids
    assert all(i.startswith("mytask.py-test-model-greedy-") for i in ids)
    # each run still runs the file of the folder it was read in, by absolute path
    assert {r.config.task for r in here.runs} == {str((a / "mytask.py").resolve())}
    assert {r.config.task for r in there.runs} == {str((b / "mytask.py").resolve())}
