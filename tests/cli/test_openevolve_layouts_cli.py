"""OpenEvolve task directories whose program is a folder or a prompt file (issue 31,
items 3, 4 and 11), end to end: ``basevolve run --task DIR`` against the test server (a
real process serving scripted replies), exactly C calls, a real SQLite store and the
real sandbox running the fixtures' own evaluators (tests/data/openevolve/).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from run_support import StopAfter, rows

import basevolve
from basevolve.cli import main
from basevolve.config import RunConfig
from basevolve.engine import start_run
from basevolve.program_files import unpack
from basevolve.prompts.files_reply import FORMAT_NOTE
from basevolve.tasks import load_task
from basevolve.tasks.openevolve_layouts import OpenEvolveFolderTask, OpenEvolvePromptTask
from basevolve.testing import LLMTestServer
from basevolve.testing.process import server_process

DATA = Path(__file__).resolve().parents[1] / "data" / "openevolve"
MIXED, PROMPT = DATA / "mixed_folder", DATA / "prompt_file"
SOLVER = (MIXED / "initial_program" / "solver.py").read_text()
BETTER_SOLVER = SOLVER.replace("for item in items:", "for item in sorted(items)[:2]:")



def run(tmp_path: Path, task: Path, replies: list[str], *extra: str) -> tuple[Path, dict]:
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(replies))
    store = tmp_path / "s.sqlite"
    with server_process("--replies-file", str(path), latency=0.0) as url:
        code = main(["run", "--task", str(task), "--budget", str(len(replies)), "--depth",
                     str(len(replies)), "--params", "1e9", "--base-url", url,
                     "--max-in-flight", "1", "--store", str(store), "--run-id", "r",
                     "--out", str(tmp_path / "out"), "--json", *extra])
    assert code == 0
    return store, json.loads(Path(tmp_path / "out" / "summary.json").read_text()) \
        if (tmp_path / "out" / "summary.json").exists() else {}


def children(store: Path) -> list[dict]:
    return rows(store, "SELECT code, score, valid, error, trust, metrics_json FROM programs "
                       "WHERE call_id IS NOT NULL ORDER BY seq")


def test_a_folder_program_runs_end_to_end(tmp_path, capsys):
    task = load_task(str(MIXED))
    assert isinstance(task, OpenEvolveFolderTask) and task.language == "mixed"
    assert set(unpack(task.initial_program)) == {"solver.py", "params.json", "lib/weights.py",
                                                 "lib/__init__.py"}
    rewrite = ("Two files change.\n# === FILE: solver.py ===\n```python\n" + BETTER_SOLVER +
               "```\n# === FILE: lib/weights.py ===\n```python\ndef weight(item):\n"
               "    return int(item)\n```\n")
    edit = ("# === FILE: solver.py ===\n<<<<<<< SEARCH\n    for item in sorted(items)[:2]:\n"
            "=======\n    for item in sorted(items)[1:]:\n>>>>>>> REPLACE\n"
            "# === FILE: lib/weights.py ===\n<<<<<<< SEARCH\n    return int(item)\n=======\n"
            "    return int(item)  # edited\n>>>>>>> REPLACE\n")
    hostile = "# === FILE: ../../../../tmp/owned.txt ===\n```\nowned\n```\n"
    store, _ = run(tmp_path, MIXED, [rewrite, edit, hostile])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 3 and summary["status"] == "finished"  # exactly C
    assert rows(store, "SELECT count(*) n FROM calls WHERE counted = 1")[0]["n"] == 3
    first, second, third = children(store)
    # the initial program scores 5/7 (greedy takes 5); sorted(items)[:2] = 3+4 = 7
    assert rows(store, "SELECT score FROM programs WHERE call_id IS NULL")[0]["score"] == \
        pytest.approx(5 / 7)
    files = unpack(first["code"])
    assert files["solver.py"] == BETTER_SOLVER and "int(item)" in files["lib/weights.py"]
    assert files["params.json"] == '{"items": [5, 4, 3], "capacity": 7}'  # kept as it was
    assert first["valid"] and first["score"] == 1.0 and first["trust"] == "evaluator-in-sandbox"
    assert json.loads(first["metrics_json"])["files"] == 4.0  # the evaluator got the folder
    # per-file SEARCH/REPLACE on the best (the first child): takes 4, then 5 does not fit
    edited = unpack(second["code"])
    assert "sorted(items)[1:]" in edited["solver.py"] and "# edited" in \
        edited["lib/weights.py"] and edited["params.json"] == files["params.json"]
    assert second["valid"] and second["score"] == pytest.approx(4 / 7)
    assert third["code"] is None and not third["valid"]
    assert "steps out of the program folder" in third["error"]
    assert not Path("/tmp/owned.txt").exists()
    prompt = json.loads(rows(store, "SELECT messages_json FROM calls ORDER BY seq")[0]
                        ["messages_json"])
    assert FORMAT_NOTE in prompt[0]["content"]
    assert "# === FILE: params.json === (no newline at end)" in prompt[1]["content"]
    best = Path(summary["best_program"])
    assert best.is_dir() and (best / "solver.py").read_text() == BETTER_SOLVER
    assert sorted(p.relative_to(best).as_posix() for p in best.rglob("*") if p.is_file()) == \
        ["lib/__init__.py", "lib/weights.py", "params.json", "solver.py"]


def test_a_prompt_file_runs_end_to_end(tmp_path, capsys):
    task = load_task(str(PROMPT))
    assert isinstance(task, OpenEvolvePromptTask) and task.artifact == "text"
    assert task.evaluation == "openevolve" and task.prompt_file == "initial_prompt.txt"
    replies = [
        "Better:\n<prompt>\nWhat is the sentiment of this review, positive or negative? "
        "Answer in one word.\n{input_text}\n</prompt>",
        "```\nThink step by step: is the sentiment positive or negative? One word.\n"
        "{input_text}\n```",
        "A prompt without delimiters.",
        "<prompt>\n" + "sentiment " * 60 + "{input_text}\n</prompt>",  # over max_code_length
        "<prompt>\nNo placeholder: sentiment, positive, one word.\n</prompt>",
    ]
    store, _ = run(tmp_path, PROMPT, replies)
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 5 and summary["eval_calls"] == 0
    assert rows(store, "SELECT count(*) n FROM calls WHERE counted = 1")[0]["n"] == 5
    initial = rows(store, "SELECT score, trust FROM programs WHERE call_id IS NULL")[0]
    assert initial == {"score": 0.25, "trust": "evaluator-in-sandbox"}  # "positive"
    a, b, none, long, unplaced = children(store)
    assert a["valid"] and a["score"] == 0.75 and a["code"].startswith("What is the sentiment")
    assert json.loads(a["metrics_json"])["name_ok"] == 1.0  # the file keeps its name
    assert b["valid"] and b["score"] == 1.0
    assert none["code"] is None and "no prompt template in the reply" in none["error"]
    assert long["code"] is None and "prompt too long" in long["error"]
    assert "max_code_length" in long["error"]
    assert unplaced["valid"] and unplaced["score"] == 0.0
    assert Path(summary["best_program"]).name == "best_prompt.txt"
    assert Path(summary["best_program"]).read_text().startswith("Think step by step")
    system = json.loads(rows(store, "SELECT messages_json FROM calls ORDER BY seq")[0]
                        ["messages_json"])[0]["content"]
    assert system.startswith("You are an expert prompt engineer. Revise the sentiment")
    assert system.endswith("inside <prompt> and </prompt> tags, and nothing else inside them.")


@pytest.mark.parametrize("breaks, message", [
    ("mixed_no_folder", "says language: \"mixed\" but there is no initial_program/ folder"),
    ("text_no_prompt", "says language: \"text\" but there is no initial_prompt.txt"),
    ("binary_in_folder", "initial_program/blob.bin is not UTF-8 text"),
    ("link_in_folder", "the file name"),
    ("folder_says_python", "initial_program/ is a folder, a program of several files"),
])
def test_bad_layouts_are_one_line_exit_2(tmp_path, capsys, breaks, message):
    directory = tmp_path / "task"
    if breaks == "text_no_prompt":
        shutil.copytree(PROMPT, directory)
        (directory / "initial_prompt.txt").unlink()
    else:
        shutil.copytree(MIXED, directory)
    if breaks == "mixed_no_folder":
        shutil.rmtree(directory / "initial_program")
    elif breaks == "binary_in_folder":
        (directory / "initial_program" / "blob.bin").write_bytes(b"\xff\x00\xfe")
    elif breaks == "link_in_folder":
        (directory / "initial_program" / "bad name.py").write_text("x = 1\n")
    elif breaks == "folder_says_python":
        (directory / "config.yaml").write_text('language: "python"\n')
    assert main(["tasks", "--show", str(directory)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_an_island_protocol_in_diff_mode_edits_files_per_file(tmp_path, capsys):
    edit = ("I change the loop and the weights.\n# === FILE: solver.py ===\n```\n"
            "<<<<<<< SEARCH\n    for item in items:\n=======\n"
            "    for item in sorted(items)[:2]:\n>>>>>>> REPLACE\n```\n"
            "# === FILE: lib/weights.py ===\n<<<<<<< SEARCH\n    return item\n=======\n"
            "    return item * 1\n>>>>>>> REPLACE\n")
    hostile = "# === FILE: /etc/passwd ===\n<<<<<<< SEARCH\nroot\n=======\nowned\n>>>>>>> REPLACE\n"
    store, _ = run(tmp_path, MIXED, [edit, hostile], "--protocol", "openevolve",
                   "--protocol-param", "mode=diff", "--protocol-param", "num_islands=1")
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["calls_completed"] == 2
    first, second = children(store)
    files = unpack(first["code"])
    assert files["solver.py"] == BETTER_SOLVER and files["lib/weights.py"].endswith("* 1\n")
    assert first["valid"] and first["score"] == 1.0
    assert second["code"] is None and "is absolute" in second["error"]
    user = json.loads(rows(store, "SELECT messages_json FROM calls ORDER BY seq")[0]
                      ["messages_json"])[1]["content"]
    assert "SEARCH" in user and "# === FILE: solver.py ===" in user


def test_export_writes_each_program_as_a_folder_of_its_files(tmp_path, capsys):
    rewrite = "# === FILE: solver.py ===\n```python\n" + BETTER_SOLVER + "```\n"
    store, _ = run(tmp_path, MIXED, [rewrite])
    capsys.readouterr()
    # a stored text that does not unpack (written by another tool) is skipped, never written
    con = sqlite3.connect(store)
    with con:
        con.execute("UPDATE programs SET code = ? WHERE call_id IS NOT NULL",
                    ("# === FILE: ../../escaped.txt ===\nowned\n",))
    con.close()
    out = tmp_path / "export"
    assert main(["export", "--store", str(store), "--out", str(out), "--json"]) == 0
    paths = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    initial = out / "program_files" / "r" / "1"
    assert str(initial) in paths and (initial / "solver.py").read_text() == SOLVER
    assert (initial / "params.json").read_text() == '{"items": [5, 4, 3], "capacity": 7}'
    assert (initial / "lib" / "weights.py").is_file()
    assert not (out / "program_files" / "r" / "2").exists()
    skipped = (out / "program_files" / "SKIPPED.txt").read_text()
    assert "program 2" in skipped and "steps out of the program folder" in skipped
    assert not list(tmp_path.rglob("escaped.txt"))


def test_evaluate_takes_a_program_folder_and_a_prompt_file(tmp_path, capsys):
    folder = tmp_path / "better"
    shutil.copytree(MIXED / "initial_program", folder)
    (folder / "solver.py").write_text(BETTER_SOLVER)
    assert main(["evaluate", "--task", str(MIXED), str(folder), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])  # one list
    assert row["score"] == 1.0 and row["metrics"]["files"] == 4.0
    prompt = tmp_path / "p.txt"
    prompt.write_text("Sentiment, positive or negative, in one word:\n{input_text}\n")
    assert main(["evaluate", "--task", str(PROMPT), str(prompt), "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])  # one list
    assert row["score"] == 0.75 and row["trust"] == "evaluator-in-sandbox"
    (folder / "link.py").symlink_to("/etc/hostname")
    assert main(["evaluate", "--task", str(MIXED), str(folder)]) == 2
    err = capsys.readouterr().err
    assert "program folder" in err and "symbolic link" in err and len(err.strip().splitlines()) == 1



def test_a_killed_folder_run_resumes_to_exactly_c(tmp_path):
    rewrite = "# === FILE: solver.py ===\n```python\n" + BETTER_SOLVER + "```\n"
    edit = ("# === FILE: lib/weights.py ===\n<<<<<<< SEARCH\n    return item\n=======\n"
            "    return item + 0\n>>>>>>> REPLACE\n")
    store = tmp_path / "s.sqlite"
    with LLMTestServer([rewrite, edit, edit]) as srv:
        cfg = RunConfig(task=str(MIXED), budget=3, depth=3, base_url=srv.base_url,
                        run_id="k", max_in_flight=1, params=1e9)
        with pytest.raises(KeyboardInterrupt):
            start_run(cfg, store, progress=StopAfter(1))
        result = basevolve.resume("k", store=store, progress=False)
    assert result.calls_completed == 3 and result.resumed
    assert rows(store, "SELECT count(*) n FROM calls WHERE counted = 1")[0]["n"] == 3
    codes = [r["code"] for r in children(store)]
    assert unpack(codes[0])["solver.py"] == BETTER_SOLVER
    assert all(c is None or unpack(c)["params.json"] for c in codes)
    assert result.best_score == 1.0
