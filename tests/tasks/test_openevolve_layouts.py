"""Which layout an OpenEvolve task directory is in, and how the harness writes a folder or
a named prompt file (issue 31, items 3 and 4).  No sandbox: the harness is our own code
(importing it runs nothing of a task); what it writes goes under a temporary folder."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from basevolve.errors import TaskError
from basevolve.program_files import pack, unpack
from basevolve.tasks import load_task
from basevolve.tasks.openevolve_harness import write_candidate
from basevolve.tasks.openevolve_layouts import layout

DATA = Path(__file__).resolve().parents[1] / "data" / "openevolve"


def test_layouts_are_told_apart(tmp_path):
    assert layout(DATA / "mixed_folder") == "folder"
    assert layout(DATA / "prompt_file") == "prompt"
    assert layout(Path(__file__).resolve().parents[2] / "examples" / "openevolve_dir") == "classic"
    assert layout(tmp_path) == "none"


def test_the_folder_task_hands_the_sandbox_its_files():
    task = load_task(str(DATA / "mixed_folder"))
    files, name = task.sandbox_program(task.initial_program)
    assert name == "initial_program" and files == unpack(task.initial_program)
    assert "# === FILE: solver.py ===" in task.initial_program


def test_the_harness_writes_a_folder_or_a_named_file(tmp_path):
    folder = write_candidate(str(tmp_path), {"a.py": "x = 1\n", "d/b.json": "{}"}, "prog")
    assert folder == str(tmp_path / "candidate" / "prog")
    assert (tmp_path / "candidate" / "prog" / "d" / "b.json").read_text() == "{}"
    path = write_candidate(str(tmp_path), "Say hi.\n", "initial_prompt.txt")
    assert Path(path).read_text() == "Say hi.\n" and Path(path).name == "initial_prompt.txt"
    assert Path(write_candidate(str(tmp_path), "x = 1\n", None)).name == "program.py"


@pytest.mark.parametrize("files, name", [
    ({"../../escaped.txt": "owned"}, "p1"),
    ({"/tmp/escaped.txt": "owned"}, "p2"),
    ({"a/../../../escaped.txt": "owned"}, "p3"),
    ({"ok.py": "x"}, "../escaped"),
])
def test_the_harness_refuses_names_outside_its_folder(tmp_path, files, name):
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(ValueError, match="refusing"):
        write_candidate(str(work), files, name)
    assert not list(tmp_path.rglob("escaped*"))


def test_prompt_checks(tmp_path):
    directory = tmp_path / "p"
    shutil.copytree(DATA / "prompt_file", directory)
    task = load_task(str(directory))
    assert task.check_artifact("   \n") == "empty prompt"
    assert "prompt too long: 401 characters, the cap is 400" in task.check_artifact("x" * 401)
    assert task.check_artifact("ok {input_text}") is None
    (directory / "initial_prompt.txt").write_text("y" * 500)
    with pytest.raises(TaskError, match=r"initial_prompt\.txt: prompt too long"):
        load_task(str(directory))
    (directory / "config.yaml").write_text("language: text\nmax_code_length: -3\n")
    with pytest.raises(TaskError, match="max_code_length=-3 must be a whole number"):
        load_task(str(directory))


def test_a_folder_with_a_header_line_in_a_file_is_refused(tmp_path):
    directory = tmp_path / "m"
    shutil.copytree(DATA / "mixed_folder", directory)
    (directory / "initial_program" / "x.py").write_text("# === FILE: y.py ===\n")
    with pytest.raises(TaskError, match="reads as a file header"):
        load_task(str(directory))
    assert pack({"z.py": "# === FILE: y.py ===x\n"})  # not a header line: fine
