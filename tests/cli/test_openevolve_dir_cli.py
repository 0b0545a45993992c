"""OpenEvolve task directories through every entry point (issue 21, part 2).

``basevolve tasks --show DIR``, ``basevolve evaluate --task DIR``, ``basevolve run --task
DIR`` end to end against the test server (a real process serving full-rewrite replies
from ``--replies-file``), the Python API, a sweep with ``task = "DIR"`` and its
analysis, and ``--resume`` pinned to the directory's files.  Real SQLite stores, real
sandbox.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import uuid
from pathlib import Path

import pytest
from run_support import StopAfter, rows

import basevolve
from basevolve.cli import main
from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.tasks.openevolve_harness import ensure_openevolve
from basevolve.testing import LLMTestServer
from basevolve.testing.process import server_process

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "openevolve_dir"
SYSTEM = ("You are an expert in numerical optimisation. Improve search(f, lo, hi) so that it "
          "finds the global minimum of bumpy one-dimensional functions on [lo, hi] while "
          "calling f at most 200 times. Return the complete program.")
BETTER = '''def search(f, lo, hi):
    n = 150
    xs = [lo + (hi - lo) * i / n for i in range(n + 1)]
    ys = [f(x) for x in xs]
    i = min(range(len(xs)), key=ys.__getitem__)
    a, b = xs[max(i - 1, 0)], xs[min(i + 1, n)]
    for _ in range(20):
        m1, m2 = a + (b - a) / 3, b - (b - a) / 3
        if f(m1) < f(m2):
            b = m2
        else:
            a = m1
    return (a + b) / 2
'''
LAZY = "def search(f, lo, hi):\n    return lo\n"
MEDIUM = ("def search(f, lo, hi):\n    xs = [lo + (hi - lo) * i / 60 for i in range(61)]\n"
          "    return min(xs, key=f)\n")
RAISES = "raise RuntimeError('no search today')\n\n\ndef search(f, lo, hi):\n    return lo\n"


def reply(code: str) -> str:
    return f"Here is the improved program.\n```python\n{code}```\n"


def expected_score(code: str, tmp_path: Path) -> float:
    """The example's own evaluator, run here on our program, with its cascade rule."""
    ensure_openevolve()
    spec = importlib.util.spec_from_file_location("example_eval_cli", EXAMPLE / "evaluator.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path / f"p_{uuid.uuid4().hex}.py"
    path.write_text(code)
    stage1 = module.evaluate_stage1(str(path)).metrics["stage1_score"]
    if stage1 < 0.2:  # config.yaml: cascade_thresholds [0.2]
        return stage1
    return module.evaluate_stage2(str(path)).metrics["combined_score"]



def test_tasks_show_lists_what_was_found(capsys):
    assert main(["tasks", "--show", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "evaluator-in-sandbox -- the program can tamper with the evaluator" in out
    assert "functions       evaluate, evaluate_stage1, evaluate_stage2 (found in evaluator.py" in out
    assert "cascade: evaluate_stage1 -> evaluate_stage2; thresholds 0.2" in out
    assert "20 s per evaluate/stage call (evaluator.timeout)" in out
    assert "entry function  search()" in out and "from config.yaml prompt.system_message" in out
    assert "  evaluator.py  " in out and SYSTEM in out
    assert main(["tasks", "--show", str(EXAMPLE), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["trust"] == "evaluator-in-sandbox" and d["evaluation"] == "openevolve"
    assert d["directory"]["stages"] == ["evaluate_stage1", "evaluate_stage2"]
    assert d["directory"]["cascade_thresholds"] == [0.2] and d["timeout_s"] == 20.0
    assert [f["path"] for f in d["directory"]["files"]] == ["config.yaml", "evaluator.py",
                                                           "initial_program.py"]


@pytest.mark.parametrize("breaks", ["evaluator.py", "initial_program.py", "yaml"])
def test_bad_directory_is_one_line_exit_2_and_no_store(tmp_path, capsys, breaks):
    directory = tmp_path / "bad"
    shutil.copytree(EXAMPLE, directory)
    if breaks == "yaml":
        (directory / "config.yaml").write_text("evaluator: {timeout: [\n")
        message = "config.yaml is not valid YAML"
    else:
        (directory / breaks).unlink()
        message = f"looked for {breaks}; name yours with --"
    assert main(["tasks", "--show", str(directory)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    store = tmp_path / "s.sqlite"
    with LLMTestServer() as srv:
        code = main(["run", "--task", str(directory), "--budget", "2", "--params", "1e9",
                     "--base-url", srv.base_url, "--store", str(store)])
        assert len(srv.requests) == 0
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not store.exists()


def test_evaluate_cli_reports_trust_and_artifacts(tmp_path, capsys):
    program = tmp_path / "better.py"
    program.write_text(BETTER)
    assert main(["evaluate", "--task", str(EXAMPLE), str(program), "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["valid"] and row["score"] == expected_score(BETTER, tmp_path)
    assert row["trust"] == "evaluator-in-sandbox" and row["task"] == "openevolve_dir"
    assert row["artifacts"]["stage2"].startswith("worst: function")


def test_run_end_to_end_against_the_test_server(tmp_path, capsys):
    replies = tmp_path / "replies.json"
    programs = [BETTER, LAZY, MEDIUM, RAISES]
    replies.write_text(json.dumps([reply(p) for p in programs]))
    store = tmp_path / "s.sqlite"
    with server_process("--replies-file", str(replies), latency=0.0) as url:
        code = main(["run", "--task", str(EXAMPLE), "--budget", "4", "--depth", "4",
                     "--params", "1e9", "--base-url", url, "--max-in-flight", "1",
                     "--store", str(store), "--run-id", "oe", "--out", str(tmp_path / "out"),
                     "--json"])
    out = capsys.readouterr().out
    assert code == 0
    summary = json.loads(out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 4 and summary["status"] == "finished"  # exactly C
    assert summary["trust"] == "evaluator-in-sandbox" and summary["task"] == "openevolve_dir"
    assert rows(store, "SELECT count(*) n FROM calls WHERE counted = 1")[0]["n"] == 4
    run = rows(store, "SELECT task, task_kind, task_path, task_sha256 FROM runs")[0]
    assert run["task_kind"] == "directory" and run["task_path"] == str(EXAMPLE)
    children = rows(store, "SELECT code, score, valid, error, trust, artifacts_json "
                           "FROM programs WHERE call_id IS NOT NULL ORDER BY seq")
    assert len(children) == 4
    for child, program in zip(children, programs, strict=True):
        assert child["code"].strip() == program.strip()
        assert child["trust"] == "evaluator-in-sandbox"
    better, lazy, medium, raises = children
    assert better["valid"] and better["score"] == expected_score(BETTER, tmp_path)
    assert medium["valid"] and medium["score"] == expected_score(MEDIUM, tmp_path)
    assert lazy["valid"] and lazy["score"] == expected_score(LAZY, tmp_path) < 0.2
    assert "stage2" in json.loads(better["artifacts_json"])
    assert "stage2" not in json.loads(lazy["artifacts_json"])  # the cascade stopped it
    assert not raises["valid"] and raises["score"] == 0.0
    assert "RuntimeError: no search today" in raises["error"]
    assert summary["best_score"] == better["score"]
    assert "n = 150" in Path(summary["best_program"]).read_text()


def test_python_api_sends_the_config_system_message(tmp_path):
    with LLMTestServer([reply(BETTER)]) as srv:
        result = basevolve.run(task=str(EXAMPLE), budget=2, params=1e9, base_url=srv.base_url,
                               store=tmp_path / "api.sqlite", run_id="api", progress=False)
        systems = [r["messages"][0] for r in srv.requests]
    assert len(systems) == 2 and all(m == {"role": "system", "content": SYSTEM} for m in systems)
    assert result.calls_completed == 2 and result.task == "openevolve_dir"
    assert result.best_score == expected_score(BETTER, tmp_path)
    assert result.summary["trust"] == "evaluator-in-sandbox"



def test_resume_refuses_a_changed_directory(tmp_path, capsys):
    directory = tmp_path / "task"
    shutil.copytree(EXAMPLE, directory)
    store = tmp_path / "s.sqlite"
    with LLMTestServer([reply(MEDIUM)]) as srv:
        cfg = RunConfig(task=str(directory), budget=3, depth=3, base_url=srv.base_url,
                        run_id="r", max_in_flight=1, params=1e9)
        with pytest.raises(KeyboardInterrupt):
            start_run(cfg, store, progress=StopAfter(1))
        evaluator = directory / "evaluator.py"
        original = evaluator.read_bytes()
        evaluator.write_bytes(original.replace(b"10.0 * max(gap", b"1.0 * max(gap"))
        before, sent = store.read_bytes(), len(srv.requests)
        code = main(["run", "--resume", "r", "--store", str(store)])
        err = capsys.readouterr().err
        assert code == 2 and f"task directory {str(directory)!r} changed since run 'r'" in err
        assert len(err.strip().splitlines()) == 1 and "--allow-task-change" in err
        assert store.read_bytes() == before and len(srv.requests) == sent
        evaluator.write_bytes(original)  # the same files again: the resume goes on
        result = basevolve.resume("r", store=store, progress=False)  # (the Python API)
    assert result.calls_completed == 3 and result.summary["task_changes"] == 0
    assert result.resumed and result.task == "task"  # named after the copied directory


def test_sweep_and_analyze_a_task_directory(tmp_path, capsys):
    db = tmp_path / "sw.sqlite"
    with LLMTestServer([reply(BETTER), reply(MEDIUM)]) as srv:
        config = tmp_path / "sweep.toml"
        config.write_text(
            f'[sweep]\nname = "oe"\n\n[defaults]\ntask = "{EXAMPLE}"\nmodel = "test-model"\n'
            f'params = 1e9\nbase_url = "{srv.base_url}"\nseeds = 2\n\n'
            '[[grid]]\nbudget = 2\ndepth = [1, 2]\n')
        assert main(["sweep", str(config), "--store", str(db), "--json"]) == 0
        assert len(srv.requests) == 4 * 2  # 2 depths x 2 seeds, C = 2 each
    doc = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert doc["finished"] == 4 and doc["failed"] == []
    stored = rows(db, "SELECT DISTINCT task, task_kind, task_path FROM runs")
    assert stored == [{"task": "openevolve_dir", "task_kind": "directory",
                       "task_path": str(EXAMPLE)}]
    assert rows(db, "SELECT DISTINCT trust FROM programs") == [{"trust": "evaluator-in-sandbox"}]
    fast = ["--resamples", "50", "--shuffles", "50", "--gate-shuffles", "50"]
    assert main(["analyze", "--store", str(db), "--json", *fast]) == 0
    analysis = json.loads(capsys.readouterr().out)
    cells = [r for r in analysis["summary"] if r["task"] == "openevolve_dir"]
    assert len(cells) == 2 and all(r["n"] == 2 for r in cells)  # one per depth, 2 seeds
    assert all(0 < r["mean"] <= 1 for r in cells)
