"""Issue 12, item 4: a user scorer that raises gives one line naming the task file, the
function and the exception, with the traceback in a log file; during a run such a child
scores 0 ("scorer error"), and three in a row stop the run cleanly, resumable."""

from __future__ import annotations

import json
import sqlite3
import textwrap

from basevolve.cli import main
from basevolve.testing import LLMTestServer

TASK = textwrap.dedent('''
    from basevolve.tasks.base import ScoreResult, Task


    def inverse(value):
        return 1.0 / value


    class Inverse(Task):
        name = "inverse"
        entry = "solve"
        timeout_s = 10.0
        initial_program = property(lambda self: "def solve():\\n    return 2.0\\n")
        system_message = property(lambda self: "Return a number.")

        def score_value(self, value, *, tol=1e-6):
            return ScoreResult(inverse(float(value)), True, {})
''')


def reply(value: float) -> str:
    return f"Here.\n```python\ndef solve():\n    return {value}\n```\n"


def test_evaluate_one_line_and_log(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where evaluate writes its log
    task = tmp_path / "inverse_task.py"
    task.write_text(TASK)
    prog = tmp_path / "zero.py"
    prog.write_text("def solve():\n    return 0.0\n")
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)  # re-read TMPDIR
    code = main(["evaluate", "--task", str(task), str(prog)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert str(task) in err and "inverse (line" in err and "ZeroDivisionError" in err
    log = err.split("traceback in ")[1].rstrip(")")
    assert log.startswith(str(tmp_path)) and "Traceback (most recent call last)" in open(log).read()


def _run(tmp_path, srv, *extra):
    return main(["run", "--task", str(tmp_path / "inverse_task.py"), "--budget", "6",
                 "--max-in-flight", "1", "--model", "qwen3-1.7b", "--base-url", srv.base_url,
                 "--store", str(tmp_path / "s.sqlite"), "--run-id", "r", "--json",
                 "--out", str(tmp_path / "o"), *extra])


def test_run_scores_scorer_errors_zero_and_continues(tmp_path, capsys):
    (tmp_path / "inverse_task.py").write_text(TASK)
    with LLMTestServer(replies=[reply(0.0), reply(0.25)]) as srv:
        assert _run(tmp_path, srv) == 0
    out, err = capsys.readouterr()
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 6 and summary["best_score"] == 4.0
    con = sqlite3.connect(tmp_path / "s.sqlite")
    errors = [e for (e,) in con.execute("SELECT error FROM programs WHERE is_initial=0 "
                                        "ORDER BY seq")]
    con.close()
    assert [e is not None and e.startswith("scorer error: ") for e in errors] == [True, False] * 3
    assert "ZeroDivisionError" in errors[0] and "scorer error" in err
    assert (tmp_path / "s.sqlite.scorer-errors.log").read_text().count("ZeroDivisionError") >= 3


def test_three_scorer_errors_in_a_row_stop_the_run_resumable(tmp_path, capsys):
    task = tmp_path / "inverse_task.py"
    task.write_text(TASK)
    with LLMTestServer(replies=[reply(0.0)]) as srv:
        code = _run(tmp_path, srv)
        err = capsys.readouterr().err
        assert code == 2 and "3 scorer errors in a row" in err and "Traceback" not in err
        assert "--resume" in err and len(srv.requests) == 3
        con = sqlite3.connect(tmp_path / "s.sqlite")
        assert con.execute("SELECT status FROM runs").fetchone()[0] == "failed"
        con.close()
        # the author fixes the scorer; the run continues to exactly C calls
        task.write_text(TASK.replace("return 1.0 / value", "return 1.0 / (1.0 + value)"))
        assert main(["run", "--resume", "r", "--store", str(tmp_path / "s.sqlite"),
                     "--allow-task-change", "--json", "--out", str(tmp_path / "o")]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 6 and summary["status"] == "finished"
    assert summary["task_changes"] == 1
