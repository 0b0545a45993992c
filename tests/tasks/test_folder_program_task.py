"""A user task file whose program is a folder (issue 31, item 3): FolderTask, run end to
end against the test server with exactly C calls and the real sandbox, which writes the
folder and imports its main module (tests/data/folder_task)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

from basevolve.cli import main
from basevolve.program_files import unpack
from basevolve.prompts.files_reply import FORMAT_NOTE
from basevolve.tasks import load_task
from basevolve.testing.process import server_process

TASK = Path(__file__).resolve().parents[1] / "data" / "folder_task" / "task.py"


def test_a_user_task_names_a_folder_as_its_program(tmp_path, capsys):
    task = load_task(str(TASK))
    assert task.language == "mixed" and task.system_message.endswith(FORMAT_NOTE)
    assert sorted(unpack(task.initial_program)) == ["main.py", "table.json", "util.py"]
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([
        "# === FILE: util.py ===\n```python\ndef bonus():\n    return 40\n```\n",
        "# === FILE: table.json ===\n```json\n{\"values\": [99, 99]}\n```\n",  # over 100
        "# === FILE: /abs/util.py ===\n```python\ndef bonus():\n    return 60\n```\n"]))
    store = tmp_path / "s.sqlite"
    with server_process("--replies-file", str(replies), latency=0.0) as url:
        code = main(["run", "--task", str(TASK), "--budget", "3", "--depth", "3", "--params",
                     "1e9", "--base-url", url, "--max-in-flight", "1", "--store", str(store),
                     "--run-id", "f", "--out", str(tmp_path / "out"), "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 3 and summary["best_score"] == 0.7  # 10+20+40
    con = sqlite3.connect(store)
    got = con.execute("SELECT score, valid, error FROM programs ORDER BY seq").fetchall()
    counted = con.execute("SELECT count(*) FROM calls WHERE counted = 1").fetchone()[0]
    con.close()
    assert counted == 3
    assert got[0] == (0.31, 1, None) and got[1] == (0.7, 1, None)  # 10+20+1, then +40
    assert got[2][1] == 0 and "bad value 238" in got[2][2]  # table.json changed alone
    assert got[3][1] == 0 and "is absolute" in got[3][2]
    best = Path(summary["best_program"])
    assert (best / "util.py").read_text() == "def bonus():\n    return 40\n"


def test_a_folder_without_its_main_module_is_one_line(tmp_path, capsys):
    shutil.copytree(TASK.parent, tmp_path / "t")
    (tmp_path / "t" / "program" / "main.py").unlink()
    assert main(["tasks", "--show", str(tmp_path / "t" / "task.py")]) == 2
    err = capsys.readouterr().err
    assert "it has no main.py (main_module)" in err and len(err.strip().splitlines()) == 1
